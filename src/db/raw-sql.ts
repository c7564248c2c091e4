/**
 * Fixed SQL text on the driver itself, under knex's pool (issue 12 §1, §2): the hot paths of the
 * binding and the gateway skip knex's query builder and transaction machinery. A connection
 * from knex's pool is a `pg.Client` on Postgres and the PGlite instance on PGlite; both answer
 * `query(text, values)` with `$n` placeholders, so one SQL text serves both engines, and on
 * PGlite the statement waits for the one connection like any knex query (it never lands inside
 * someone else's transaction). On Postgres a hot statement is prepared under its name once per
 * connection, so the server parses and plans it once per connection instead of on every request.
 * A statement made of several data-modifying CTEs is one transaction by itself: whole or nothing.
 */
import type { Knex } from 'knex';
import pg from 'pg';
import { ATTR_DB_QUERY_SUMMARY, ATTR_DB_SYSTEM_NAME } from '@opentelemetry/semantic-conventions';
import { inSpan, SpanKind, tracingOn } from '../observe/trace.ts';

/** A fixed statement: its SQL text with `$n` placeholders and the name a Postgres connection prepares it under (unique per text). */
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
export function rawQuery(db: Knex, statement: FixedStatement, values: unknown[]): Promise<Record<string, any>[]> {
  // One statement, one transaction by itself: its span is a database client span (issue 22 §2), named by the statement.
  return inSpan(statement.name, { kind: SpanKind.CLIENT, attributes: { [ATTR_DB_SYSTEM_NAME]: 'postgresql', [ATTR_DB_QUERY_SUMMARY]: statement.name } }, () => runRaw(db, statement, values));
}

/** {@link rawQuery}'s work: the statement on a connection from `db`'s pool. */
async function runRaw(db: Knex, statement: FixedStatement, values: unknown[]): Promise<Record<string, any>[]> {
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

/**
 * A runner inside a knex transaction (a statement that must commit with other writes, or a cold
 * read sharing a statement with a hot path): each `$n` becomes knex's positional `?`, with its
 * value repeated wherever the text names it again. Knex reads every `?` as a binding and expands
 * an array value into a list, so a statement with a `?` operator or an array parameter runs on a
 * raw connection only.
 */
export const transactionRunner =
  (trx: Knex.Transaction): SqlRunner =>
  async (statement, values) => {
    const positional: unknown[] = [];
    const text = statement.text.replace(/\$(\d+)/g, (_match, n: string) => {
      positional.push(values[Number(n) - 1]);
      return '?';
    });
    return (await trx.raw(text, positional as Knex.RawBinding[])).rows;
  };

/** The runner for `db`: inside it when it is a transaction, else on a pooled raw connection. */
export const runnerOf = (db: Knex | Knex.Transaction): SqlRunner => (db.isTransaction ? transactionRunner(db as Knex.Transaction) : rawRunner(db));

/** A fixed statement written with named parameters, and how to order a parameter object into its `$n` values. */
export interface NamedStatement<P extends string> {
  statement: FixedStatement;
  /** The `$n` values of `params`, in order. Throws when a named parameter is missing (undefined; null is a value). */
  values(params: Record<P, unknown>): unknown[];
}

/**
 * Compiles SQL with `:name` parameters (lower case, digits, underscores; a `::type` cast is not
 * one) into a {@link FixedStatement} named `name`: each distinct parameter becomes one `$n`, so a
 * statement composed of several parts may name one value in many places. The text is not
 * parsed: it must not hold `:word` in a string literal or a comment (pass such a value as a
 * parameter); a name without a value is refused when the values are made.
 */
export function namedStatement<P extends string>(name: string, text: string): NamedStatement<P> {
  const order: string[] = [];
  const compiled = text.replace(/(?<![:\w]):([a-z_][a-z0-9_]*)/g, (_match, param: string) => {
    let index = order.indexOf(param);
    if (index < 0) index = order.push(param) - 1;
    return `$${index + 1}`;
  });
  return {
    statement: { name, text: compiled },
    values(params) {
      return order.map((param) => {
        const value = (params as Record<string, unknown>)[param];
        if (value === undefined) throw new Error(`statement ${name}: parameter :${param} has no value`);
        return value;
      });
    },
  };
}

/**
 * Puts every `db.transaction(work)` of `db` in a database client span (issue 22 §2), when tracing
 * is on as the database opens; off, `db` is left as it is (no cost).
 */
export function traceTransactions(db: Knex): void {
  if (!tracingOn()) return;
  const transaction = db.transaction.bind(db) as (...args: unknown[]) => unknown;
  const attributes = { [ATTR_DB_SYSTEM_NAME]: 'postgresql', [ATTR_DB_QUERY_SUMMARY]: 'transaction' };
  const traced = (...args: unknown[]) => (typeof args[0] === 'function' ? inSpan('transaction', { kind: SpanKind.CLIENT, attributes }, () => transaction(...args)) : transaction(...args));
  // Knex defines `transaction` read-only on the instance, but configurable.
  Object.defineProperty(db, 'transaction', { value: traced, configurable: true });
}

/**
 * Runs `statements` in order in one transaction on one raw connection taken from `db`'s pool:
 * one commit for all of them, whole or nothing. Answers each statement's rows, in order, once
 * the commit is done. Throws the first failure after rolling back (nothing was written), or the
 * commit's own failure (then whether it took effect is unknown, as for any statement whose
 * answer was lost). On Postgres the transaction is one round trip: the statements go as one
 * multi-statement query (which Postgres runs as one transaction), their values quoted as literals
 * by the driver ({@link inlineValues}); their text is then planned on each run, not prepared. On
 * PGlite a round trip is a function call: `BEGIN`, each statement, `COMMIT`.
 */
export async function rawTransaction(db: Knex, statements: ReadonlyArray<{ statement: FixedStatement; values: unknown[] }>): Promise<Record<string, any>[][]> {
  const connection = (await db.client.acquireConnection()) as RawConnection;
  try {
    if (connection instanceof pg.Client) {
      const text = statements.map(({ statement, values }) => inlineValues(connection, statement.text, values)).join(';\n');
      const answer = (await connection.query(text)) as unknown as pg.QueryResult | pg.QueryResult[];
      return (Array.isArray(answer) ? answer : [answer]).map((result) => result.rows);
    }
    await connection.query('BEGIN', []);
    const answers: Record<string, any>[][] = [];
    try {
      for (const { statement, values } of statements) answers.push((await connection.query(statement.text, values)).rows);
    } catch (error) {
      await connection.query('ROLLBACK', []).catch(() => undefined);
      throw error;
    }
    await connection.query('COMMIT', []);
    return answers;
  } finally {
    await db.client.releaseConnection(connection);
  }
}

/**
 * `text` with each `$n` replaced by its value as a quoted literal (`pg`'s `escapeLiteral`), or
 * NULL: for statements whose every parameter is cast (`$n::type`), as {@link namedStatement}s
 * are. Throws for a value that is not a string, number, boolean or null (an array or object
 * would need the driver's own conversion).
 */
function inlineValues(connection: pg.Client, text: string, values: unknown[]): string {
  return text.replace(/\$(\d+)/g, (_match, n: string) => {
    const value = values[Number(n) - 1];
    if (value === null || value === undefined) return 'NULL';
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') throw new TypeError(`$${n} is a ${typeof value}: only strings, numbers, booleans and null are inlined`);
    return connection.escapeLiteral(String(value));
  });
}
