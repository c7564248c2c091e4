/**
 * The reference binding's capability document (clearing-contract §5): what it does, told truly.
 * The operations listed are exactly those the app mounts handlers for.
 */
import type { OperationResult } from '../../generated/clearing/server.ts';
import { MAX_AMOUNT_MICROS } from '../contracts/money.ts';
import { FUNDING } from './accounts.ts';

type Capabilities = OperationResult<'capabilities'>;
/** A contract operation name (§6). */
export type OperationName = Capabilities['operations'][number];

/** Every operation of §6, all of which the reference binding offers by default. */
export const ALL_OPERATIONS: readonly OperationName[] = [
  'resolve-account',
  'read-balance',
  'read-summary',
  'read-settlement',
  'list-reservations',
  'read-reservation',
  'credit',
  'settle',
  'reverse',
  'adjust',
  'open-hold',
  'resize-hold',
  'draw',
  'release-hold',
];

/** The four operations every binding must offer (§5). */
export const REQUIRED_OPERATIONS: readonly OperationName[] = ['resolve-account', 'read-balance', 'read-settlement', 'settle'];

/** The implementation string of the capability document. */
export const IMPLEMENTATION = 'holon-reference-binding 0.1.0';

/** The capability document for a binding offering `operations`. */
export function capabilityDocument(operations: readonly OperationName[]): Capabilities {
  return {
    contract: '1',
    implementation: IMPLEMENTATION,
    unit: { code: 'EUR', display: 'euro, in micro-units', scale: 6, peg: null },
    operations: [...operations],
    finality: 'immediate',
    notifications: ['poll'],
    funding: operations.includes('credit') ? FUNDING : [],
    payout: false,
    negative_balance: true,
    // Larger amounts are refused at the door (the schema's `maximum`): see MAX_AMOUNT_MICROS.
    limits: { min_amount: 1, max_amount: MAX_AMOUNT_MICROS },
    pending_max_seconds: null,
  };
}
