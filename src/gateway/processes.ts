/**
 * Several gateway processes on one database (issue 12 §4, gateway §7 "Restarts"): each process
 * holds a lease, a row of `gateway_processes` renewed by a heartbeat, and every call it runs
 * records its id (`gateway_receipts.process`). Restart recovery closes only the calls of dead
 * processes, never those of a live one. A process is dead when its lease expired (it stopped
 * renewing it: killed, hung, cut off) or, on Postgres, as soon as its session advisory lock is
 * gone: the server releases it when the process's connection closes, so a `kill -9` is seen at
 * once instead of after the expiry. On PGlite only one process can open the directory (a lock
 * file), so every other lease is dead.
 *
 * A process that finds its own lease expired or its lock connection lost is fenced: it must stop
 * (`onLost`), since another process may already be closing its calls. The call pipeline also
 * fences each call's finish on its receipt still being `running` (`lifecycle.ts`).
 */
import { hostname } from 'node:os';
import pg from 'pg';
import type { Logger } from 'pino';
import { envNumber, type NumberVariable } from '../config/env.ts';
import { int, type Database } from '../db/index.ts';

/** The first key of every lease's advisory lock (`pg_advisory_lock(LOCK_CLASS, id)`): "holo" in ASCII. */
const LOCK_CLASS = 0x686f6c6f;

/** How long a lease lasts without a heartbeat, in seconds: default 30 (a `kill -9` is seen at once on Postgres anyway, through the lock). */
export const DEFAULT_LEASE_S = 30;

/** `HOLON_PROCESS_LEASE_S`: whole seconds from 3 (a heartbeat every 0.6 s) to 600, default {@link DEFAULT_LEASE_S}. */
export const LEASE_VARIABLE: NumberVariable = {
  name: 'HOLON_PROCESS_LEASE_S',
  what: 'seconds a process lease lasts without a heartbeat',
  default: DEFAULT_LEASE_S,
  min: 3,
  max: 600,
  integer: true,
};

/** The lease length {@link LEASE_VARIABLE} names, in seconds. Throws `SettingRefused` outside its range. */
export function leaseFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  return envNumber(env, LEASE_VARIABLE);
}

/** Options of {@link ProcessLease.acquire}. */
export interface LeaseOptions {
  /** How long the lease lasts without a heartbeat, seconds; the heartbeat runs every fifth of it. */
  lease_s: number;
  /** The PostgreSQL URL of `database` (Postgres only): the lock is held on a connection of its own. */
  url?: string;
  logger: Logger;
  /** Called once when this process loses its lease (expired, or its lock connection died): it must stop. */
  onLost: (reason: string) => void;
  /** Called after each heartbeat (restart recovery of dead processes' calls). */
  onHeartbeat?: () => Promise<void>;
}

/** This process's lease. */
export class ProcessLease {
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<void> | null = null;
  private lost = false;

  private constructor(
    /** This process's id (`gateway_processes.id`), recorded on every call it runs. */
    readonly id: number,
    private readonly database: Database,
    private readonly lock: pg.Client | null,
    private readonly options: LeaseOptions,
  ) {}

  /** Whether this process still holds its lease (false once lost: expired, or its lock connection died). */
  get held(): boolean {
    return !this.lost;
  }

  /**
   * Takes a new lease: an id from `gateway_process_seq`, on Postgres the advisory lock on it
   * (taken before the row exists, so a live lease is never seen without its lock), then the row.
   */
  static async acquire(database: Database, options: LeaseOptions): Promise<ProcessLease> {
    const db = database.knex;
    const id = int((await db.raw(`SELECT nextval('gateway_process_seq') AS id`)).rows[0].id);
    let lock: pg.Client | null = null;
    if (database.engine === 'postgres') {
      if (!options.url) throw new Error('a lease on Postgres needs its URL');
      lock = new pg.Client({ connectionString: options.url, application_name: `holon-gateway-${id}` });
      await lock.connect();
      await lock.query('SELECT pg_advisory_lock($1, $2)', [LOCK_CLASS, id]);
    }
    await db('gateway_processes').insert({ id, host: hostname().slice(0, 255), pid: process.pid, expires_at: db.raw(`clock_timestamp() + make_interval(secs => ?)`, [options.lease_s]) });
    const lease = new ProcessLease(id, database, lock, options);
    lock?.on('error', (error) => lease.lose(`the lock connection failed: ${error.message}`));
    lock?.on('end', () => lease.lose('the lock connection closed'));
    return lease;
  }

  /** Starts the heartbeat: renews the lease every fifth of its length, then runs `onHeartbeat`. */
  start(): void {
    const every_ms = (this.options.lease_s * 1000) / 5;
    this.timer = setInterval(() => {
      if (this.beating) return;
      this.beating = this.beat()
        .catch((error) => this.options.logger.error({ err: error }, 'lease heartbeat failed'))
        .finally(() => {
          this.beating = null;
        });
    }, every_ms);
    this.timer.unref();
  }

  /**
   * Renews the lease. On Postgres through the lock's own connection, so a pool busy with calls
   * never delays it, and only while it has not expired (an expired lease is lost for good: other
   * processes may be closing this one's calls). On PGlite no other process can see it: renewed as is.
   */
  private async beat(): Promise<void> {
    const renew = `UPDATE gateway_processes SET heartbeat_at = clock_timestamp(), expires_at = clock_timestamp() + make_interval(secs => $2) WHERE id = $1`;
    if (this.lock) {
      const renewed = await this.lock.query(`${renew} AND expires_at > clock_timestamp()`, [this.id, this.options.lease_s]);
      if (renewed.rowCount === 0) return this.lose(`the lease of process ${this.id} expired before its heartbeat`);
    } else {
      await this.database.knex.raw(renew.replace('$2', '?').replace('$1', '?'), [this.options.lease_s, this.id]);
    }
    await this.options.onHeartbeat?.();
  }

  private lose(reason: string): void {
    if (this.lost || this.timer === null) return;
    this.lost = true;
    this.options.logger.fatal({ process: this.id }, reason);
    this.options.onLost(reason);
  }

  /**
   * The ids of dead processes (never this one): lease expired, or on Postgres no session holds
   * its advisory lock; on PGlite every other process (the directory is locked by this one).
   */
  async deadProcesses(): Promise<number[]> {
    const db = this.database.knex;
    const query = db('gateway_processes as p').whereNot('p.id', this.id);
    if (this.database.engine === 'postgres') {
      query.where((dead) =>
        dead.where('p.expires_at', '<=', db.raw('clock_timestamp()')).orWhereNotExists(
          db('pg_locks as l')
            .whereRaw(`l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.classid = ? AND l.objid = p.id`, [LOCK_CLASS])
            .whereRaw('l.database = (SELECT oid FROM pg_database WHERE datname = current_database())'),
        ),
      );
    }
    return (await query.pluck('p.id')).map(int);
  }

  /** Forgets the lease rows of dead processes in `ids` that own nothing any more (no call left `running`). */
  async forget(ids: readonly number[]): Promise<void> {
    if (ids.length === 0) return;
    const db = this.database.knex;
    await db('gateway_processes')
      .whereIn('id', ids)
      .whereNotExists(db('gateway_receipts as r').whereRaw(`r.status = 'running' AND r.process = gateway_processes.id`))
      .delete();
  }

  /** Stops the heartbeat, ends the lease (expired now: the next process recovers at once; skipped if the database failed) and releases the lock. */
  async end(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.beating;
    const db = this.database.knex;
    try {
      await db('gateway_processes').where({ id: this.id }).update({ expires_at: db.raw('clock_timestamp()') });
    } catch (error) {
      // Closing after the database failed: the lock and the expiry end the lease all the same.
      this.options.logger.warn({ err: error, process: this.id }, 'could not end the lease early');
    }
    await this.lock?.end();
  }
}
