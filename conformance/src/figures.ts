/**
 * An account's figures as one read-balance answers them (§6.2), and the assertion that compares
 * two readings of them.
 */
import { ensure, type Evidence } from './expect.ts';
import type { Reply } from './wire.ts';

/** An account's figures from read-balance (§6.2); `pending` absent reads as 0. */
export interface Figures {
  readonly balance: number;
  readonly available: number;
  readonly reserved: number;
  readonly pending: number;
  readonly reply: Reply;
}

/**
 * Throws CheckFailed unless `field` moved by exactly `expected` between two reads of the same
 * account. The kit checks deltas, never absolute balances.
 */
export function ensureMoved(
  what: string, field: 'balance' | 'available' | 'reserved',
  before: Figures, after: Figures, expected: number, ...evidence: Evidence[]
): void {
  const moved = after[field] - before[field];
  ensure(moved === expected, `${what}: ${field} moved by ${moved}`,
    `${field} to move by ${expected} (${before[field]} → ${before[field] + expected})`,
    `${before[field]} → ${after[field]}`, before.reply, ...evidence, after.reply);
}
