/** Types of `agent-context.mjs`: what an agent reports besides its output (gateway §6). */

/** A declared error code: a lowercase letter, then `a-z0-9_`, at most 64 characters. */
export declare const ERROR_CODE_PATTERN: RegExp;

/** A failure the agent declares with a code; billing follows `interface.errors`. */
export declare class AgentError extends Error {
  constructor(code: string, message: string);
  readonly code: string;
}

/** `ctx.error(code, message?)`; throws a TypeError for an invalid code. */
export declare function agentError(code: unknown, message?: unknown): AgentError;

/** A non-negative safe integer, else a TypeError. */
export declare function toUnits(value: unknown): number;

/** A non-negative decimal string (numbers written out in decimal), else a TypeError. */
export declare function toQuote(value: unknown): string;

/** What an agent reported: summed units and its last quote, `null` when never reported. */
export interface ReportTotals {
  units: number | null;
  quote: string | null;
}

/** `ctx.units` / `ctx.quote` and their totals. */
export interface Report {
  units(n: unknown): void;
  quote(x: unknown): void;
  totals(): ReportTotals;
}

export declare function createReport(): Report;
