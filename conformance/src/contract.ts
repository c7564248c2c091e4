/**
 * Facts of the clearing contract the kit checks against: operation names, which are REQUIRED,
 * the §7.2 error vocabulary and the fields that carry amounts. One place, so every check reads
 * the same table (clearing-contract §5, §6, §7.2, invariant 7).
 */
import type { ErrorCode, OperationName } from '../../generated/clearing/client/types.gen.ts';

export type { ErrorCode, OperationName };

/** The version of the clearing contract these checks hold a binding to (§5 `contract`). */
export const CONTRACT_VERSION = '1';

/** Every operation of §6, in the order §5's example lists them. */
export const OPERATIONS: readonly OperationName[] = [
  'resolve-account', 'read-balance', 'read-summary', 'read-settlement',
  'list-reservations', 'read-reservation',
  'credit', 'settle', 'reverse', 'adjust',
  'open-hold', 'resize-hold', 'draw', 'release-hold',
];

/** The four operations every binding MUST offer (§5, `operations`). */
export const REQUIRED_OPERATIONS: readonly OperationName[] = [
  'resolve-account', 'read-balance', 'read-settlement', 'settle',
];

/** Operations whose accepted response carries `applied` and MAY carry `state` (§6, §10.2). */
export const VALUE_MOVING: readonly OperationName[] = ['credit', 'settle', 'reverse', 'adjust', 'draw'];

/** Operations on a hold; they are immediate on every binding (§10.6). */
export const HOLD_WRITES: readonly OperationName[] = ['open-hold', 'resize-hold', 'release-hold'];

/** Reads that carry balance figures and therefore `period` in a binding with periods (§12.1). */
export const BALANCE_BEARING_READS: readonly OperationName[] = [
  'read-balance', 'read-summary', 'read-settlement', 'list-reservations', 'read-reservation',
];

/** What a reverse proxy adds to a request that came from outside; the §3 gate refuses it. */
export const FORWARDED: Readonly<Record<string, string>> = { 'x-forwarded-for': '203.0.113.7' };

/** The §7.2 vocabulary: each code and the HTTP status it travels with. */
export const ERROR_STATUS: Readonly<Record<ErrorCode, number>> = {
  not_permitted: 403,
  not_offered: 404,
  no_such_object: 404,
  no_such_route: 404,
  invalid_request: 422,
  insufficient_funds: 422,
  terms_conflict: 422,
  already_reversed: 422,
  not_reversible: 422,
  closed: 422,
  internal_error: 500,
};

/** Whether `code` is one of the §7.2 codes (a binding MAY add its own; §7.2 last paragraph). */
export function isKnownCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_STATUS, code);
}

/**
 * Response fields that hold amounts or counts and so MUST be JSON integers wherever they appear
 * (§3 "All amounts are JSON integers", invariant 7).
 */
export const AMOUNT_FIELDS: readonly string[] = [
  'balance', 'available', 'reserved', 'pending', 'amount', 'drawn', 'delta', 'billed', 'refused',
  'remaining', 'released', 'count', 'per', 'per_unit',
];
