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
 * A process that finds its own lease expired or its lock connection lost is fenced: another
 * process may already be closing its calls, so it never renews that lease. On Postgres it takes a
 * new one instead, with a new id (issue 27 §2: after a failover the lock connection drops, and the
 * new primary holds no lock at all), trying every {@link RETRY_MS} ms for `failover_s` seconds
 * (`HOLON_DB_FAILOVER_S`); its calls under the old id are closed by recovery like a dead
 * process's, and while it has no lease its readiness says so. Only past that bound, or on PGlite,
 * it must stop (`onLost`). The call pipeline also fences each call's finish on its receipt still
 * being `running` (`lifecycle.ts`).
 */
import { hostname } from 'node:os';
import pg from 'pg';
import type { Logger } from 'pino';
import { envNumber, type NumberVariable } from '../config/env.ts';
import { int, type Database } from '../db/index.ts';
import { PrimaryConnector } from '../db/primary.ts';

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

/** How long a process that lost its lease keeps trying to take a new one before it stops, in seconds: default 120. */
export const DEFAULT_FAILOVER_S = 120;

/** `HOLON_DB_FAILOVER_S`: whole seconds from 5 to 3600, default {@link DEFAULT_FAILOVER_S}. */
export const FAILOVER_VARIABLE: NumberVariable = {
  name: 'HOLON_DB_FAILOVER_S',
  what: 'seconds a gateway process that lost its database lease keeps trying to take a new one before it stops',
  default: DEFAULT_FAILOVER_S,
  min: 5,
  max: 3600,
  integer: true,
};

/** The bound {@link FAILOVER_VARIABLE} names, in seconds. Throws `SettingRefused` outside its range. */
export function failoverFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  return envNumber(env, FAILOVER_VARIABLE);
}

/** How often a process without a lease tries to take a new one, in milliseconds. */
export const RETRY_MS = 1_000;

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
  /**
   * On Postgres, how long to keep trying to take a new lease after losing one, in seconds (absent:
   * none is tried). `onLost` is called when none was had within it.
   */
  failover_s?: number;
  /** Called once when this process has lost its lease for good (PGlite, or no new one within `failover_s`): it must stop. */
  onLost: (reason: string) => void;
  /** Called after each heartbeat (restart recovery of dead processes' calls). */
  onHeartbeat?: () => Promise<void>;
}

/** This process's lease. */
export class ProcessLease {
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<void> | null = null;
  private lost = false;
  /** Why this process holds no lease now (it is taking a new one), or null while it holds one. */
  private missing: string | null = null;
  private ended = false;

  private constructor(
    private current: { id: number; lock: pg.Client | null },
    private readonly database: Database,
    private readonly connector: PrimaryConnector | null,
    private readonly options: LeaseOptions,
  ) {}

  /** Whether this process holds a lease now (false while it takes a new one after a failover, and once lost for good): `holon_lease_held`. */
  get held(): boolean {
    return !this.lost && this.missing === null;
  }

  /** This process's id (`gateway_processes.id`), recorded on every call it runs; a new one after a lease was lost and another taken. */
  get id(): number {
    return this.current.id;
  }

  /** Why this process holds no lease right now (it is taking a new one: it must not run calls), or null. */
  get unleased(): string | null {
    return this.missing;
  }

  /**
   * Takes a new lease: an id from `gateway_process_seq`, on Postgres the advisory lock on it
   * (taken before the row exists, so a live lease is never seen without its lock), then the row.
   */
  static async acquire(database: Database, options: LeaseOptions): Promise<ProcessLease> {
    if (database.engine === 'postgres' && !options.url) throw new Error('a lease on Postgres needs its URL');
    const connector = database.engine === 'postgres' ? new PrimaryConnector(options.url!, { application_name: 'holon-gateway-lease' }) : null;
    const lease = new ProcessLease({ id: 0, lock: null }, database, connector, options);
    lease.hold(await lease.take());
    return lease;
  }

  private async take(): Promise<{ id: number; lock: pg.Client | null }> {
    const db = this.database.knex;
    const id = int((await db.raw(`SELECT nextval('gateway_process_seq') AS id`)).rows[0].id);
    const lock = this.connector ? await this.connector.connect() : null;
    try {
      await lock?.query(`SET application_name = 'holon-gateway-${id}'`);
      await lock?.query('SELECT pg_advisory_lock($1, $2)', [LOCK_CLASS, id]);
      await db('gateway_processes').insert({ id, host: hostname().slice(0, 255), pid: process.pid, expires_at: db.raw(`clock_timestamp() + make_interval(secs => ?)`, [this.options.lease_s]) });
    } catch (error) {
      await lock?.end().catch(() => {});
      throw error;
    }
    return { id, lock };
  }

  private hold(taken: { id: number; lock: pg.Client | null }): void {
    this.current = taken;
    const { lock } = taken;
    lock?.on('error', (error) => this.lose(`the lock connection of process ${taken.id} failed: ${error.message}`, lock));
    lock?.on('end', () => this.lose(`the lock connection of process ${taken.id} closed`, lock));
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
    if (this.missing) return;
    const renew = `UPDATE gateway_processes SET heartbeat_at = clock_timestamp(), expires_at = clock_timestamp() + make_interval(secs => $2) WHERE id = $1`;
    const { lock } = this.current;
    if (lock) {
      const renewed = await lock.query(`${renew} AND expires_at > clock_timestamp()`, [this.id, this.options.lease_s]);
      if (renewed.rowCount === 0) return this.lose(`the lease of process ${this.id} expired before its heartbeat`, lock);
    } else {
      await this.database.knex.raw(renew.replace('$2', '?').replace('$1', '?'), [this.options.lease_s, this.id]);
    }
    await this.options.onHeartbeat?.();
  }

  /**
   * The lease held on `lock` is lost for good (a loss reported by an older lock is ignored). On
   * Postgres with `failover_s`, a new one is taken in the background; else `onLost`.
   */
  private lose(reason: string, lock: pg.Client | null): void {
    if (this.lost || this.ended || this.timer === null || lock !== this.current.lock || this.missing) return;
    if (!this.connector || this.options.failover_s === undefined) {
      this.lost = true;
      this.options.logger.fatal({ process: this.id }, reason);
      this.options.onLost(reason);
      return;
    }
    this.missing = reason;
    this.options.logger.warn({ process: this.id }, `${reason}: taking a new lease`);
    void lock?.end().catch(() => {});
    void this.retake(reason, Date.now() + this.options.failover_s * 1000);
  }

  /** Tries to take a new lease every {@link RETRY_MS} ms until `deadline_ms` (epoch ms); then the process must stop. */
  private async retake(reason: string, deadline_ms: number): Promise<void> {
    let last = reason;
    while (!this.ended) {
      try {
        const previous = this.id;
        const taken = await this.take();
        if (this.ended) {
          await taken.lock?.end().catch(() => {});
          return;
        }
        this.hold(taken);
        this.missing = null;
        this.options.logger.warn({ process: this.id, previous }, `process ${previous} is now process ${this.id}: its calls in flight are closed by recovery`);
        return;
      } catch (error) {
        last = (error as Error).message;
      }
      if (Date.now() + RETRY_MS > deadline_ms) break;
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
    if (this.ended) return;
    this.lost = true;
    const why = `${reason}; no new lease within ${this.options.failover_s} s (HOLON_DB_FAILOVER_S): ${last}`;
    this.options.logger.fatal({ process: this.id }, why);
    this.options.onLost(why);
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
    this.ended = true;
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
    await this.current.lock?.end().catch(() => {});
  }
}
