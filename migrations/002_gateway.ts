/**
 * The gateway's state (gateway §1-§5, §7 "Restarts"; clearing-contract §13), all in the database
 * so a restart or a second process sees the same truth:
 * - agents: every listed manifest version, as loaded or published;
 * - mandates (root and derived sub-mandates) and their budget reservations: a call's worst case
 *   is a row here before it runs, under a lock on the mandate row, so parallel calls, even from
 *   two processes, cannot overrun a budget;
 * - receipts (one per request), approvals (with the held input until it is used or rejected),
 *   and settlement intents (the outbox: written with the receipt, posted afterwards).
 * Money columns are integer micro-units (`_micros`) of the mandate's currency.
 */
import type { Knex } from 'knex';

const statements = [
  `CREATE SEQUENCE gateway_receipt_seq`,
  `CREATE SEQUENCE gateway_approval_seq`,
  `CREATE TABLE gateway_agents (
     id text NOT NULL,
     version text NOT NULL,
     manifest jsonb NOT NULL,
     source text NOT NULL,
     published boolean NOT NULL DEFAULT false,
     listed boolean NOT NULL DEFAULT true,
     created_at timestamptz NOT NULL DEFAULT now(),
     PRIMARY KEY (id, version)
   )`,
  `CREATE TABLE gateway_agent_stats (
     id text PRIMARY KEY,
     runs bigint NOT NULL DEFAULT 0,
     successes bigint NOT NULL DEFAULT 0
   )`,
  `CREATE TABLE gateway_mandates (
     id text PRIMARY KEY,
     document jsonb NOT NULL,
     parent text REFERENCES gateway_mandates (id),
     payer text NOT NULL,
     currency text NOT NULL,
     total_micros bigint NOT NULL CHECK (total_micros >= 0),
     created_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE TABLE gateway_reservations (
     receipt text PRIMARY KEY,
     mandate text NOT NULL REFERENCES gateway_mandates (id),
     worst_case_micros bigint NOT NULL CHECK (worst_case_micros >= 0),
     spent_micros bigint NOT NULL DEFAULT 0 CHECK (spent_micros >= 0),
     status text NOT NULL CHECK (status IN ('open', 'settled', 'released')),
     created_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE INDEX gateway_reservations_mandate ON gateway_reservations (mandate, status)`,
  `CREATE TABLE gateway_receipts (
     id text PRIMARY KEY,
     parent text REFERENCES gateway_receipts (id),
     root_mandate text NOT NULL,
     status text NOT NULL,
     document jsonb NOT NULL,
     hold_id text,
     created_at timestamptz NOT NULL DEFAULT clock_timestamp()
   )`,
  `CREATE INDEX gateway_receipts_parent ON gateway_receipts (parent)`,
  `CREATE INDEX gateway_receipts_root ON gateway_receipts (root_mandate, created_at)`,
  `CREATE TABLE gateway_approvals (
     id text PRIMARY KEY,
     status text NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
     mandate text NOT NULL REFERENCES gateway_mandates (id),
     agent text NOT NULL,
     input jsonb,
     input_sha256 text NOT NULL,
     max_cost_micros bigint,
     worst_case_micros bigint NOT NULL,
     reason text NOT NULL,
     receipt text NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now(),
     expires_at timestamptz NOT NULL,
     decided_at timestamptz
   )`,
  `CREATE TABLE gateway_settlement_intents (
     txn_id text PRIMARY KEY,
     receipt text NOT NULL REFERENCES gateway_receipts (id),
     operation text NOT NULL CHECK (operation IN ('settle', 'release-hold')),
     body jsonb NOT NULL,
     status text NOT NULL CHECK (status IN ('pending', 'posted', 'abandoned')),
     attempts integer NOT NULL DEFAULT 0,
     last_error text,
     next_attempt_at timestamptz,
     created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
     posted_at timestamptz
   )`,
  `CREATE INDEX gateway_settlement_intents_due ON gateway_settlement_intents (next_attempt_at) WHERE status = 'pending'`,
];

/** Creates the gateway's tables. */
export async function up(knex: Knex): Promise<void> {
  for (const sql of statements) await knex.raw(sql);
}

/** Drops the gateway's tables (development only). */
export async function down(knex: Knex): Promise<void> {
  for (const table of ['gateway_settlement_intents', 'gateway_approvals', 'gateway_receipts', 'gateway_reservations', 'gateway_mandates', 'gateway_agent_stats', 'gateway_agents']) {
    await knex.raw(`DROP TABLE IF EXISTS ${table} CASCADE`);
  }
  await knex.raw('DROP SEQUENCE IF EXISTS gateway_receipt_seq, gateway_approval_seq');
}
