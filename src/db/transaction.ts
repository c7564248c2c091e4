/**
 * A transaction that lost a race is run again (the reference binding's invariant 9, issue 27 §2):
 * a concurrent first use of the same identifier surfaces as a unique violation (`23505`), and two
 * transactions that took locks in different orders as a deadlock (`40P01`, one of them chosen by
 * the server to fail). Either changed nothing; the work is run once more and finds the other's
 * rows. Bound: {@link TRANSACTION_ATTEMPTS} attempts; the last failure is thrown.
 */
import type { Knex } from 'knex';

/** Attempts of one transaction that loses races. */
export const TRANSACTION_ATTEMPTS = 3;

/** SQLSTATEs of a lost race: unique violation, deadlock detected. */
const RACE_STATES = new Set(['23505', '40P01']);

/** Runs `work` in one database transaction, whole or not at all, again when it lost a race (see the module comment). */
export async function inTransaction<T>(db: Knex, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction(work);
    } catch (error) {
      if (attempt < TRANSACTION_ATTEMPTS && RACE_STATES.has((error as { code?: string }).code ?? '')) continue;
      throw error;
    }
  }
}
