/**
 * The database: PostgreSQL through knex. PGlite (an embedded PostgreSQL) in a directory by
 * default, a real server when `DATABASE_URL` is set. The same migrations (`migrations/`) run on
 * both. This module is also the one place where driver differences are smoothed over
 * (TOOLCHAIN "knex + PGlite traps"): bigint columns come back as JS integers from both.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import knexPkg, { type Knex } from 'knex';
import pg from 'pg';
import ClientPgLite from 'knex-pglite';
import lockfile from 'proper-lockfile';
import { migrationSource } from '../../migrations/index.ts';
import { traceTransactions } from './raw-sql.ts';
import { connectThroughPrimary, parseHosts, PrimaryConnector } from './primary.ts';
import { drawIdentity, seedFromTemplate, TEMPLATE_ROOT } from './template.ts';

const { knex } = knexPkg;

/** Where the data lives: a PostgreSQL URL, a PGlite directory, or PGlite in memory (tests). */
export type DatabaseTarget = { url: string } | { dir: string } | { memory: true };

/** An open database: the knex instance and how to close it (and release the directory lock). */
export interface Database {
  knex: Knex;
  /** `postgres` for a server, `pglite` for the embedded engine (which serializes all transactions). */
  engine: 'postgres' | 'pglite';
  /**
   * Why the database cannot take writes now (no host accepts writes: each host's answer), or null
   * when it can: the readiness a health endpoint reports (issue 27 §2). On Postgres a connection
   * of its own, outside the pool (a busy pool is no failure), bounded by {@link READINESS_TIMEOUT_MS}
   * per host; PGlite is in this process and always null.
   */
  unwritable(): Promise<string | null>;
  close(): Promise<void>;
}

/** How long a readiness check gives each database host to connect and answer, in milliseconds (a balancer's check waits about this long). */
export const READINESS_TIMEOUT_MS = 2_000;

/** PostgreSQL int8 as a JS number; refuses a value outside the safe integer range rather than rounding it. */
function parseInt8(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new Error(`integer ${text} is outside the exact range of a JS number`);
  return value;
}
pg.types.setTypeParser(pg.types.builtins.INT8, parseInt8);

/**
 * Checks a PostgreSQL URL: only `postgres://` and `postgresql://` with at least one host; several
 * hosts (`h1:p1,h2:p2`, as libpq and `pg_autoctl show uri` write them) are accepted
 * (`primary.ts`). Throws an Error whose one-line message names the variable, what is wrong, and
 * shows the URL without its password.
 */
export function checkDatabaseUrl(url: string, name = 'DATABASE_URL'): string {
  // Another scheme needs no more words than the rule; a postgres URL that breaks it says how.
  let fault = '';
  try {
    const { hosts } = parseHosts(url);
    if (hosts.every((host) => host.host)) return url;
    fault = ' (a host is empty)';
  } catch (error) {
    if (/^postgres(ql)?:\/\//.test(url)) fault = ` (${(error as Error).message})`;
  }
  throw new Error(`${name} must be a postgres:// or postgresql:// URL with a host, e.g. postgres://holon@127.0.0.1:5432/holon${fault}; got ${JSON.stringify(redactedUrl(url))}`);
}

/** A database URL fit for a message: its password replaced by `***`, at most 200 characters. */
export function redactedUrl(url: string): string {
  return url.replace(/^([a-z]+:\/\/[^:@/?#]*):[^@/?#]*@/i, '$1:***@').slice(0, 200);
}

/**
 * knex's warnings, less its "Acquire connection error" (a stack trace on stderr): that error
 * also reaches the caller, which reports it in one line (a bad `DATABASE_URL`, a server down);
 * and less its "Connection Error" of each broken connection its pool drops (after a failover,
 * one per pooled connection: dropping them is the way back to the new primary).
 */
function quietAcquireErrors(message: unknown): void {
  if (typeof message === 'string' && (message.startsWith('Acquire connection error') || message.startsWith('Connection Error: '))) return;
  console.warn(message);
}

/** The target named by the environment: `DATABASE_URL` when set (checked by `checkDatabaseUrl`), else the PGlite directory `dir`. */
export function targetFromEnv(dir: string): DatabaseTarget {
  const url = process.env.DATABASE_URL;
  return url ? { url: checkDatabaseUrl(url) } : { dir };
}

/**
 * Releases a PGlite directory lock. A lock proper-lockfile has already declared compromised (it
 * warned) counts as released, so closing never fails on it (`ERELEASED`).
 */
async function releaseLock(release: (() => Promise<void>) | null): Promise<void> {
  try {
    await release?.();
  } catch (error) {
    if ((error as { code?: string }).code !== 'ERELEASED') throw error;
  }
}

/** The advisory lock migrating processes take in turn on Postgres (`pg_advisory_lock(bigint)`): "holonmig" in ASCII. */
const MIGRATION_LOCK = '7525352728209221991';

/** How long a starting process waits for another one's migrations, at most, in seconds (default of `openDatabase`'s `migrationWaitS`). */
export const MIGRATION_WAIT_S = 300;

/**
 * Brings a Postgres schema up to date while holding {@link MIGRATION_LOCK}, so processes starting
 * at once on one database (issue 12 §4) migrate one after another: the first runs what is
 * missing, the others then find nothing to do. knex's own lock row cannot serve, since creating
 * its tables on an empty database is itself the race. Throws naming `wait_s` (seconds) when the
 * lock is not had within it, or the failing migration's error.
 */
async function migrateExclusively(db: Knex, wait_s: number): Promise<void> {
  const connection = (await db.client.acquireConnection()) as { query(text: string, values?: unknown[]): Promise<unknown> };
  try {
    await connection.query(`SET lock_timeout = '${Math.ceil(wait_s * 1000)}ms'`);
    try {
      await connection.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    } catch (error) {
      if ((error as { code?: string }).code !== '55P03') throw error;
      throw new Error(`another process has been migrating this database for more than ${wait_s} s (the bound on waiting for it): is it stuck?`);
    } finally {
      await connection.query('RESET lock_timeout');
    }
    try {
      await db.migrate.latest({ migrationSource });
    } finally {
      await connection.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  } finally {
    await db.client.releaseConnection(connection);
  }
}

/**
 * Whether knex's table already records every migration of {@link migrationSource}, in order: then
 * an existing database needs none, and its start skips knex's migrate (about a dozen statements
 * and a write transaction, over a slow catalog view; issue 21 §4). No table yet (a new database)
 * or any other list answers false, and knex migrates (or refuses) as before. Safe without the
 * migration lock: knex records a migration in the transaction that runs it.
 */
async function migrationsCurrent(db: Knex): Promise<boolean> {
  const names = await migrationSource.getMigrations([]);
  let done: Array<{ name: string }>;
  try {
    done = await db('knex_migrations').select('name').orderBy('id');
  } catch (error) {
    // undefined_table: a database never migrated.
    if ((error as { code?: string }).code === '42P01') return false;
    throw error;
  }
  return done.length === names.length && done.every((row, index) => row.name === migrationSource.getMigrationName(names[index]));
}

/**
 * Opens the database and brings its schema up to date.
 * A PGlite directory is locked for this process (nothing else locks it, and two processes on one
 * directory lose writes); a second opener fails with "already being used by another process".
 * On Postgres `poolMax` (default 10) is at least 2: migrating holds one connection for its lock
 * (`migrateExclusively`) while knex migrates on another; a smaller one throws. `migrationWaitS`
 * bounds the wait for another process's migrations (default {@link MIGRATION_WAIT_S}).
 * A new (empty) PGlite directory starts as a copy of the migrated template of `template` (default
 * {@link TEMPLATE_ROOT}, built by `npm run build`; null: none) when one is usable, and then runs
 * only the migrations newer than it (`template.ts`); a PGlite store without a gateway identity
 * draws one.
 */
export async function openDatabase(target: DatabaseTarget, options: { poolMax?: number; migrationWaitS?: number; template?: string | null } = {}): Promise<Database> {
  if ('url' in target && options.poolMax !== undefined && options.poolMax < 2) throw new Error(`poolMax is ${options.poolMax}: a Postgres pool needs at least 2 connections (one holds the migration lock)`);
  let release: (() => Promise<void>) | null = null;
  let db: Knex;
  let unwritable = async (): Promise<string | null> => null;
  if ('url' in target) {
    // Every connection goes to the host that accepts writes (`primary.ts`); the database name is
    // all knex itself reads of the settings.
    const connector = new PrimaryConnector(target.url);
    const database = decodeURIComponent(/^[^/]*\/\/[^/]*\/([^?#]*)/.exec(target.url)?.[1] ?? '') || undefined;
    db = knex({ client: 'pg', connection: { database }, pool: { min: 0, max: options.poolMax ?? 10 }, log: { warn: quietAcquireErrors } });
    connectThroughPrimary(db.client, connector);
    const probe = new PrimaryConnector(target.url, { application_name: 'holon-readiness' }, READINESS_TIMEOUT_MS);
    unwritable = async () => {
      try {
        await (await probe.connect()).end();
        return null;
      } catch (error) {
        return (error as Error).message;
      }
    };
  } else {
    let connection: object = {};
    if ('dir' in target) {
      const dir = path.resolve(target.dir);
      await mkdir(dir, { recursive: true });
      try {
        release = await lockfile.lock(dir, {
          lockfilePath: `${dir}.lock`,
          // A lock left by a killed process goes stale 10 s after its last refresh; a restart waits up to 20 s for that.
          stale: 10_000,
          update: 2_000,
          retries: { retries: 20, minTimeout: 1_000, maxTimeout: 1_000 },
          onCompromised: (error) => process.emitWarning(`PGlite directory lock compromised: ${error.message}`),
        });
      } catch (error) {
        throw new Error(`the database directory ${dir} is already being used by another process (${(error as Error).message}): stop that process, or pass --db with another directory`);
      }
      // Under the lock: a directory another process is creating is never copied over.
      if (options.template !== null) await seedFromTemplate(dir, options.template ?? TEMPLATE_ROOT);
      connection = { filename: dir };
    }
    db = knex({ client: ClientPgLite as unknown as typeof knex.Client, dialect: 'postgres', connection });
  }
  try {
    if ('url' in target) {
      if (!(await migrationsCurrent(db))) await migrateExclusively(db, options.migrationWaitS ?? MIGRATION_WAIT_S);
    } else {
      if (!(await migrationsCurrent(db))) await db.migrate.latest({ migrationSource });
      await drawIdentity(db);
    }
  } catch (error) {
    await db.destroy();
    await releaseLock(release);
    throw error;
  }
  traceTransactions(db);
  return {
    knex: db,
    engine: 'url' in target ? 'postgres' : 'pglite',
    unwritable,
    async close() {
      await db.destroy();
      await releaseLock(release);
    },
  };
}

/** An integer read from any driver (number, numeric string or bigint); null stays null. */
export function int(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint' || typeof value === 'string') return parseInt8(String(value));
  if (value === null || value === undefined) return 0;
  throw new Error(`expected an integer, got ${typeof value}`);
}

/** A timestamp from any driver as an ISO 8601 string; null stays null. */
export function iso(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  return (value instanceof Date ? value : new Date(String(value))).toISOString();
}
