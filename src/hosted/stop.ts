/**
 * "If a write fails, the process stops" (gateway §7): a request that fails because the database
 * failed (it cannot be reached, refuses connections, ran out of resources, or knex could not get
 * a connection) stops the hosted gateway, so nothing answers from a state the database does not
 * hold; the supervisor (Docker, the platform) starts it again, and start-up closes what was in
 * flight (§7 "Restarts").
 */

/** PostgreSQL error classes that mean the database itself failed: connection (08), resources (53), operator intervention (57), system (58), internal (XX). */
const FAILED_CLASSES = ['08', '53', '57', '58', 'XX'];

/** Node socket errors of a lost database connection. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND']);

/** Whether `error` is the database failing, not a refusal of one statement (a constraint, a bad value). */
export function isDatabaseFailure(error: unknown): boolean {
  if (error === null || typeof error !== 'object') return false;
  const { code, name, message } = error as { code?: unknown; name?: unknown; message?: unknown };
  if (typeof code === 'string' && (SOCKET_CODES.has(code) || (code.length === 5 && FAILED_CLASSES.includes(code.slice(0, 2))))) return true;
  if (name === 'KnexTimeoutError') return true;
  return typeof message === 'string' && /Unable to acquire a connection|Connection terminated|PGlite is closed/i.test(message);
}
