/**
 * Hardening of the gateway's state (issue 8 §1):
 * - settlement intents get a sequence, `seq`, the order they were written in: the outbox posts
 *   them in that order, so a call's settlement reaches the binding before its hold is released
 *   (clearing-contract §13). A timestamp cannot order them: two intents of one transaction share it.
 */
import type { Knex } from 'knex';

const statements = [
  `ALTER TABLE gateway_settlement_intents ADD COLUMN seq bigserial`,
  `CREATE INDEX gateway_settlement_intents_seq ON gateway_settlement_intents (seq) WHERE status = 'pending'`,
];

/** Adds the columns and indexes above. */
export async function up(knex: Knex): Promise<void> {
  for (const sql of statements) await knex.raw(sql);
}

/** Removes them (development only). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS gateway_settlement_intents_seq');
  await knex.raw('ALTER TABLE gateway_settlement_intents DROP COLUMN IF EXISTS seq');
}
