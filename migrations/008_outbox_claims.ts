/**
 * Outbox claims (issue 12 §3, §4): several gateway processes on one Postgres post each
 * settlement intent once at a time. A poster claims pending intents by setting `claimed_until`
 * (a lease); an intent whose lease has passed (its claimer crashed or hung) is claimable again.
 * The receipt index serves the check that a hold's release waits for its call's settlements.
 */
import type { Knex } from 'knex';

const statements = [
  `ALTER TABLE gateway_settlement_intents ADD COLUMN claimed_until timestamptz`,
  `CREATE INDEX gateway_settlement_intents_pending_receipt ON gateway_settlement_intents (receipt) WHERE status = 'pending'`,
];

/** Adds the claim lease and the index above. */
export async function up(knex: Knex): Promise<void> {
  for (const sql of statements) await knex.raw(sql);
}

/** Removes them (development only). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS gateway_settlement_intents_pending_receipt');
  await knex.raw('ALTER TABLE gateway_settlement_intents DROP COLUMN IF EXISTS claimed_until');
}
