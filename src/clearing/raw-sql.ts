/**
 * Fixed SQL text on the driver itself, under knex's pool (issue 12 §1): the hot doors skip knex's
 * query builder and transaction machinery. A connection from knex's pool is a `pg.Client` on
 * Postgres and the PGlite instance on PGlite; both answer `query(text, values)` with `$n`
 * placeholders, so one SQL text serves both engines, and on PGlite the statement waits for the
 * one connection like any knex query (it never lands inside someone else's transaction).
 */
import type { Knex } from 'knex';

/** Runs one SQL statement with `$n` placeholders and answers its rows. */
export type SqlRunner = (text: string, values: unknown[]) => Promise<Record<string, any>[]>;

/** A driver connection as knex's pool hands it out. */
interface RawConnection {
  query(text: string, values: unknown[]): Promise<{ rows: Record<string, any>[] }>;
}

/** Runs `text` on a raw connection taken from `db`'s pool for this one statement (autocommit). */
export async function rawQuery(db: Knex, text: string, values: unknown[]): Promise<Record<string, any>[]> {
  const connection = (await db.client.acquireConnection()) as RawConnection;
  try {
    return (await connection.query(text, values)).rows;
  } finally {
    await db.client.releaseConnection(connection);
  }
}

/** A runner on a pooled raw connection (outside any transaction). */
export const rawRunner =
  (db: Knex): SqlRunner =>
  (text, values) =>
    rawQuery(db, text, values);

/** A runner inside a knex transaction, for the cold reads that share SQL text with a hot door (`$n` become knex's `?`). */
export const transactionRunner =
  (trx: Knex.Transaction): SqlRunner =>
  async (text, values) =>
    (await trx.raw(text.replace(/\$\d+/g, '?'), values as Knex.RawBinding[])).rows;
