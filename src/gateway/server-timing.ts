/**
 * The phases of one call as a `Server-Timing` header (W3C Server Timing), when the operator turns
 * it on with `HOLON_SERVER_TIMING=1` (issue 12 §2 "say where the time goes"): each phase of
 * gateway §1 the call went through, in order, with its wall time in milliseconds, then `total`
 * (from the mandate read to the receipt written). Root calls only (a downstream call's time is
 * in its orchestrator's `run`); answers refused before the mandate is read carry none. Off by
 * default: a caller learns how long the database and the binding took only if the operator asks.
 *
 * Phases: `mandate` (read the mandate, draw the receipt id), `admit` (resolve, check input, admit,
 * derive the sub-mandate), `reserve` (the budget and the `running` receipt, one statement),
 * `hold` (open-hold at the binding), `run` (the agent, its downstream calls included), `finish`
 * (check the output, the charge, the receipt with its settlement intents, one statement). A call
 * stopped early lists only the phases it finished.
 */

/** Whether `HOLON_SERVER_TIMING` turns the header on (`1`); anything but unset, empty, `0` or `1` throws, naming the variable. */
export function serverTimingFromEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  const text = env.HOLON_SERVER_TIMING ?? '';
  if (text === '' || text === '0') return false;
  if (text === '1') return true;
  throw new Error(`HOLON_SERVER_TIMING must be 1 (on) or 0 (off), not ${JSON.stringify(text)}`);
}

/** A call's phase names, in the order gateway §1 runs them (and the header lists them). */
export const PHASES = ['mandate', 'admit', 'reserve', 'hold', 'run', 'finish'] as const;

/** One of {@link PHASES}. */
export type Phase = (typeof PHASES)[number];

/** The wall time of each phase of one call, measured from one mark to the next. */
export class PhaseClock {
  readonly #started_ms = performance.now();
  #last_ms = this.#started_ms;
  readonly #phases: Array<[Phase, number]> = [];

  /** Ends `phase` now: its duration is the time since the previous mark (or the start). */
  mark(phase: Phase): void {
    const now_ms = performance.now();
    this.#phases.push([phase, now_ms - this.#last_ms]);
    this.#last_ms = now_ms;
  }

  /** The header value, e.g. `mandate;dur=0.91, admit;dur=0.12, …, total;dur=9.80` (ms, two decimals). */
  header(): string {
    const entries = [...this.#phases, ['total', performance.now() - this.#started_ms] as const];
    return entries.map(([name, ms]) => `${name};dur=${ms.toFixed(2)}`).join(', ');
  }
}
