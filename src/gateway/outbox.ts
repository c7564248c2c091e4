/**
 * Durable settlement (clearing-contract §13 "Settling after a successful call"): every settlement
 * and hold release is written down as an intent, in the same database transaction as its
 * receipt, before it is posted; then posted under the work's identity (`settle:<receipt>`),
 * retried with a widening gap until the binding takes it, across restarts. A refusal (4xx) is a
 * fact and is not retried; an attempt still failing after `max_attempts` is abandoned with its
 * reason and kept, listed by `GET /v0/settlements?status=abandoned`.
 */
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { int, iso } from '../db/index.ts';
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

const keyOf = (intent: Intent) => (intent.operation === 'settle' ? intent.body.txnId : `release:${intent.body.holdId}`);

/** The outbox of one gateway: writes intents inside a caller's transaction and posts them after. */
export class Outbox {
  private draining: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Knex,
    private readonly clearing: ClearingPort,
    private readonly logger: Logger,
    private readonly retry: RetryPolicy = DEFAULT_RETRY,
  ) {}

  /** Writes intents in `trx` (the receipt's transaction). Idempotent on their keys. */
  async write(trx: Knex.Transaction, intents: readonly Intent[]): Promise<void> {
    if (intents.length === 0) return;
    await trx('gateway_settlement_intents')
      .insert(
        intents.map((intent) => ({
          txn_id: keyOf(intent),
          receipt: intent.receipt,
          operation: intent.operation,
          body: JSON.stringify(intent.body),
          status: 'pending',
          next_attempt_at: trx.raw('clock_timestamp()'),
        })),
      )
      .onConflict('txn_id')
      .ignore();
  }

  /** Posts every due intent now (coalescing concurrent requests); resolves when this pass is done. */
  drain(): Promise<void> {
    if (this.draining) {
      this.again = true;
      return this.draining;
    }
    this.draining = (async () => {
      do {
        this.again = false;
        await this.pass();
      } while (this.again);
    })().finally(() => {
      this.draining = null;
    });
    return this.draining;
  }

  /** Starts posting due intents every `interval_ms` (retries across restarts start here). */
  start(interval_ms = 2_000): void {
    this.timer = setInterval(() => void this.drain().catch((error) => this.logger.error({ err: error }, 'settlement pass failed')), interval_ms);
    this.timer.unref();
    void this.drain().catch((error) => this.logger.error({ err: error }, 'settlement pass failed'));
  }

  /** Stops the timer and waits for a pass in progress. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.draining;
  }

  /**
   * Posts up to 100 due intents in the order they were written (`seq`, never a timestamp). A
   * hold's release waits for every settlement of its call: it is skipped while one is still
   * pending (waiting for a retry, or failing in this pass), so the binding never frees money
   * that is about to be charged (issue 8 §1.2). A settlement abandoned for good lets it go.
   */
  private async pass(): Promise<void> {
    const due = await this.db('gateway_settlement_intents as i')
      .where('i.status', 'pending')
      .andWhere('i.next_attempt_at', '<=', this.db.raw('clock_timestamp()'))
      .whereRaw(
        `NOT (i.operation = 'release-hold' AND EXISTS (SELECT 1 FROM gateway_settlement_intents s
           WHERE s.receipt = i.receipt AND s.operation = 'settle' AND s.status = 'pending' AND s.next_attempt_at > clock_timestamp()))`,
      )
      .orderBy('i.seq')
      .limit(100)
      .select('i.*');
    const unsettled = new Set<string>();
    for (const row of due) {
      if (row.operation === 'release-hold' && unsettled.has(row.receipt)) continue;
      if (!(await this.post(row)) && row.operation === 'settle') unsettled.add(row.receipt);
    }
  }

  /** Posts one intent; true when it is done with (posted, or abandoned at a refusal), false when it stays pending. */
  private async post(row: Record<string, any>): Promise<boolean> {
    const body = typeof row.body === 'string' ? JSON.parse(row.body) : row.body;
    const attempts = int(row.attempts) + 1;
    try {
      if (row.operation === 'settle') await this.clearing.settle(body);
      else await this.clearing.releaseHold(body.holdId, body.reason);
      await this.db('gateway_settlement_intents').where({ txn_id: row.txn_id }).update({ status: 'posted', attempts, posted_at: this.db.raw('clock_timestamp()'), last_error: null, next_attempt_at: null });
      return true;
    } catch (error) {
      const message = (error as Error).message;
      const noSuchHold = row.operation === 'release-hold' && error instanceof ClearingRefused && error.status === 404;
      if (noSuchHold && !this.mayStillOpen(body)) {
        // The hold never came to exist: there is nothing to release, and nothing is left open.
        await this.db('gateway_settlement_intents').where({ txn_id: row.txn_id }).update({ status: 'posted', attempts, posted_at: this.db.raw('clock_timestamp()'), last_error: `nothing to release: ${message}`, next_attempt_at: null });
        return true;
      }
      const refused = error instanceof ClearingRefused && !noSuchHold;
      const give_up = refused || attempts >= this.retry.max_attempts;
      const delay_ms = Math.min(this.retry.base_ms * 2 ** (attempts - 1), this.retry.max_ms);
      this.logger.warn({ txn_id: row.txn_id, attempts, give_up }, message);
      await this.db('gateway_settlement_intents')
        .where({ txn_id: row.txn_id })
        .update({
          status: give_up ? 'abandoned' : 'pending',
          attempts,
          last_error: give_up && !refused ? `abandoned after ${attempts} attempts: ${message}` : message,
          next_attempt_at: give_up ? null : new Date(Date.now() + delay_ms),
        });
      return give_up;
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
