/**
 * Durable settlement (clearing-contract §13 "Settling after a successful call"): every settlement
 * and hold release is written down as an intent, in the same database transaction as its
 * receipt, before it is posted; then posted under the work's identity (`settle:<receipt>`),
 * retried with a widening gap until the binding takes it, across restarts. A refusal (4xx) is a
 * fact and is not retried; an attempt still failing after `max_attempts` is abandoned with its
 * reason and kept, listed by `GET /v0/settlements?status=abandoned`.
 *
 * Keeping pace (issue 12 §3): a call's intents are posted as soon as its receipt's transaction
 * commits, not on the next poll: claimed by the very statement that writes them
 * ({@link Outbox.claimForPosting}), or by one more ({@link Outbox.postReceipt}). The poll is the retry path: it
 * claims due intents in batches and posts them, several receipts at once. Several gateway
 * processes may share one Postgres (issue 12 §4): an intent is posted by whoever holds its claim,
 * a lease (`claimed_until`) taken with `FOR UPDATE SKIP LOCKED`, so two posters never post it at
 * once, and the intents of a poster that crashed are claimable again once the lease has passed.
 * Posting twice is harmless anyway (the binding is idempotent on the transaction id); the claim
 * keeps it from happening. The posted marks of many receipts share one statement, made after a
 * short linger (issue 21 §1, {@link Outbox.markPosted}); a post does not wait for its mark.
 *
 * Order (issue 8 §1.2): a hold's release is posted only once its call has no pending settlement,
 * so the binding never frees money that is about to be charged.
 */
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { envNumber, type NumberVariable } from '../config/env.ts';
import { int, iso } from '../db/index.ts';
import { namedStatement, rawQuery, runnerOf } from '../db/raw-sql.ts';
import { observeSettled } from '../observe/metrics.ts';
import { ClearingRefused, type ClearingPort } from './clearing.ts';

/** A settle intent: the body of clearing-contract §6.8, amounts in micro-units. */
export interface SettleIntent {
  operation: 'settle';
  receipt: string;
  body: { txnId: string; caller: string; owner: string; rate: number; retail: number; ref: string; memo?: string };
}

/**
 * A release-hold intent (§6.14); keyed `release:<holdId>`. `unknown_until` (ISO time) marks a hold
 * whose open-hold outcome is unknown (its answer was lost): until then, the binding answering
 * that no such hold exists may only mean it has not processed the open-hold yet, so the release
 * is retried; after it, the hold would have expired anyway.
 */
export interface ReleaseIntent {
  operation: 'release-hold';
  receipt: string;
  body: { holdId: string; reason: string; unknown_until?: string };
}

/** Something to post to the binding. */
export type Intent = SettleIntent | ReleaseIntent;

/** How retries widen: delay = min(base × 2^(attempts−1), max), until `max_attempts`. */
export interface RetryPolicy {
  base_ms: number;
  max_ms: number;
  max_attempts: number;
}

/** The default: 1 s, 2 s, 4 s … capped at 10 minutes, abandoned after 20 attempts (about two hours). */
export const DEFAULT_RETRY: RetryPolicy = { base_ms: 1_000, max_ms: 600_000, max_attempts: 20 };

/** How the outbox posts; every field is a bound, documented in docs/bounds.md. */
export interface OutboxSettings {
  retry: RetryPolicy;
  /** How often the retry path looks for due intents, in ms. */
  poll_ms: number;
  /** Intents claimed by one statement of the retry path. */
  batch: number;
  /** Receipts posted at once, by the retry path and (separately) right after their receipts. */
  concurrency: number;
  /** How long a claim lasts, in ms: past it, a claimer presumed crashed loses its intents to the next poster. */
  lease_ms: number;
  /** Pending intents above which a call that would reserve money is refused 503 `settlement_backlog` (`HOLON_OUTBOX_MAX_PENDING`). */
  max_pending: number;
  /** How long a count of pending intents is trusted before admission counts again, in ms. */
  count_ttl_ms: number;
  /** How long a posted mark waits for others to share its statement, in ms ({@link MARK_LINGER_MS}). */
  mark_linger_ms: number;
  /** Intents a mark statement carries before it goes without waiting out the linger ({@link MARK_BATCH_MAX}). */
  mark_batch: number;
}

/**
 * How long a posted mark waits for the marks of other receipts, in ms (issue 21 §1): one statement
 * then marks every receipt posted meanwhile. Measured on `bench/gateway` (16 clients, one
 * mandate, Postgres, 2 runs each): mark statements per billed call 0.80 when a mark went at once
 * while fewer than 4 were at the database, 0.26 with 10 ms, 0.20 with 25 ms, 0.15 with 50 ms; past
 * 25 ms the gain is small and the wait grows. The cost: an intent reads `pending` for up to this
 * long after the binding took it (its claim keeps every poster off it); an idle gateway's marks
 * wait this long, no more.
 */
export const MARK_LINGER_MS = 25;

/** Intents one mark statement carries, at most (a receipt's marks are not split, so one receipt's may exceed it): a full batch goes without waiting out the linger. */
export const MARK_BATCH_MAX = 256;

/**
 * The defaults. The lease (30 s) is how long the intents of a crashed poster wait, its own
 * restart included; it outlasts one post at the default clearing timeouts (5 s connect + 15 s
 * request). A lease that runs out during a slower receipt only lets a second poster repeat an
 * idempotent post.
 */
export const DEFAULT_OUTBOX: OutboxSettings = { retry: DEFAULT_RETRY, poll_ms: 2_000, batch: 200, concurrency: 16, lease_ms: 30_000, max_pending: 10_000, count_ttl_ms: 1_000, mark_linger_ms: MARK_LINGER_MS, mark_batch: MARK_BATCH_MAX };

/** The most `HOLON_OUTBOX_MAX_PENDING` may be. */
export const MAX_OUTBOX_PENDING = 1_000_000;

/** What a caller refused for a backlog is told to wait, in seconds (`Retry-After`). */
export const BACKLOG_RETRY_AFTER_S = 2;

/** `HOLON_OUTBOX_MAX_PENDING`: a whole number of pending intents from 1 to {@link MAX_OUTBOX_PENDING}, default 10,000 ({@link DEFAULT_OUTBOX}). */
export const OUTBOX_MAX_PENDING_VARIABLE: NumberVariable = {
  name: 'HOLON_OUTBOX_MAX_PENDING',
  what: 'settlement intents waiting to be posted before calls are refused',
  default: DEFAULT_OUTBOX.max_pending,
  min: 1,
  max: MAX_OUTBOX_PENDING,
  integer: true,
};

/** The outbox settings the environment names: `max_pending` from {@link OUTBOX_MAX_PENDING_VARIABLE}. Throws `SettingRefused` outside its range. */
export function outboxSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): Partial<OutboxSettings> {
  return { max_pending: envNumber(env, OUTBOX_MAX_PENDING_VARIABLE) };
}

const keyOf = (intent: Intent) => (intent.operation === 'settle' ? intent.body.txnId : `release:${intent.body.holdId}`);

/** The parameters of {@link intentsCte}: the intents as a JSON array, and the claim's lease in ms (null: written unclaimed). */
export type IntentsParam = 'intents' | 'claim_ms';

/** The parameters of {@link intentsCte} for `intents`, claimed for `claim_ms` when given (a {@link PostingClaim}'s lease). */
export const intentsParams = (intents: readonly Intent[], claim_ms: number | null = null): Record<IntentsParam, unknown> => ({
  intents: JSON.stringify(intents.map((intent, index) => ({ ord: index, txn_id: keyOf(intent), receipt: intent.receipt, operation: intent.operation, body: intent.body }))),
  claim_ms,
});

/**
 * Writing settlement intents as a CTE (`intents`, returning the rows it wrote), pending and due
 * now, in the order given (their `seq`, the order they are posted in), for a statement that
 * writes them with their receipt; idempotent on their keys (a key already written is neither
 * written nor returned). With `:claim_ms`, the writer claims them in the same statement, to post
 * them itself once it commits. `guard`: a CTE that must have a row for them to be written.
 */
export const intentsCte = (guard: string | null) => `intents AS (
    INSERT INTO gateway_settlement_intents (txn_id, receipt, operation, body, status, next_attempt_at, claimed_until)
    SELECT i.txn_id, i.receipt, i.operation, i.body, 'pending', clock_timestamp(), clock_timestamp() + (:claim_ms::integer * interval '1 millisecond')
    FROM jsonb_to_recordset(:intents::jsonb) AS i(ord integer, txn_id text, receipt text, operation text, body jsonb)${guard ? `
    WHERE EXISTS (SELECT 1 FROM ${guard})` : ''}
    ORDER BY i.ord
    ON CONFLICT (txn_id) DO NOTHING
    RETURNING *)`;

/** The rows {@link intentsCte} wrote, as one JSON array in `seq` order, for a statement's answer. */
export const CLAIMED_INTENTS_SQL = `(SELECT coalesce(jsonb_agg(to_jsonb(intents) ORDER BY intents.seq), '[]'::jsonb) FROM intents)`;

const WRITE = namedStatement<IntentsParam>('holon_gateway_write_intents', `WITH ${intentsCte(null)} SELECT 1`);

/**
 * A place among the posts made right after their receipts (at most `concurrency`), taken before
 * the statement that writes the intents, so that statement claims them (`lease_ms`) and the
 * writer posts them without another round trip. Exactly one of `post`, `cancel` and `unknown`
 * must follow; a second one is logged and does nothing. None of them throws.
 */
export interface PostingClaim {
  /** The lease to claim the intents with ({@link intentsParams}). */
  lease_ms: number;
  /** Posts the rows the statement wrote and claimed (its {@link CLAIMED_INTENTS_SQL} answer), in order; `settlements` is how many settle intents it was given. */
  post(rows: unknown, settlements: number): void;
  /** Gives the place back: the statement wrote nothing. */
  cancel(): void;
  /**
   * Gives the place back after the statement failed: it may still have committed (an answer
   * lost after the commit), so any claim it took on `receipt`'s pending intents is freed for the
   * retry path at once rather than after the lease (best effort; a failure is logged).
   */
  unknown(receipt: string): void;
}

/** Posted-mark statements at the database at once, at most: one that hangs leaves the other going. */
const MARKS_IN_FLIGHT = 2;

/** A posted mark waiting for its statement: a receipt's intents the binding took, and what to call when its statement has ended. */
interface WaitingMark {
  txn_ids: string[];
  /** Resolves when its statement has ended, committed or failed. */
  marked: Promise<void>;
  ended: () => void;
}

/** Claims the unclaimed pending intents of one receipt for `:lease_ms`, with the count of its pending settlements (the right-after-the-receipt path). */
const CLAIM_RECEIPT = namedStatement<'lease_ms' | 'receipt'>(
  'holon_gateway_claim_receipt',
  `WITH claimed AS (
     UPDATE gateway_settlement_intents SET claimed_until = clock_timestamp() + (:lease_ms::integer * interval '1 millisecond')
     WHERE receipt = :receipt::text AND status = 'pending' AND (claimed_until IS NULL OR claimed_until < clock_timestamp())
     RETURNING *)
   SELECT claimed.*, (SELECT count(*) FROM gateway_settlement_intents
                      WHERE receipt = :receipt::text AND operation = 'settle' AND status = 'pending')::int AS settlements_pending
   FROM claimed`,
);

/** Frees the claims on the pending intents of one receipt (a statement that claimed them failed, maybe after committing). */
const UNCLAIM_RECEIPT = namedStatement<'receipt'>(
  'holon_gateway_unclaim_receipt',
  `UPDATE gateway_settlement_intents SET claimed_until = NULL WHERE receipt = :receipt::text AND status = 'pending'`,
);

/** Marks the intents `:txn_ids` posted, with `:last_error`. */
const MARK_POSTED = namedStatement<'txn_ids' | 'last_error'>(
  'holon_gateway_mark_posted',
  `UPDATE gateway_settlement_intents
   SET status = 'posted', attempts = attempts + 1, posted_at = clock_timestamp(), last_error = :last_error::text, next_attempt_at = NULL, claimed_until = NULL
   WHERE txn_id = ANY(:txn_ids::text[])`,
);

/** A claimed intent row. */
type Row = Record<string, any>;

/** The outbox of one gateway: writes intents inside a caller's transaction and posts them after. */
export class Outbox {
  private readonly settings: OutboxSettings;
  private draining: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  /** Posts started right after a receipt, at most `concurrency` at once. */
  private readonly immediate = new Set<Promise<void>>();
  /** Places taken by {@link claimForPosting} whose statement has not ended yet. */
  private claiming = 0;
  /** Called when `claiming` drops to 0 (`stop` waits for the statements that may still post). */
  private readonly claimsEnded: Array<() => void> = [];
  private pending: { count: number; at_ms: number } | null = null;
  private counting: Promise<number> | null = null;
  /** Posted marks waiting for their statement, oldest first ({@link markPosted}). */
  private readonly marks: WaitingMark[] = [];
  /** The intents in {@link marks}. */
  private marks_waiting = 0;
  /** Whether the waiting marks go as soon as a statement may (their linger has passed, or `drain`/`stop` asked). */
  private marks_due = false;
  /** The linger of the oldest waiting mark, while it runs. */
  private linger: NodeJS.Timeout | null = null;
  /** Mark statements at the database (at most {@link MARKS_IN_FLIGHT}), each resolving when it has ended. */
  private readonly marking = new Set<Promise<void>>();

  constructor(
    private readonly db: Knex,
    private readonly clearing: ClearingPort,
    private readonly logger: Logger,
    settings: Partial<OutboxSettings> = {},
  ) {
    this.settings = { ...DEFAULT_OUTBOX, ...settings };
  }

  /** Writes intents in `trx` (the receipt's transaction), in one statement ({@link intentsCte}). Idempotent on their keys. */
  async write(trx: Knex.Transaction, intents: readonly Intent[]): Promise<void> {
    if (intents.length === 0) return;
    await runnerOf(trx)(WRITE.statement, WRITE.values(intentsParams(intents)));
  }

  /**
   * Posts the pending intents of `receipt` now; call it once their transaction has committed.
   * Never throws (a failure stays pending for the retry path). When `concurrency` such posts are
   * already in flight, it leaves them to a pass of the retry path, started at once.
   */
  postReceipt(receipt: string): void {
    if (this.immediate.size + this.claiming >= this.settings.concurrency) {
      this.drainSoon();
      return;
    }
    this.startPosting(this.claimReceipt(receipt), receipt);
  }

  /**
   * A place to post a receipt's intents right after the statement that writes them (and claims
   * them: {@link PostingClaim}), or null when `concurrency` posts are in flight or promised: then
   * write them unclaimed and call {@link postReceipt}, which leaves them to the retry path.
   */
  claimForPosting(): PostingClaim | null {
    if (this.immediate.size + this.claiming >= this.settings.concurrency) return null;
    this.claiming++;
    let open = true;
    const close = (): boolean => {
      if (!open) {
        this.logger.error(new Error('a posting claim was used twice'), 'a posting claim was used twice: the second use is ignored');
        return false;
      }
      open = false;
      this.claiming--;
      if (this.claiming === 0) for (const resolve of this.claimsEnded.splice(0)) resolve();
      return true;
    };
    return {
      lease_ms: this.settings.lease_ms,
      post: (claimed, settlements) => {
        if (!close()) return;
        let rows: Row[];
        try {
          rows = (typeof claimed === 'string' ? JSON.parse(claimed) : claimed) as Row[];
        } catch (error) {
          this.logger.error({ err: error }, 'the claimed intents could not be read: the retry path will post them');
          return;
        }
        if (!Array.isArray(rows) || rows.length === 0) return;
        // Every pending settlement of the receipt is among them unless one was written before (a key already taken).
        const all_settlements = rows.filter((row) => row.operation === 'settle').length === settlements;
        this.startPosting(Promise.resolve({ rows, all_settlements }), rows[0].receipt);
      },
      cancel: () => void close(),
      unknown: (receipt) => {
        if (!close()) return;
        void rawQuery(this.db, UNCLAIM_RECEIPT.statement, UNCLAIM_RECEIPT.values({ receipt })).catch((error) =>
          this.logger.error({ err: error, receipt }, 'freeing the claim of a failed statement failed: its intents wait out the lease'),
        );
      },
    };
  }

  /** Posts a receipt's claimed intents, tracked among the immediate posts. Never throws. */
  private startPosting(claimed: Promise<{ rows: Row[]; all_settlements: boolean }>, receipt: string): void {
    const posting: Promise<void> = claimed
      .then(({ rows, all_settlements }) => this.postGroup(rows, all_settlements))
      .catch((error) => this.logger.error({ err: error, receipt }, 'posting a settlement failed'))
      .finally(() => this.immediate.delete(posting));
    this.immediate.add(posting);
  }

  /** Starts a pass of the retry path now (for intents no immediate post took, and on the timer); its marks go after their linger. Never throws. */
  private drainSoon(): void {
    void this.passes().catch((error) => this.logger.error({ err: error }, 'settlement pass failed'));
  }

  /**
   * Waits for the posts in flight, then posts every due intent (coalescing concurrent requests),
   * then sends the waiting posted marks at once and waits for them: when it resolves, every
   * intent the binding took so far is marked posted, unless its mark statement failed (logged;
   * posted again after its lease).
   */
  async drain(): Promise<void> {
    try {
      await this.passes();
    } finally {
      await this.flushMarks();
    }
  }

  /** Waits for the posts in flight, then runs passes of the retry path until no due intent is left (concurrent requests share one run). */
  private passes(): Promise<void> {
    if (this.draining) {
      this.again = true;
      return this.draining;
    }
    this.draining = (async () => {
      await Promise.all(this.immediate);
      do {
        this.again = false;
        while ((await this.pass()) === this.settings.batch);
      } while (this.again);
    })().finally(() => {
      this.draining = null;
    });
    return this.draining;
  }

  /** Starts posting due intents every `poll_ms` (retries across restarts start here). */
  start(): void {
    this.timer = setInterval(() => this.drainSoon(), this.settings.poll_ms);
    this.timer.unref();
    this.drainSoon();
  }

  /** Stops the timer and waits for the posts and the pass in progress, then sends the waiting posted marks at once and waits for them. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    try {
      if (this.claiming > 0) await new Promise<void>((resolve) => this.claimsEnded.push(resolve));
      await Promise.all(this.immediate);
      await this.draining;
    } finally {
      await this.flushMarks();
    }
  }

  /**
   * The count of pending intents when it exceeds `max_pending`, else null (admission, issue 12
   * §3: the backlog stays bounded because calls that would add to it are refused). The count is
   * at most `count_ttl_ms` old and shared by concurrent callers.
   */
  async backlog(): Promise<{ pending: number; max_pending: number } | null> {
    const fresh = this.pending && Date.now() - this.pending.at_ms < this.settings.count_ttl_ms ? this.pending.count : null;
    const count = fresh ?? (await this.countPending());
    return count > this.settings.max_pending ? { pending: count, max_pending: this.settings.max_pending } : null;
  }

  /**
   * Frees every claim on pending intents; run at start-up, after restart recovery. A claim found
   * then was taken by a process that is gone, or by a live one: posting its intent again only
   * repeats an idempotent post (clearing-contract §9), while waiting out the lease would leave a
   * crashed process's settlements and holds stale for up to `lease_ms` (issue 12 §3). Answers how many.
   */
  async freeClaims(): Promise<number> {
    return this.db('gateway_settlement_intents').where({ status: 'pending' }).whereNotNull('claimed_until').update({ claimed_until: null });
  }

  private countPending(): Promise<number> {
    this.counting ??= (async () => {
      try {
        const row = await this.db('gateway_settlement_intents').where({ status: 'pending' }).count({ n: '*' }).first();
        const count = int(row?.n);
        this.pending = { count, at_ms: Date.now() };
        return count;
      } finally {
        this.counting = null;
      }
    })();
    return this.counting;
  }

  /**
   * Claims the unclaimed pending intents of one receipt, in the order they were written;
   * `all_settlements` when they include every pending settlement of the receipt (counted in the
   * same statement), so its release needs no further check once they are posted.
   */
  private async claimReceipt(receipt: string): Promise<{ rows: Row[]; all_settlements: boolean }> {
    const rows = await rawQuery(this.db, CLAIM_RECEIPT.statement, CLAIM_RECEIPT.values({ lease_ms: this.settings.lease_ms, receipt }));
    const claimed = rows.sort((a, b) => Number(a.seq) - Number(b.seq));
    const settlements = claimed.filter((row) => row.operation === 'settle').length;
    return { rows: claimed, all_settlements: claimed.length > 0 && int(claimed[0].settlements_pending) === settlements };
  }

  /**
   * One pass of the retry path: claims up to `batch` due, unclaimed intents in `seq` order (rows
   * another poster is claiming right now are skipped, not waited for), then posts them, at most
   * `concurrency` receipts at once, each receipt's intents in order. A release whose call still
   * has a settlement waiting for a retry or claimed by another poster is not claimed. Answers
   * how many intents it claimed.
   */
  private async pass(): Promise<number> {
    const { rows } = await this.db.raw(
      `UPDATE gateway_settlement_intents SET claimed_until = clock_timestamp() + (? * interval '1 millisecond')
       WHERE txn_id IN (
         SELECT i.txn_id FROM gateway_settlement_intents i
         WHERE i.status = 'pending' AND i.next_attempt_at <= clock_timestamp()
           AND (i.claimed_until IS NULL OR i.claimed_until < clock_timestamp())
           AND NOT (i.operation = 'release-hold' AND EXISTS (
             SELECT 1 FROM gateway_settlement_intents s
             WHERE s.receipt = i.receipt AND s.operation = 'settle' AND s.status = 'pending'
               AND (s.next_attempt_at > clock_timestamp() OR s.claimed_until >= clock_timestamp())))
         ORDER BY i.seq LIMIT ? FOR UPDATE SKIP LOCKED)
       RETURNING *`,
      [this.settings.lease_ms, this.settings.batch],
    );
    const groups = new Map<string, Row[]>();
    for (const row of (rows as Row[]).sort((a, b) => Number(a.seq) - Number(b.seq))) {
      const group = groups.get(row.receipt);
      if (group) group.push(row);
      else groups.set(row.receipt, [row]);
    }
    const queue = [...groups.values()];
    const worker = async () => {
      for (let group = queue.shift(); group; group = queue.shift()) await this.postGroup(group);
    };
    // Every worker ends before the pass does, even when one fails (`drain` and `stop` wait for the pass).
    const ended = await Promise.allSettled(Array.from({ length: Math.min(this.settings.concurrency, queue.length) }, worker));
    const failed = ended.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
    return rows.length;
  }

  /**
   * Posts the claimed intents of one receipt in order. A release goes only when no settlement of
   * its call is pending any more (one failing here, or one this poster did not claim: checked
   * unless `all_settlements` says every pending one is in `rows`); otherwise its claim is given
   * back and it waits for a later pass. The intents the binding took are marked posted together
   * at the end, in a statement shared with other receipts' marks ({@link markPosted}: the post
   * does not wait for it; a crash before it only posts them again: idempotent, §9).
   */
  private async postGroup(rows: Row[], all_settlements = false): Promise<void> {
    let unsettled = false;
    const posted: Row[] = [];
    try {
      for (const row of rows) {
        if (row.operation === 'release-hold' && (unsettled || (!all_settlements && (await this.settlementPending(row.receipt, posted))))) {
          await this.db('gateway_settlement_intents').where({ txn_id: row.txn_id }).update({ claimed_until: null });
          continue;
        }
        const outcome = await this.post(row);
        if (outcome === 'posted') posted.push(row);
        if (outcome === 'pending' && row.operation === 'settle') unsettled = true;
      }
    } finally {
      if (posted.length > 0) await this.markPosted(posted);
    }
  }

  /**
   * Marks intents the binding took as posted (done with), in a statement shared with the marks of
   * other receipts (issue 21 §1): a mark waits up to `mark_linger_ms` for others, or until
   * `mark_batch` intents wait, and at most {@link MARKS_IN_FLIGHT} mark statements are at the
   * database; `drain` and `stop` send the waiting marks at once and wait for them. Resolves at
   * once, so the post's place is free while its mark waits, unless a full batch already waits
   * behind the statements at the database: then when its own statement has ended, so posts cannot
   * outrun their marks (the waiting intents stay under `mark_batch` plus those of the posts in
   * flight: `concurrency` immediate posts and as many workers of a pass). Never rejects: a failed
   * statement is logged, and the intents it carried, still pending and claimed, are posted again
   * once their lease has passed, as are those whose mark a crash lost (idempotent,
   * clearing-contract §9).
   */
  private markPosted(rows: Row[]): Promise<void> {
    observeSettled(rows);
    let ended!: () => void;
    const mark: WaitingMark = { txn_ids: rows.map((row) => row.txn_id as string), marked: new Promise<void>((resolve) => (ended = resolve)), ended };
    this.marks.push(mark);
    this.marks_waiting += mark.txn_ids.length;
    this.sendMarks();
    const waiting = this.marks.at(-1) === mark;
    return waiting && this.marks_waiting >= this.settings.mark_batch ? mark.marked : Promise.resolve();
  }

  /**
   * Sends waiting marks, whole receipts up to `mark_batch` intents a statement, while they may go
   * (their linger has passed, `drain` or `stop` asked, or a full batch waits) and fewer than
   * {@link MARKS_IN_FLIGHT} statements are at the database; otherwise starts the linger of the
   * oldest waiting mark. Called again whenever a statement ends.
   */
  private sendMarks(): void {
    while (this.marks.length > 0 && this.marking.size < MARKS_IN_FLIGHT && (this.marks_due || this.marks_waiting >= this.settings.mark_batch)) {
      const batch: WaitingMark[] = [];
      let intents = 0;
      while (this.marks.length > 0 && (batch.length === 0 || intents + this.marks[0].txn_ids.length <= this.settings.mark_batch)) {
        const mark = this.marks.shift()!;
        batch.push(mark);
        intents += mark.txn_ids.length;
      }
      this.marks_waiting -= intents;
      const statement: Promise<void> = this.mark(batch.flatMap((mark) => mark.txn_ids), null)
        .catch((error) => this.logger.error({ err: error, intents }, 'marking posted intents failed: they stay claimed and are posted again once their lease has passed'))
        .finally(() => {
          this.marking.delete(statement);
          for (const mark of batch) mark.ended();
          this.sendMarks();
        });
      this.marking.add(statement);
    }
    if (this.marks.length === 0) {
      this.marks_due = false;
      if (this.linger) clearTimeout(this.linger);
      this.linger = null;
    } else if (!this.marks_due && !this.linger) {
      this.linger = setTimeout(() => {
        this.linger = null;
        this.marks_due = true;
        this.sendMarks();
      }, this.settings.mark_linger_ms);
      // A process that exits with marks waiting only has their intents posted again after the lease.
      this.linger.unref();
    }
  }

  /** Sends the waiting marks now, without their linger, and waits for them and for the mark statements at the database. Never rejects. */
  private async flushMarks(): Promise<void> {
    const ending = [...this.marking, ...this.marks.map((mark) => mark.marked)];
    if (this.marks.length > 0) this.marks_due = true;
    this.sendMarks();
    await Promise.all(ending);
  }

  /** One mark statement ({@link MARK_POSTED}); `last_error` says why when the binding did not take them. */
  private async mark(txn_ids: string[], last_error: string | null): Promise<void> {
    await rawQuery(this.db, MARK_POSTED.statement, MARK_POSTED.values({ txn_ids, last_error }));
  }

  /** Whether a settlement of `receipt` is still pending, besides those in `posted` (taken by the binding, not yet marked). */
  private async settlementPending(receipt: string, posted: readonly Row[]): Promise<boolean> {
    const query = this.db('gateway_settlement_intents').where({ receipt, operation: 'settle', status: 'pending' });
    if (posted.length > 0) query.whereNotIn('txn_id', posted.map((row) => row.txn_id));
    return (await query.first('txn_id')) !== undefined;
  }

  /**
   * Posts one intent: `posted` when the binding took it (marked by the caller), `done` when it is
   * otherwise done with (abandoned at a refusal, or nothing to release: marked here), `pending`
   * when it stays pending for a retry (marked here).
   */
  private async post(row: Row): Promise<'posted' | 'done' | 'pending'> {
    const body = typeof row.body === 'string' ? JSON.parse(row.body) : row.body;
    const attempts = int(row.attempts) + 1;
    try {
      if (row.operation === 'settle') await this.clearing.settle(body);
      else await this.clearing.releaseHold(body.holdId, body.reason);
      return 'posted';
    } catch (error) {
      const message = (error as Error).message;
      const noSuchHold = row.operation === 'release-hold' && error instanceof ClearingRefused && error.status === 404;
      if (noSuchHold && !this.mayStillOpen(body)) {
        // The hold never came to exist: there is nothing to release, and nothing is left open.
        await this.mark([row.txn_id], `nothing to release: ${message}`);
        return 'done';
      }
      const refused = error instanceof ClearingRefused && !noSuchHold;
      const give_up = refused || attempts >= this.settings.retry.max_attempts;
      const delay_ms = Math.min(this.settings.retry.base_ms * 2 ** (attempts - 1), this.settings.retry.max_ms);
      this.logger.warn({ txn_id: row.txn_id, attempts, give_up }, message);
      await this.db('gateway_settlement_intents')
        .where({ txn_id: row.txn_id })
        .update({
          status: give_up ? 'abandoned' : 'pending',
          attempts,
          last_error: give_up && !refused ? `abandoned after ${attempts} attempts: ${message}` : message,
          next_attempt_at: give_up ? null : new Date(Date.now() + delay_ms),
          claimed_until: null,
        });
      return give_up ? 'done' : 'pending';
    }
  }

  /** Whether a hold the binding does not know yet may still be opened by an open-hold whose answer was lost. */
  private mayStillOpen(body: ReleaseIntent['body']): boolean {
    return body.unknown_until !== undefined && Date.now() < Date.parse(body.unknown_until);
  }

  /** The intents, newest first, optionally of one status (the operator surface of §13). */
  async list(status?: 'pending' | 'posted' | 'abandoned') {
    const query = this.db('gateway_settlement_intents').orderBy('seq', 'desc').limit(500);
    if (status) query.where({ status });
    return (await query).map((row) => ({
      txn_id: row.txn_id,
      receipt: row.receipt,
      operation: row.operation,
      status: row.status,
      attempts: int(row.attempts),
      last_error: row.last_error ?? null,
      next_attempt_at: iso(row.next_attempt_at),
      created_at: iso(row.created_at)!,
    }));
  }
}
