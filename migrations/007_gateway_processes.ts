/**
 * Several gateway processes on one database (issue 12 §4, gateway §7 "Restarts"):
 * - `gateway_processes`: one lease row per running process (`id` from a sequence), renewed by a
 *   heartbeat until `expires_at`; a process whose lease expired, or on Postgres whose session
 *   advisory lock (`src/gateway/processes.ts`) is gone (the server releases it when the
 *   process's connection dies, e.g. after `kill -9`), is dead, and only then may another process
 *   close its calls;
 * - `gateway_receipts.process`: the process that runs a call (null for receipts written before
 *   this migration and for finished ones, which no process owns);
 * - `hosted_idempotency.process`: the process that runs an idempotent call, so a restart marks
 *   interrupted only the claims of dead processes.
 */
import type { Knex } from 'knex';

const statements = [
  `CREATE SEQUENCE gateway_process_seq`,
  `CREATE TABLE gateway_processes (
     id bigint PRIMARY KEY,
     host text NOT NULL,
     pid integer NOT NULL,
     started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
     heartbeat_at timestamptz NOT NULL DEFAULT clock_timestamp(),
     expires_at timestamptz NOT NULL
   )`,
  `ALTER TABLE gateway_receipts ADD COLUMN process bigint`,
  `CREATE INDEX gateway_receipts_running ON gateway_receipts (process) WHERE status = 'running'`,
  `CREATE INDEX gateway_receipts_page ON gateway_receipts (created_at DESC, id DESC) WHERE parent IS NULL`,
  `ALTER TABLE hosted_idempotency ADD COLUMN process bigint`,
];

/** Creates the lease table and the owner columns. */
export async function up(knex: Knex): Promise<void> {
  for (const sql of statements) await knex.raw(sql);
}

/** Drops them (development only). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE hosted_idempotency DROP COLUMN IF EXISTS process');
  await knex.raw('DROP INDEX IF EXISTS gateway_receipts_page');
  await knex.raw('DROP INDEX IF EXISTS gateway_receipts_running');
  await knex.raw('ALTER TABLE gateway_receipts DROP COLUMN IF EXISTS process');
  await knex.raw('DROP TABLE IF EXISTS gateway_processes');
  await knex.raw('DROP SEQUENCE IF EXISTS gateway_process_seq');
}
