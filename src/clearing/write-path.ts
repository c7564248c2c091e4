/**
 * The reference binding's write path (issue 12 §1): every value-moving request is one call of
 * the database function `clearing_apply` (`src/clearing/sql/clearing_apply.sql`) as fixed SQL on
 * a raw driver connection from the knex pool (`src/db/raw-sql.ts`), the same text on both engines.
 *
 * Group commit: while a batch is at the database, requests arriving within `window_ms` of the
 * first one of the next batch (or until `batch_max` are waiting) go to the database together, as
 * one statement and so one transaction; when none is, the requests of the current turn of the
 * event loop go at once, so a lone request does not wait for a window. A batch takes at most
 * `per_account_max` operations per account (issue 12 §2, `op-keys.ts`; default 16): one more, or
 * one that touches an account of a batch at the database, waits for a later batch, in arrival order.
 * Each request gets its own outcome: every operation runs in its own subtransaction, and the
 * batch locks all its accounts in id order first (batches never deadlock on accounts). An
 * answer is sent only after the batch committed, so a crash mid-batch loses nothing that was
 * answered. When the whole statement fails (the connection drops, the commit is refused), each
 * operation of the batch is tried again on its own, so one request can never sink another.
 */
import type { Knex } from 'knex';
import { envNumber, type NumberVariable } from '../config/env.ts';
import { HttpError } from '../http/errors.ts';
import { rawQuery, type FixedStatement } from '../db/raw-sql.ts';
import { opsText, type LedgerOp, type OpOutcome } from './ledger-op.ts';
import { keysOf } from './op-keys.ts';
import { refusalOf } from './refusals.ts';

/** Settings of the write path (README "Reference binding: write path"). */
export interface WritePathOptions {
  /** Group concurrent requests into one transaction (default true; env `HOLON_CLEARING_GROUP_COMMIT=off` turns it off). */
  group_commit: boolean;
  /** Longest wait for more requests after the first of a batch, in milliseconds (default 1; env `HOLON_CLEARING_GROUP_WINDOW_MS`, 0–10). */
  window_ms: number;
  /** Most operations per batch (default 32; env `HOLON_CLEARING_GROUP_MAX`, 1–64: PostgreSQL keeps 64 subtransactions per transaction in memory). */
  batch_max: number;
  /**
   * Most operations of one batch that share a key, i.e. touch one account, hold or transaction id
   * (default 16; env `HOLON_CLEARING_GROUP_PER_ACCOUNT`, 1–64). Each further update of a row the
   * batch already updated costs a new row version, and saves a round trip and a commit; 16 won
   * for a shared payer on a quiet machine (bench/README.md, issue 12 §2).
   */
  per_account_max: number;
  /** Most requests waiting for the database at once; beyond it a write is refused 503 `overloaded` (default 4096; env `HOLON_CLEARING_QUEUE_MAX`, 1–1,000,000). */
  queue_max: number;
}

/** The defaults of `WritePathOptions`. */
export const WRITE_PATH_DEFAULTS: WritePathOptions = { group_commit: true, window_ms: 1, batch_max: 32, per_account_max: 16, queue_max: 4096 };

/** Attempts of one operation that lost a race (unique violation on a new id, deadlock): the same as the old knex path. */
const RACE_ATTEMPTS = 3;
/** SQLSTATEs of a lost race, after which the operation is run again and finds the winner's row (§9). */
const RACE_STATES = new Set(['23505', '40P01']);

/** A write-path variable: a whole number from `min` to `max`, defaulting to {@link WRITE_PATH_DEFAULTS}. */
const writeVariable = (name: string, what: string, key: Exclude<keyof WritePathOptions, 'group_commit'>, min: number, max: number): NumberVariable =>
  ({ name, what, default: WRITE_PATH_DEFAULTS[key], min, max, integer: true });

/** The numeric write-path variables, by the field of {@link WritePathOptions} they set (ranges as documented there). */
export const WRITE_PATH_VARIABLES: Record<Exclude<keyof WritePathOptions, 'group_commit'>, NumberVariable> = {
  window_ms: writeVariable('HOLON_CLEARING_GROUP_WINDOW_MS', 'milliseconds a batch waits for more requests', 'window_ms', 0, 10),
  batch_max: writeVariable('HOLON_CLEARING_GROUP_MAX', 'operations per batch', 'batch_max', 1, 64),
  per_account_max: writeVariable('HOLON_CLEARING_GROUP_PER_ACCOUNT', 'operations per account per batch', 'per_account_max', 1, 64),
  queue_max: writeVariable('HOLON_CLEARING_QUEUE_MAX', 'requests waiting for the database', 'queue_max', 1, 1_000_000),
};

/** The write-path settings named by the environment (`HOLON_CLEARING_GROUP_COMMIT` on|off and {@link WRITE_PATH_VARIABLES}). Throws on a malformed value. */
export function writePathOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): WritePathOptions {
  const switchText = env.HOLON_CLEARING_GROUP_COMMIT ?? 'on';
  if (switchText !== 'on' && switchText !== 'off') throw new Error(`HOLON_CLEARING_GROUP_COMMIT=${switchText} is neither on nor off`);
  return {
    group_commit: switchText === 'on',
    window_ms: envNumber(env, WRITE_PATH_VARIABLES.window_ms),
    batch_max: envNumber(env, WRITE_PATH_VARIABLES.batch_max),
    per_account_max: envNumber(env, WRITE_PATH_VARIABLES.per_account_max),
    queue_max: envNumber(env, WRITE_PATH_VARIABLES.queue_max),
  };
}

/** The one statement of the write path: `$1` is the JSON array of operations (`opsText`). */
export const APPLY_SQL: FixedStatement = { name: 'holon_clearing_apply', text: 'SELECT clearing_apply($1::jsonb) AS outcomes' };

/** Runs `ops` as one `clearing_apply` call on a raw connection from `db`'s pool; answers one outcome per operation. Throws when the statement as a whole fails. */
export async function applyBatch(db: Knex, ops: LedgerOp[]): Promise<OpOutcome[]> {
  const [row] = await rawQuery(db, APPLY_SQL, [opsText(ops)]);
  return row.outcomes;
}

/** A request waiting for its batch. */
interface Waiting {
  op: LedgerOp;
  /** What the operation touches (`keysOf`): at most `per_account_max` operations of a batch, and no two batches at the database, share one. */
  keys: string[];
  resolve(outcome: OpOutcome): void;
  reject(error: unknown): void;
}

/** Runs one batch: `applyBatch`, or a stand-in that records the batches sent (tests). */
export type BatchRunner = (db: Knex, ops: LedgerOp[]) => Promise<OpOutcome[]>;

/**
 * The write path of one binding: `apply` answers an operation's outcome or throws its refusal.
 *
 * With group commit, a batch takes at most `per_account_max` operations per key (`op-keys.ts`: an
 * account, a hold, a transaction id). An operation with a key that the forming batch has that many
 * times, or that a batch at the database or an earlier held operation has, is held, in arrival
 * order, and joins the first batch formed after the last of those returns; so the operations of
 * one account reach the database in arrival order, every time, and an operation waits only behind
 * those that share a key with it.
 * When a batch returns and frees held operations, the next batch is sent at once: they have
 * already waited one batch, and a window on top would slow a shared payer's settlements, which
 * can only go one batch at a time. Each return looks at every held operation once, so its cost
 * is bounded by `queue_max` operations.
 */
export class WritePath {
  /** The next batch: its operations share no key with a batch at the database or a held operation, nor more than `per_account_max` of them one key. */
  private forming: Waiting[] = [];
  /** How many operations of the forming batch have each key. */
  private formingKeys = new Map<string, number>();
  /** Operations waiting for a key to come free, in arrival order. */
  private held: Waiting[] = [];
  /** The keys of `held`: a later operation with one of them is held too, so each key keeps arrival order. */
  private heldKeys = new Set<string>();
  /** The keys of the batches at the database (including the one-by-one retries of a failed batch). */
  private busy = new Set<string>();
  /** Cancels the scheduled send of the forming batch; null when none is scheduled. */
  private scheduled: (() => void) | null = null;
  private pending = 0;
  /** Batches sent and not yet answered. */
  private inFlight = 0;
  /**
   * Since the start: statements sent, operations carried by them (group commit saved operations −
   * batches), and operations held for a later batch because an earlier one shared a key with them.
   */
  readonly stats = { batches: 0, operations: 0, held: 0 };

  /** A write path on `db`'s pool with `options`; `run` sends a batch (default `applyBatch`). */
  constructor(
    private readonly db: Knex,
    readonly options: WritePathOptions = WRITE_PATH_DEFAULTS,
    private readonly run: BatchRunner = applyBatch,
  ) {}

  /**
   * Applies one operation and answers its outcome (`existing` for a stored id). Throws the
   * operation's §7 refusal as an `HttpError`, 503 `overloaded` when `queue_max` requests are
   * already waiting, or the database's error (answered 500) when it failed otherwise.
   */
  async apply(op: LedgerOp): Promise<OpOutcome> {
    if (this.pending >= this.options.queue_max) {
      throw new HttpError(503, 'overloaded', `${this.pending} writes are already waiting for the ledger (the bound is ${this.options.queue_max}); retry shortly`);
    }
    this.pending++;
    try {
      for (let attempt = 1; ; attempt++) {
        const outcome = await (this.options.group_commit ? this.enqueue(op) : this.alone(op));
        const error = outcome.error as { sqlstate: string; message: string; detail: string | null } | undefined;
        if (!error) return outcome;
        if (RACE_STATES.has(error.sqlstate) && attempt < RACE_ATTEMPTS) continue;
        throw refusalOf(error.sqlstate, error.detail) ?? Object.assign(new Error(error.message), { code: error.sqlstate });
      }
    } finally {
      this.pending--;
    }
  }

  /** One operation as its own batch. */
  private async alone(op: LedgerOp): Promise<OpOutcome> {
    return (await this.count([op]))[0];
  }

  /** The batch runner, counted in `stats`. */
  private count(ops: LedgerOp[]): Promise<OpOutcome[]> {
    this.stats.batches++;
    this.stats.operations += ops.length;
    return this.run(this.db, ops);
  }

  /** Whether one of `keys` is taken by the forming batch, a batch at the database, or a held operation (`held`: the keys of those held so far). */
  private taken(keys: string[], held: Set<string>): boolean {
    return keys.some((k) => (this.formingKeys.get(k) ?? 0) >= this.options.per_account_max || this.busy.has(k) || held.has(k));
  }

  /**
   * Adds `op` to the forming batch, or holds it when one of its keys is taken. The batch is sent
   * when it is full; else, when no batch is at the database, at the end of this turn of the event
   * loop (a lone request waits for nothing); else when its window closes.
   */
  private enqueue(op: LedgerOp): Promise<OpOutcome> {
    return new Promise((resolve, reject) => {
      const waiting = { op, keys: keysOf(op), resolve, reject };
      if (this.taken(waiting.keys, this.heldKeys)) {
        this.stats.held++;
        return this.hold(waiting, this.heldKeys);
      }
      this.join(waiting);
      if (this.forming.length > 0 && this.scheduled === null) this.scheduled = this.inFlight === 0 ? this.soon() : this.later();
    });
  }

  /** Puts `waiting` at the end of the held operations; its keys go into `keys`. */
  private hold(waiting: Waiting, keys: Set<string>): void {
    this.held.push(waiting);
    for (const k of waiting.keys) keys.add(k);
  }

  /** Adds `waiting` to the forming batch, and sends the batch when that fills it. */
  private join(waiting: Waiting): void {
    this.forming.push(waiting);
    for (const k of waiting.keys) this.formingKeys.set(k, (this.formingKeys.get(k) ?? 0) + 1);
    if (this.forming.length >= this.options.batch_max) this.send();
  }

  /** Schedules `send` at the end of this turn of the event loop; answers its canceller. */
  private soon(): () => void {
    const immediate = setImmediate(() => this.send());
    return () => clearImmediate(immediate);
  }

  /** Schedules `send` when the window closes; answers its canceller. */
  private later(): () => void {
    const timeout = setTimeout(() => this.send(), this.options.window_ms);
    return () => clearTimeout(timeout);
  }

  /**
   * Sends the forming batch; on a failure of the whole statement, runs each operation again on its
   * own ({@link retryAlone}). Its keys stay busy until every answer is in.
   */
  private send(): void {
    this.scheduled?.();
    this.scheduled = null;
    const batch = this.forming;
    const keys = this.formingKeys;
    this.forming = [];
    this.formingKeys = new Map();
    if (batch.length === 0) return;
    for (const k of keys.keys()) this.busy.add(k);
    this.inFlight++;
    this.count(batch.map((w) => w.op))
      .then(
        (outcomes) => batch.forEach((w, i) => w.resolve(outcomes[i])),
        (error) => (batch.length === 1 ? batch[0].reject(error) : this.retryAlone(batch)),
      )
      .finally(() => {
        this.inFlight--;
        for (const k of keys.keys()) this.busy.delete(k);
        this.release();
      });
  }

  /**
   * Runs each operation of a failed batch again as its own statement: those sharing a key one
   * after another, in the batch's order (one account's writes keep their order), the others at
   * once (one slow or hanging retry does not hold up writes of other accounts). Resolves when
   * every operation has its answer.
   */
  private async retryAlone(batch: Waiting[]): Promise<void> {
    const last = new Map<string, Promise<void>>();
    const retries = batch.map((w) => {
      const retried = Promise.all(w.keys.map((k) => last.get(k))).then(() => this.alone(w.op).then(w.resolve, w.reject));
      for (const k of w.keys) last.set(k, retried);
      return retried;
    });
    await Promise.all(retries);
  }

  /** Moves the held operations none of whose keys is taken any longer into the forming batch, in arrival order, and sends it at once when it took any. */
  private release(): void {
    const held = this.held;
    this.held = [];
    this.heldKeys = new Set();
    let freed = 0;
    for (const waiting of held) {
      if (this.taken(waiting.keys, this.heldKeys)) {
        this.hold(waiting, this.heldKeys);
      } else {
        freed++;
        this.join(waiting);
      }
    }
    if (freed > 0) this.send();
  }
}
