/**
 * The reference binding's ledger (clearing-contract §4, §8; DESIGN "Money"): double entry in
 * integer micro-units. The database itself refuses what the contract forbids:
 * - an entry whose postings do not sum to zero (deferred constraint trigger, checked at commit);
 * - any UPDATE, DELETE or TRUNCATE of the journal (append-only, invariant 8);
 * - a transaction id used twice, at any door (primary key, §9), and a second reversal (unique);
 * - a hold drawn past its cap or below zero (check constraint, invariants 4 and 5).
 * Holder balances move in the same transaction as their postings, by trigger (invariant 9).
 * Machinery accounts (`external:*`, `platform:*`) keep no balance row: theirs is the sum of
 * their postings, so no hot row serializes every settlement.
 */
import type { Knex } from 'knex';

const statements = [
  `CREATE TABLE clearing_accounts (
     id text PRIMARY KEY,
     kind text NOT NULL CHECK (kind IN ('holder', 'external', 'platform')),
     balance bigint NOT NULL DEFAULT 0,
     created_at timestamptz NOT NULL DEFAULT now(),
     CHECK (kind <> 'holder' OR (id NOT LIKE 'external:%' AND id NOT LIKE 'platform:%'))
   )`,
  `CREATE TABLE clearing_agent_links (
     agent_key text PRIMARY KEY,
     account text NOT NULL REFERENCES clearing_accounts (id),
     created_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE TABLE clearing_transactions (
     txn_id text PRIMARY KEY,
     door text NOT NULL CHECK (door IN ('credit', 'settle', 'reverse', 'adjust', 'draw')),
     account text NOT NULL REFERENCES clearing_accounts (id),
     amount bigint NOT NULL,
     terms jsonb NOT NULL,
     reverses text UNIQUE REFERENCES clearing_transactions (txn_id),
     hold_id text,
     reason text,
     actor text,
     ref text,
     memo text,
     simulated boolean NOT NULL DEFAULT false,
     created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
     CHECK ((door = 'reverse') = (reverses IS NOT NULL))
   )`,
  `CREATE TABLE clearing_postings (
     id bigserial PRIMARY KEY,
     txn_id text NOT NULL REFERENCES clearing_transactions (txn_id),
     account text NOT NULL REFERENCES clearing_accounts (id),
     delta bigint NOT NULL,
     kind text NOT NULL
   )`,
  `CREATE INDEX clearing_postings_txn ON clearing_postings (txn_id)`,
  `CREATE INDEX clearing_postings_account ON clearing_postings (account, id)`,
  `CREATE TABLE clearing_holds (
     hold_id text PRIMARY KEY,
     account text NOT NULL REFERENCES clearing_accounts (id),
     amount bigint NOT NULL CHECK (amount > 0),
     drawn bigint NOT NULL DEFAULT 0 CHECK (drawn >= 0 AND drawn <= amount),
     status text NOT NULL CHECK (status IN ('open', 'released')),
     ref text,
     memo text,
     opened_at timestamptz NOT NULL DEFAULT clock_timestamp(),
     expires_at timestamptz NOT NULL,
     released_at timestamptz,
     release_reason text
   )`,
  `CREATE INDEX clearing_holds_open ON clearing_holds (account, expires_at) WHERE status = 'open'`,
  `CREATE INDEX clearing_holds_account ON clearing_holds (account, opened_at)`,
  `CREATE TABLE clearing_draw_lines (
     txn_id text NOT NULL REFERENCES clearing_transactions (txn_id),
     seq integer NOT NULL,
     hold_id text NOT NULL REFERENCES clearing_holds (hold_id),
     meter text NOT NULL,
     amount bigint NOT NULL CHECK (amount >= 0),
     asked bigint NOT NULL CHECK (asked >= amount),
     unit text,
     count bigint,
     per bigint,
     per_unit bigint,
     pass_through boolean NOT NULL DEFAULT false,
     upstream_receipt text,
     capped boolean NOT NULL,
     PRIMARY KEY (txn_id, seq)
   )`,
  `CREATE INDEX clearing_draw_lines_hold ON clearing_draw_lines (hold_id)`,
  `CREATE FUNCTION clearing_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     RAISE EXCEPTION 'the journal is append-only: % on % is refused', TG_OP, TG_TABLE_NAME;
   END $$`,
  `CREATE TRIGGER clearing_transactions_append_only BEFORE UPDATE OR DELETE ON clearing_transactions
     FOR EACH ROW EXECUTE FUNCTION clearing_refuse_change()`,
  `CREATE TRIGGER clearing_transactions_no_truncate BEFORE TRUNCATE ON clearing_transactions
     FOR EACH STATEMENT EXECUTE FUNCTION clearing_refuse_change()`,
  `CREATE TRIGGER clearing_postings_append_only BEFORE UPDATE OR DELETE ON clearing_postings
     FOR EACH ROW EXECUTE FUNCTION clearing_refuse_change()`,
  `CREATE TRIGGER clearing_postings_no_truncate BEFORE TRUNCATE ON clearing_postings
     FOR EACH STATEMENT EXECUTE FUNCTION clearing_refuse_change()`,
  `CREATE TRIGGER clearing_draw_lines_append_only BEFORE UPDATE OR DELETE ON clearing_draw_lines
     FOR EACH ROW EXECUTE FUNCTION clearing_refuse_change()`,
  `CREATE TRIGGER clearing_draw_lines_no_truncate BEFORE TRUNCATE ON clearing_draw_lines
     FOR EACH STATEMENT EXECUTE FUNCTION clearing_refuse_change()`,
  `CREATE FUNCTION clearing_check_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
   DECLARE total numeric;
   BEGIN
     SELECT sum(delta) INTO total FROM clearing_postings WHERE txn_id = NEW.txn_id;
     IF total <> 0 THEN
       RAISE EXCEPTION 'entry % does not balance: its postings sum to %', NEW.txn_id, total;
     END IF;
     RETURN NULL;
   END $$`,
  `CREATE CONSTRAINT TRIGGER clearing_postings_balanced AFTER INSERT ON clearing_postings
     DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION clearing_check_balanced()`,
  `CREATE FUNCTION clearing_apply_posting() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     UPDATE clearing_accounts SET balance = balance + NEW.delta WHERE id = NEW.account AND kind = 'holder';
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER clearing_postings_apply AFTER INSERT ON clearing_postings
     FOR EACH ROW EXECUTE FUNCTION clearing_apply_posting()`,
  `INSERT INTO clearing_accounts (id, kind) VALUES
     ('external:funding', 'external'), ('external:adjustments', 'external'), ('platform:fees', 'platform')`,
];

/** Creates the ledger's tables, triggers and machinery accounts. */
export async function up(knex: Knex): Promise<void> {
  for (const sql of statements) await knex.raw(sql);
}

/** Drops the ledger (for development only; the journal is otherwise never removed). */
export async function down(knex: Knex): Promise<void> {
  for (const table of ['clearing_draw_lines', 'clearing_holds', 'clearing_postings', 'clearing_transactions', 'clearing_agent_links', 'clearing_accounts']) {
    await knex.raw(`DROP TABLE IF EXISTS ${table} CASCADE`);
  }
  await knex.raw('DROP FUNCTION IF EXISTS clearing_refuse_change, clearing_check_balanced, clearing_apply_posting');
}
