/**
 * Reads `holon-conformance explore`'s flags into ExploreOptions: durations like `60s`, `5m` or
 * `1500ms`, integers in range, fault kinds. A bad flag is a ConfigError (exit 2) naming it.
 */
import { ConfigError } from '../config.ts';
import type { ExploreFlags } from '../program.ts';
import { parseFaults } from './proxy.ts';
import type { ExploreOptions } from './run.ts';

/** Longest `--budget` or `--shrink-budget`: 24 hours, in milliseconds. */
const MAX_DURATION_MS = 86_400_000;

/** The options the flags name; throws ConfigError for the first bad one. */
export function exploreOptions(flags: ExploreFlags): Omit<ExploreOptions, 'onProgress'> {
  let faults: ExploreOptions['faults'] = [];
  try {
    faults = flags.faults === undefined ? [] : parseFaults(flags.faults);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  return {
    seed: flags.seed === undefined ? undefined : integer(flags.seed, '--seed', 0, 2_147_483_647),
    budget_ms: duration(flags.budget, '--budget'),
    shrink_ms: duration(flags.shrinkBudget, '--shrink-budget'),
    concurrency: integer(flags.concurrency, '--concurrency', 1, 16),
    max_requests: integer(flags.maxRequests ?? '500000', '--max-requests', 1, Number.MAX_SAFE_INTEGER),
    fault_percent: flags.faultRate === undefined ? undefined : integer(flags.faultRate, '--fault-rate', 1, 50),
    faults,
  };
}

/** `90`, `90s`, `5m`, `1500ms` or `1h` as milliseconds, from 1 ms to 24 h. */
export function duration(text: string, flag: string): number {
  const match = /^(\d+)(ms|s|m|h)?$/.exec(text.trim());
  const scale = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;
  const ms = match === null ? Number.NaN : Number(match[1]) * scale[(match[2] ?? 's') as keyof typeof scale];
  if (!Number.isSafeInteger(ms) || ms < 1 || ms > MAX_DURATION_MS) {
    throw new ConfigError(`${flag} must be a duration such as 60s, 5m or 1500ms, at most 24h; got ${JSON.stringify(text)}`);
  }
  return ms;
}

function integer(text: string, flag: string, min: number, max: number): number {
  const value = /^\d+$/.test(text.trim()) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) throw new ConfigError(`${flag} must be an integer from ${min} to ${max}; got ${JSON.stringify(text)}`);
  return value;
}
