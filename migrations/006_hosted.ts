/**
 * The hosted gateway's tables (gateway §7): accounts, API keys (SHA-256 only), idempotency keys
 * of calls, admin credits, approvals granted without running, GitHub sign-in states and one-time
 * codes, and `call_events`, the append-only record every measurement is computed from.
 * Money columns are integer micro-units of EUR.
 */
import type { Knex } from 'knex';

const statements = [
  `CREATE SEQUENCE hosted_admin_credit_seq`,
  `CREATE TABLE hosted_accounts (
     handle text PRIMARY KEY,
     email text UNIQUE,
     github_id bigint UNIQUE,
     github_login text,
     signup_credit_micros bigint NOT NULL DEFAULT 0 CHECK (signup_credit_micros >= 0),
     disabled_at timestamptz,
     created_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE TABLE hosted_keys (
     prefix text PRIMARY KEY,
     sha256 text NOT NULL UNIQUE,
     kind text NOT NULL CHECK (kind IN ('human', 'agent')),
     account text NOT NULL REFERENCES hosted_accounts (handle),
     mandate text REFERENCES gateway_mandates (id),
     ask_in_client boolean NOT NULL DEFAULT false,
     expires_at timestamptz,
     revoked_at timestamptz,
     created_at timestamptz NOT NULL DEFAULT now(),
     CHECK ((kind = 'agent') = (mandate IS NOT NULL))
   )`,
  `CREATE INDEX hosted_keys_account ON hosted_keys (account)`,
  `CREATE TABLE hosted_idempotency (
     key_prefix text NOT NULL REFERENCES hosted_keys (prefix),
     idempotency_key text NOT NULL,
     request_sha256 text NOT NULL,
     receipt text NOT NULL,
     status text NOT NULL CHECK (status IN ('running', 'done', 'interrupted')),
     http integer,
     created_at timestamptz NOT NULL DEFAULT now(),
     PRIMARY KEY (key_prefix, idempotency_key)
   )`,
  `CREATE TABLE hosted_admin_credits (
     id text PRIMARY KEY,
     account text NOT NULL REFERENCES hosted_accounts (handle),
     amount_micros bigint NOT NULL CHECK (amount_micros > 0),
     created_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE TABLE hosted_approval_grants (
     approval text PRIMARY KEY REFERENCES gateway_approvals (id),
     used_at timestamptz,
     created_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE TABLE hosted_login_states (
     state_sha256 text PRIMARY KEY,
     expires_at timestamptz NOT NULL,
     used_at timestamptz
   )`,
  `CREATE TABLE hosted_login_codes (
     code_sha256 text PRIMARY KEY,
     account text NOT NULL REFERENCES hosted_accounts (handle),
     new_account boolean NOT NULL,
     expires_at timestamptz NOT NULL,
     used_at timestamptz
   )`,
  `CREATE TABLE call_events (
     id bigserial PRIMARY KEY,
     receipt text NOT NULL UNIQUE,
     agent text,
     status text NOT NULL,
     error text,
     latency_ms integer NOT NULL,
     cost_micros bigint NOT NULL CHECK (cost_micros >= 0),
     delegated boolean NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE FUNCTION call_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN RAISE EXCEPTION 'call_events is append-only'; END $$`,
  `CREATE TRIGGER call_events_append_only BEFORE UPDATE OR DELETE ON call_events
     FOR EACH ROW EXECUTE FUNCTION call_events_append_only()`,
];

/** Creates the hosted tables. */
export async function up(knex: Knex): Promise<void> {
  for (const sql of statements) await knex.raw(sql);
}

/** Drops them (development only). */
export async function down(knex: Knex): Promise<void> {
  for (const table of ['call_events', 'hosted_login_codes', 'hosted_login_states', 'hosted_approval_grants', 'hosted_admin_credits', 'hosted_idempotency', 'hosted_keys', 'hosted_accounts']) {
    await knex.raw(`DROP TABLE IF EXISTS ${table} CASCADE`);
  }
  await knex.raw('DROP FUNCTION IF EXISTS call_events_append_only()');
  await knex.raw('DROP SEQUENCE IF EXISTS hosted_admin_credit_seq');
}
