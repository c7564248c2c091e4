/**
 * Fixed SQL text on the driver itself, under knex's pool (issue 12 §1): the hot doors skip knex's
 * query builder and transaction machinery. A connection from knex's pool is a `pg.Client` on
 * Postgres and the PGlite instance on PGlite; both answer `query(text, values)` with `$n`
 * placeholders, so one SQL text serves both engines, and on PGlite the statement waits for the
 * one connection like any knex query (it never lands inside someone else's transaction). On
 * Postgres a hot statement is prepared under its name once per connection, so the server parses
 * and plans it once per connection instead of on every request.
 */
import type { Knex } from 'knex';
import pg from 'pg';

/** A fixed statement of a hot door: its SQL text with `$n` placeholders and the name a Postgres connection prepares it under (unique per text). */
export interface FixedStatement {
  name: string;
  text: string;
}

/** Runs one fixed statement with its `$n` values and answers its rows. */
export type SqlRunner = (statement: FixedStatement, values: unknown[]) => Promise<Record<string, any>[]>;

/** A driver connection as knex's pool hands it out. */
interface RawConnection {
  query(text: string, values: unknown[]): Promise<{ rows: Record<string, any>[] }>;
}

/** Runs `statement` on a raw connection taken from `db`'s pool for this one statement (autocommit); prepared by name on Postgres. */
export async function rawQuery(db: Knex, statement: FixedStatement, values: unknown[]): Promise<Record<string, any>[]> {
  const connection = (await db.client.acquireConnection()) as RawConnection;
  try {
    if (connection instanceof pg.Client) return (await connection.query({ name: statement.name, text: statement.text, values })).rows;
    return (await connection.query(statement.text, values)).rows;
  } finally {
    await db.client.releaseConnection(connection);
  }
}

/** A runner on a pooled raw connection (outside any transaction). */
export const rawRunner =
  (db: Knex): SqlRunner =>
  (statement, values) =>
    rawQuery(db, statement, values);

/** A runner inside a knex transaction, for the cold reads that share a statement with a hot door (`$n` become knex's `?`). */
export const transactionRunner =
  (trx: Knex.Transaction): SqlRunner =>
  async (statement, values) =>
    (await trx.raw(statement.text.replace(/\$\d+/g, '?'), values as Knex.RawBinding[])).rows;
