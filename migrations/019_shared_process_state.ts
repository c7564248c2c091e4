/**
 * What several gateway processes on one database must share that used to live in one process's
 * memory (issue 27 §1, "any process serves any request"):
 * - `hosted_rate_limits`: the rate-limit counters of the hosted gateway (gateway §7 "Limits and
 *   platform rules"), one row per limiter and key, in the shape rate-limiter-flexible's
 *   `RateLimiterPostgres` reads and writes (`key` is `<limiter>:<key>`, `points` consumed in the
 *   window, `expire` the window's end in epoch milliseconds), created here rather than by the
 *   library at run time so the schema is the migrations' alone;
 * - `gateway_approval_answers`: the answer `POST /v0/approvals/{id}` gave the approver (the
 *   approved call's answer or the rejected approval, as JSON text), so a `GET
 *   /v0/approvals/{id}?wait_s=` on another process returns it too; kept 10 minutes, at most
 *   1,000 rows (pruned by the gateway).
 * Both are UNLOGGED: never written to the WAL, so never copied to a standby, emptied after a
 * crash of the server, and left out of backups: counters and short-lived answers, not records.
 */
import type { Knex } from 'knex';

const statements = [
  `CREATE UNLOGGED TABLE hosted_rate_limits (
     key varchar(255) PRIMARY KEY,
     points integer NOT NULL DEFAULT 0,
     expire bigint
   )`,
  `CREATE UNLOGGED TABLE gateway_approval_answers (
     approval text PRIMARY KEY,
     body text NOT NULL,
     decided_at timestamptz NOT NULL DEFAULT clock_timestamp()
   )`,
  `CREATE INDEX gateway_approval_answers_age ON gateway_approval_answers (decided_at)`,
];

/** Creates both tables. */
export async function up(knex: Knex): Promise<void> {
  for (const sql of statements) await knex.raw(sql);
}

/** Drops both tables. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS gateway_approval_answers');
  await knex.raw('DROP TABLE IF EXISTS hosted_rate_limits');
}
