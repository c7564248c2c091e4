/**
 * The gateway's identity: a random id fixed when its database is created. Settlement
 * transaction ids and hold ids carry it (`settle:<gateway>:<receipt>`), so two gateways, or one
 * whose database was reset, settling with the same binding never reuse an id for different work
 * (clearing-contract §9: a transaction id is unique forever).
 */
import type { Knex } from 'knex';

/** Creates the one-row identity table with a random 12-hex-digit id. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE gateway_identity (id text PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now())`);
  await knex.raw(`INSERT INTO gateway_identity (id) VALUES (substr(md5(random()::text || clock_timestamp()::text), 1, 12))`);
}

/** Drops it (development only). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS gateway_identity');
}
