/**
 * Every check of the kit, in run order (the order of SECTIONS): targeted sections first, then
 * the run-wide scans (invariants, finality, periods, errors) so they see every answer.
 */
import type { Check } from '../check.ts';
import { accountChecks } from './accounts.ts';
import { capabilityChecks } from './capabilities.ts';
import { concurrencyChecks } from './concurrency.ts';
import { errorChecks } from './errors.ts';
import { finalityChecks } from './finality.ts';
import { idempotencyChecks } from './idempotency.ts';
import { invariantChecks } from './invariants.ts';
import { periodChecks } from './periods.ts';
import { reservationChecks } from './reservations.ts';
import { settlementChecks } from './settlements.ts';
import { transportChecks } from './transport.ts';

/** All checks, in run order; ids are unique. */
export const CHECKS: readonly Check[] = [
  ...capabilityChecks, ...transportChecks, ...accountChecks, ...settlementChecks, ...reservationChecks,
  ...idempotencyChecks, ...concurrencyChecks, ...invariantChecks, ...finalityChecks, ...periodChecks, ...errorChecks,
];
