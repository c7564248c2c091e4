/**
 * What a check is and what running one produces. A check is one rule of the contract observed
 * over the wire, with a stable id, the section it cites and its RFC 2119 level.
 */
import type { OperationName } from './contract.ts';
import type { CheckContext } from './context.ts';
import type { Verdict } from './expect.ts';
import type { Exchange } from './http.ts';

/** MUST checks decide the exit code; a failed SHOULD is reported and is not fatal. */
export type Level = 'MUST' | 'SHOULD';

/**
 * pass: the rule held and the check proved it. fail: the binding broke the rule.
 * skip: the rule does not apply (operation not offered, access "other", ...).
 * warn: the check could not set up its case (e.g. funding ran out), so it proved nothing.
 */
export type Outcome = 'pass' | 'fail' | 'skip' | 'warn';

/** The report's grouping of checks, in the order they run. */
export type SectionName =
  | 'capabilities' | 'transport' | 'accounts' | 'settlements' | 'reservations' | 'idempotency'
  | 'concurrency' | 'invariants' | 'finality' | 'periods' | 'errors' | 'explore';

/** Every section, in run order, with the contract sections it covers. */
export const SECTIONS: readonly { readonly name: SectionName; readonly cites: string }[] = [
  { name: 'capabilities', cites: '§5, §11' },
  { name: 'transport', cites: '§3, §7.1' },
  { name: 'accounts', cites: '§6.1-§6.3' },
  { name: 'settlements', cites: '§6.4, §6.7-§6.10' },
  { name: 'reservations', cites: '§6.5, §6.6, §6.11-§6.15' },
  { name: 'idempotency', cites: '§9' },
  { name: 'concurrency', cites: '§8.4, §9, §6.11' },
  { name: 'invariants', cites: '§8' },
  { name: 'finality', cites: '§10' },
  { name: 'periods', cites: '§12' },
  { name: 'errors', cites: '§7' },
  { name: 'explore', cites: '§6, §8, §9' },
];

/** One rule, observed over the wire. */
export interface Check {
  /** Stable identifier, `area.rule`, e.g. `idempotency.settle-replay`. Never reused. */
  readonly id: string;
  readonly section: SectionName;
  /** The contract sections the rule comes from, e.g. `§6.8, §9`. */
  readonly cite: string;
  readonly level: Level;
  /** The rule in one sentence, as the report prints it. */
  readonly title: string;
  /** Operations the check calls; it is skipped (with the reason) when any is not offered. */
  readonly needs?: readonly OperationName[];
  /**
   * Runs the check. Returns normally on pass; throws CheckFailed, Inconclusive or
   * NotApplicable (see expect.ts) for the other outcomes.
   */
  run(ctx: CheckContext): Promise<void>;
}

/** Declares the checks of one section: each gets `section` filled in. */
export function checksOf(section: SectionName, checks: readonly Omit<Check, 'section'>[]): readonly Check[] {
  return checks.map((check) => ({ ...check, section }));
}

/** The most requests of one check a failure lists (a concurrency check sends hundreds); the rest are counted. */
export const MAX_FAILURE_REQUESTS = 200;

/** Why a check failed: its verdict, and every request it sent, so the case can be rebuilt from the report alone. */
export interface Failure extends Verdict {
  /** Every request the check sent, in the order sent, at most {@link MAX_FAILURE_REQUESTS}; each reproduces with `curlFor`. */
  readonly requests: readonly Exchange[];
  /** How many requests the check sent in all (more than `requests.length` when some were left out). */
  readonly requests_sent: number;
  /** Explore only: the shortest failing history, step by step; the requests of one step were sent together. */
  readonly steps?: readonly (readonly Exchange[])[];
}

/** The outcome of one check in one run. */
export interface CheckResult {
  readonly id: string;
  readonly section: SectionName;
  readonly cite: string;
  readonly level: Level;
  readonly title: string;
  readonly outcome: Outcome;
  /** Why the check was skipped or warned; null on pass and fail. */
  readonly reason: string | null;
  /** Present exactly when outcome is `fail`. */
  readonly failure: Failure | null;
  readonly duration_ms: number;
}
