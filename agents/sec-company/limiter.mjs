/**
 * A request limiter that holds at most `limit` requests in any window of `window_ms` as the
 * server sees them: a request holds its slot from its start until `window_ms` after its answer.
 * A server receives a request after it starts and before it answers, so counting the window from
 * the answer (rather than from the start) holds however long a request takes on the way: any
 * `limit + 1` requests reach the server at least `window_ms` apart, first to last.
 *
 * Callers beyond it wait in arrival order, at most `max_waiting` of them; one more is refused at
 * once ({@link LimiterFull}). A caller whose signal aborts leaves the line, so a wait is bounded
 * by the caller's own deadline as well. `edgar.mjs` sets the bounds (the SEC's 10 per second).
 */

/** Thrown by {@link Limiter.take} when `max_waiting` callers already wait. */
export class LimiterFull extends Error {
  /** @param {number} waiting how many wait */
  constructor(waiting) {
    super(`${waiting} requests already wait`);
    this.name = 'LimiterFull';
    this.waiting = waiting;
  }
}

/**
 * @typedef {object} Limiter
 * @property {(signal?: AbortSignal) => Promise<() => void>} take resolves when a request may start, with the
 *   `done()` to call once it is answered or failed (its slot frees `window_ms` later; later calls do nothing);
 *   rejects with {@link LimiterFull} when the line is full, with the signal's reason when it aborts first
 */

/**
 * A limiter with these bounds.
 * @param {{ limit: number, window_ms: number, max_waiting: number, now?: () => number }} bounds
 *   `now` is the clock in ms (default `Date.now`)
 * @returns {Limiter}
 */
export function createLimiter({ limit, window_ms, max_waiting, now = Date.now }) {
  /** Requests started and not yet answered. */
  let running = 0;
  /** When the requests answered in the last window were answered, oldest first (at most `limit`). */
  const answered = [];
  /** @type {Array<{ resolve: (done: () => void) => void, leave: () => void }>} */
  const line = [];
  let timer = null;

  /** Starts whoever may start now, in order; otherwise waits for an answer, or for the oldest answer to leave the window. */
  function admit() {
    clearTimeout(timer);
    timer = null;
    while (line.length > 0) {
      const at = now();
      while (answered.length > 0 && answered[0] <= at - window_ms) answered.shift();
      if (running + answered.length >= limit) {
        if (answered.length > 0) timer = setTimeout(admit, answered[0] + window_ms - at);
        return;
      }
      running += 1;
      const next = line.shift();
      next.leave();
      next.resolve(slot());
    }
  }

  /** The `done()` of one started request. */
  function slot() {
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      running -= 1;
      answered.push(now());
      admit();
    };
  }

  return {
    take(signal) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      if (line.length >= max_waiting) return Promise.reject(new LimiterFull(line.length));
      return new Promise((resolve, reject) => {
        const onAbort = () => {
          const at = line.indexOf(entry);
          if (at >= 0) line.splice(at, 1);
          reject(signal.reason);
        };
        const entry = { resolve, leave: () => signal?.removeEventListener('abort', onAbort) };
        signal?.addEventListener('abort', onAbort, { once: true });
        line.push(entry);
        admit();
      });
    },
  };
}
