/**
 * Publishing and moderation (gateway §7 "Publishing agents", "Moderation"). A published version
 * is a `gateway_agents` row (`published` true, `source` the author's handle) and a
 * `hosted_publications` row saying who published it, whether it is `proprietary`, and when and
 * why it was yanked. The database itself keeps the two promises of §7:
 * - versions are immutable and a number is never freed: a published `gateway_agents` row can
 *   neither be deleted nor changed, except `listed` going from true to false (a yank);
 * - the moderation log is append-only: `hosted_moderation_log` refuses UPDATE and DELETE.
 */
import type { Knex } from 'knex';

const statements = [
  `CREATE TABLE hosted_publications (
     id text NOT NULL,
     version text NOT NULL,
     account text NOT NULL REFERENCES hosted_accounts (handle),
     proprietary boolean NOT NULL,
     published_at timestamptz NOT NULL DEFAULT now(),
     yanked_at timestamptz,
     yanked_by text CHECK (yanked_by IN ('author', 'operator')),
     yank_reason text,
     PRIMARY KEY (id, version),
     FOREIGN KEY (id, version) REFERENCES gateway_agents (id, version),
     CHECK ((yanked_at IS NULL) = (yanked_by IS NULL))
   )`,
  `CREATE INDEX hosted_publications_account ON hosted_publications (account)`,
  `CREATE FUNCTION gateway_agents_published_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     IF TG_OP = 'DELETE' THEN
       RAISE EXCEPTION 'published version %@% can never be deleted: its number is never freed', OLD.id, OLD.version;
     END IF;
     IF NEW.id <> OLD.id OR NEW.version <> OLD.version OR NEW.manifest::text <> OLD.manifest::text
        OR NEW.source <> OLD.source OR NOT NEW.published OR (NEW.listed AND NOT OLD.listed) THEN
       RAISE EXCEPTION 'published version %@% is immutable: only a yank (listed to false) may change it', OLD.id, OLD.version;
     END IF;
     RETURN NEW;
   END $$`,
  `CREATE TRIGGER gateway_agents_published_immutable BEFORE UPDATE OR DELETE ON gateway_agents
     FOR EACH ROW WHEN (OLD.published) EXECUTE FUNCTION gateway_agents_published_immutable()`,
  // Earnings read the posted settlements an author received (`src/hosted/earnings.ts`).
  `CREATE INDEX gateway_settlement_intents_owner ON gateway_settlement_intents ((body->>'owner'), receipt)
     WHERE operation = 'settle' AND status = 'posted'`,
  `CREATE TABLE hosted_moderation_log (
     id bigserial PRIMARY KEY,
     action text NOT NULL CHECK (action IN ('disable_account', 'yank_agent')),
     target text NOT NULL,
     reason text NOT NULL CHECK (length(reason) BETWEEN 1 AND 1000),
     detail jsonb NOT NULL DEFAULT '{}'::jsonb,
     created_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE FUNCTION hosted_moderation_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN RAISE EXCEPTION 'hosted_moderation_log is append-only'; END $$`,
  `CREATE TRIGGER hosted_moderation_log_append_only BEFORE UPDATE OR DELETE ON hosted_moderation_log
     FOR EACH ROW EXECUTE FUNCTION hosted_moderation_log_append_only()`,
  `CREATE TRIGGER hosted_moderation_log_no_truncate BEFORE TRUNCATE ON hosted_moderation_log
     FOR EACH STATEMENT EXECUTE FUNCTION hosted_moderation_log_append_only()`,
];

/** Creates the publishing and moderation tables and their triggers. */
export async function up(knex: Knex): Promise<void> {
  for (const sql of statements) await knex.raw(sql);
}

/** Drops them (development only). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS hosted_moderation_log CASCADE');
  await knex.raw('DROP TABLE IF EXISTS hosted_publications CASCADE');
  await knex.raw('DROP INDEX IF EXISTS gateway_settlement_intents_owner');
  await knex.raw('DROP TRIGGER IF EXISTS gateway_agents_published_immutable ON gateway_agents');
  await knex.raw('DROP FUNCTION IF EXISTS gateway_agents_published_immutable()');
  await knex.raw('DROP FUNCTION IF EXISTS hosted_moderation_log_append_only()');
}
