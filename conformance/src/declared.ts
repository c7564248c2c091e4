/**
 * What the binding declared about itself, read defensively from its capability document (§5).
 * The document's own conformance is judged by the capability checks; this is only the part the
 * other checks plan by.
 */
import { OPERATIONS, type OperationName } from './contract.ts';
import { asObject, isInt, type Json } from './expect.ts';

/** The parts of the capability document that decide which checks apply and how. */
export interface Declared {
  /** The document as received. */
  readonly doc: Json;
  /** Operations listed in `operations` that the contract knows. */
  readonly operations: ReadonlySet<OperationName>;
  /** `finality`, or null when it is neither `immediate` nor `deferred`. */
  readonly finality: 'immediate' | 'deferred' | null;
  /** Whether the binding declares periods: `period` is an object (§5, §12.1). */
  readonly periods: boolean;
  /** `negative_balance`; only an explicit false counts as false (§6.8, invariant 10). */
  readonly negative_balance: boolean;
  /** The smallest single amount the binding takes (`limits.min_amount`, at least 1). */
  readonly min_amount: number;
  /** The largest single amount, or null when unbounded (`limits.max_amount`). */
  readonly max_amount: number | null;
}

/**
 * Reads a capability document. Answers null when it is unusable for planning: not an object,
 * or `operations` is not an array.
 */
export function readDeclared(body: unknown): Declared | null {
  const doc = asObject(body);
  if (doc === null || !Array.isArray(doc.operations)) return null;
  const listed = new Set<string>(doc.operations.filter((op): op is string => typeof op === 'string'));
  const limits = asObject(doc.limits);
  const min = limits?.min_amount;
  const max = limits?.max_amount;
  return {
    doc,
    operations: new Set(OPERATIONS.filter((op) => listed.has(op))),
    finality: doc.finality === 'immediate' || doc.finality === 'deferred' ? doc.finality : null,
    periods: asObject(doc.period) !== null,
    negative_balance: doc.negative_balance !== false,
    min_amount: isInt(min) && min > 1 ? min : 1,
    max_amount: isInt(max) ? max : null,
  };
}
