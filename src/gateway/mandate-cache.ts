/**
 * The root mandates a process has read, kept for a few seconds (issue 21 §1: a billed call's
 * only read was its mandate's row, one transaction of the ~3 a call cost under load).
 *
 * What is kept is the stored document, its normalized form and its payer, never the budget's
 * figures: those move with every call and are checked where they are written (`RESERVE_CTES`
 * re-checks the row's own `total_micros − spent − reserved` under its lock), so a kept mandate
 * can never let a call overrun a budget. A root mandate's document does not change once stored
 * (`storeMandate` keeps the first one, and the hosted gateway refuses an id that exists); the
 * one exception is the dev gateway's example mandates, replaced at its start, which other
 * processes on the same database see within {@link MANDATE_CACHE_TTL_MS}. A mandate that does
 * not exist is not kept: it may be created the next moment.
 *
 * Bounds: at most {@link MANDATE_CACHE_MAX} mandates (the oldest read goes first), each kept
 * {@link MANDATE_CACHE_TTL_MS}.
 */
import type { Knex } from 'knex';
import { loadMandate, type StoredMandate } from './mandates.ts';

/** How long a read root mandate is kept, in milliseconds. */
export const MANDATE_CACHE_TTL_MS = 5_000;

/** Most root mandates kept at once (a few KiB each). */
export const MANDATE_CACHE_MAX = 10_000;

/** Root mandates read by this process, each kept {@link MANDATE_CACHE_TTL_MS} (see the module comment). */
export class MandateCache {
  /** By id, in the order they were read (a Map keeps insertion order: the first is the oldest). */
  private readonly kept = new Map<string, { mandate: StoredMandate; until_ms: number }>();

  constructor(
    private readonly db: Knex,
    private readonly ttl_ms = MANDATE_CACHE_TTL_MS,
    private readonly max = MANDATE_CACHE_MAX,
  ) {}

  /**
   * The root mandate `id` (document, normalized form, payer; no figures) as read at most
   * `ttl_ms` ago, else read now (`loadMandate`: null for a mandate that does not exist or is not
   * a root, throws ContractError for a stored document no longer valid; neither is kept).
   */
  async get(id: string): Promise<StoredMandate | null> {
    const now_ms = Date.now();
    const entry = this.kept.get(id);
    if (entry && entry.until_ms > now_ms) return entry.mandate;
    const loaded = await loadMandate(this.db, id);
    this.kept.delete(id);
    if (!loaded) return null;
    const mandate: StoredMandate = { id: loaded.id, document: loaded.document, mandate: loaded.mandate, parent: loaded.parent, payer: loaded.payer };
    if (this.kept.size >= this.max) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(id, { mandate, until_ms: now_ms + this.ttl_ms });
    return mandate;
  }
}
