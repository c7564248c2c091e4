/**
 * Whether a failure means "the database cannot take this request now" (issue 27 §2): no host
 * accepts writes, the connection broke or was refused, the server is shutting down or starting,
 * or the session is read-only (a standby, a node the failover engine fences). Such a failure is
 * answered 503 `database_unavailable` and retried by the caller, never 500: it is not a bug, and
 * nothing was changed (a transaction that did not commit changed nothing).
 */

/** No host of the database URL accepts writes (`primary.ts`). */
export class DatabaseUnavailable extends Error {}

/** SQLSTATEs of an unavailable database: class 08 (connection exception) is matched by prefix. */
const UNAVAILABLE_STATES = new Set([
  '25006', // read_only_sql_transaction: a standby, or a node fenced read-only
  '57P01', // admin_shutdown: the server is stopping (a demoted primary)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up or in recovery
]);

/** Socket failures of a connection (Node's `code`). */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

/** Messages node-postgres and knex give a lost or timed-out connection (they carry no code; knex puts the statement before them). */
const LOST_CONNECTION = /(Connection terminated|Client has encountered a connection error|Client was closed|Knex: Timeout acquiring a connection|timeout exceeded when trying to connect|Query read timeout)/;

/** True when `error` (or its `cause`) says the database is unavailable rather than that the request or the code is wrong. */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let seen = error, depth = 0; seen && depth < 4; seen = (seen as { cause?: unknown }).cause, depth++) {
    if (seen instanceof DatabaseUnavailable) return true;
    const { code, message } = seen as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (UNAVAILABLE_STATES.has(code) || code.startsWith('08') || SOCKET_CODES.has(code))) return true;
    if (typeof message === 'string' && LOST_CONNECTION.test(message)) return true;
  }
  return false;
}
