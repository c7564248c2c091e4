/** Types of `limiter.mjs`: at most `limit` requests in any window as the server sees them, with a bounded line. */

/** Thrown by {@link Limiter.take} when `max_waiting` callers already wait. */
export declare class LimiterFull extends Error {
  constructor(waiting: number);
  readonly waiting: number;
}

/** A request holds its slot from its start until `window_ms` after its answer; at most `max_waiting` callers wait. */
export interface Limiter {
  /**
   * Resolves when a request may start, with the `done()` to call once it is answered or failed;
   * rejects with {@link LimiterFull}, or the signal's reason when it aborts first.
   */
  take(signal?: AbortSignal): Promise<() => void>;
}

/** A limiter with these bounds; `now` is the clock in ms (default `Date.now`). */
export declare function createLimiter(bounds: { limit: number; window_ms: number; max_waiting: number; now?: () => number }): Limiter;
