/**
 * Running budget figures on the mandate row (gateway §1 "Reserve", issue 12 §2): what a mandate
 * has reserved (the worst cases of its open reservations) and spent (what its settled ones
 * spent), in micro-units, moved in the same transactions that open and close its reservations.
 * Reserving is then one conditional update of the mandate row instead of a sum over every
 * reservation the mandate ever had, which grew with each call. Backfilled from the reservations.
 */
import type { Knex } from 'knex';

const statements = [
  `ALTER TABLE gateway_mandates ADD COLUMN reserved_micros bigint NOT NULL DEFAULT 0 CHECK (reserved_micros >= 0)`,
  `ALTER TABLE gateway_mandates ADD COLUMN spent_micros bigint NOT NULL DEFAULT 0 CHECK (spent_micros >= 0)`,
  `UPDATE gateway_mandates m SET
     reserved_micros = f.reserved_micros,
     spent_micros = f.spent_micros
   FROM (SELECT mandate,
                coalesce(sum(CASE WHEN status = 'open' THEN worst_case_micros ELSE 0 END), 0)::bigint AS reserved_micros,
                coalesce(sum(CASE WHEN status = 'settled' THEN spent_micros ELSE 0 END), 0)::bigint AS spent_micros
           FROM gateway_reservations GROUP BY mandate) AS f
   WHERE m.id = f.mandate`,
];

/** Adds the two running figures and fills them in from the reservations. */
export async function up(knex: Knex): Promise<void> {
  for (const sql of statements) await knex.raw(sql);
}

/** Removes them (development only): the reservations still hold every figure. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE gateway_mandates DROP COLUMN IF EXISTS spent_micros');
  await knex.raw('ALTER TABLE gateway_mandates DROP COLUMN IF EXISTS reserved_micros');
}
