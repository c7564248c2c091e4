/**
 * The operations explore generates, as data: each names its identifiers by slot (`s2`, the third
 * settle id of a run; `h0`, the first hold), so a later operation can replay an earlier one with
 * the same or other terms, reverse it, read it or draw on it, and shrinking a history never
 * leaves a dangling reference (an id nobody created is simply unknown to the binding, §6.4).
 * A history is a list of steps; the operations of one step are sent together.
 */
import fc from 'fast-check';
import type { OperationName } from '../contract.ts';

/** Slots per kind of identifier: few enough that ids collide (replays, conflicts), enough to vary. */
export const SLOTS = { credit: 3, settle: 5, draw: 5, reverse: 3, hold: 3 } as const;

/** A transaction identifier by kind and slot. */
export interface TxnSlot {
  readonly kind: 'credit' | 'settle' | 'draw' | 'reverse';
  readonly n: number;
}

/** One contract operation with its arguments; amounts in the binding's units (already × `limits.min_amount`). */
export type Op =
  | { readonly op: 'credit'; readonly c: number; readonly amount: number }
  | { readonly op: 'settle'; readonly s: number; readonly retail: number; readonly rate: number }
  | { readonly op: 'reverse'; readonly r: number; readonly target: TxnSlot }
  | { readonly op: 'open-hold'; readonly h: number; readonly amount: number }
  | { readonly op: 'resize-hold'; readonly h: number; readonly amount: number }
  | { readonly op: 'draw'; readonly d: number; readonly h: number; readonly lines: readonly number[] }
  | { readonly op: 'release-hold'; readonly h: number }
  | { readonly op: 'read-balance'; readonly who: 'payer' | 'payee' }
  | { readonly op: 'read-settlement'; readonly target: TxnSlot }
  | { readonly op: 'read-reservation'; readonly h: number };

/** A history: steps run one after another, the operations of a step concurrently. */
export type History = readonly (readonly Op[])[];

/** What shapes the generated histories. */
export interface HistoryShape {
  /** Operations the binding offers (§5); only these are generated. */
  readonly offered: ReadonlySet<OperationName>;
  /** Most operations in one step (`--concurrency`), 1..16. */
  readonly concurrency: number;
  /** The binding's smallest amount (`limits.min_amount`); every amount is a multiple of it. */
  readonly unit: number;
  /** Most steps in one history. */
  readonly maxSteps: number;
}

/** The run-unique identifier of a slot, e.g. `xk3-s2` (§9: ids are the caller's, forever). */
export function idOf(prefix: string, slot: string): string {
  return `${prefix}-${slot}`;
}

/** The slot name of a transaction reference, e.g. `s2` for the third settle slot. */
export function slotName(slot: TxnSlot): string {
  return `${slot.kind === 'settle' ? 's' : slot.kind === 'credit' ? 'c' : slot.kind === 'draw' ? 'd' : 'r'}${slot.n}`;
}

/** The fast-check arbitrary of histories for a binding of this shape. */
export function historyArbitrary(shape: HistoryShape): fc.Arbitrary<History> {
  const op = opArbitrary(shape);
  return fc.array(fc.array(op, { minLength: 1, maxLength: shape.concurrency }), { minLength: 1, maxLength: shape.maxSteps });
}

function opArbitrary(shape: HistoryShape): fc.Arbitrary<Op> {
  const u = shape.unit;
  // Unbiased: fast-check leans to small integers, and a race for available needs holds of any size.
  const units = (max: number): fc.Arbitrary<number> => fc.noBias(fc.integer({ min: 1, max })).map((k) => k * u);
  const slot = (n: number): fc.Arbitrary<number> => fc.integer({ min: 0, max: n - 1 });
  const has = (name: OperationName): boolean => shape.offered.has(name);
  const txnKinds: TxnSlot['kind'][] = ['settle'];
  if (has('credit')) txnKinds.push('credit');
  if (has('draw')) txnKinds.push('draw');
  if (has('reverse')) txnKinds.push('reverse');
  const txnSlot: fc.Arbitrary<TxnSlot> = fc.constantFrom(...txnKinds).chain((kind) => slot(SLOTS[kind]).map((n) => ({ kind, n })));
  const choices: fc.WeightedArbitrary<Op>[] = [
    { weight: 4, arbitrary: fc.record({ s: slot(SLOTS.settle), retail: units(30), margin: fc.integer({ min: 0, max: 3 }) })
      .map(({ s, retail, margin }) => ({ op: 'settle' as const, s, retail, rate: Math.max(u, retail - margin * u) })) },
    { weight: 2, arbitrary: fc.constantFrom<'payer' | 'payee'>('payer', 'payee').map((who) => ({ op: 'read-balance' as const, who })) },
    { weight: 1, arbitrary: txnSlot.map((target) => ({ op: 'read-settlement' as const, target })) },
  ];
  if (has('credit')) {
    choices.push({ weight: 2, arbitrary: fc.record({ c: slot(SLOTS.credit), amount: units(60) }).map((a) => ({ op: 'credit' as const, ...a })) });
  }
  if (has('reverse')) {
    choices.push({ weight: 2, arbitrary: fc.record({ r: slot(SLOTS.reverse), target: txnSlot }).map((a) => ({ op: 'reverse' as const, ...a })) });
  }
  if (has('open-hold')) {
    choices.push({ weight: 4, arbitrary: fc.record({ h: slot(SLOTS.hold), amount: units(80) }).map((a) => ({ op: 'open-hold' as const, ...a })) });
  }
  if (has('resize-hold')) {
    choices.push({ weight: 1, arbitrary: fc.record({ h: slot(SLOTS.hold), amount: units(80) }).map((a) => ({ op: 'resize-hold' as const, ...a })) });
  }
  if (has('draw')) {
    choices.push({ weight: 3, arbitrary: fc.record({ d: slot(SLOTS.draw), h: slot(SLOTS.hold), lines: fc.array(units(20), { minLength: 1, maxLength: 3 }) })
      .map((a) => ({ op: 'draw' as const, ...a })) });
  }
  if (has('release-hold')) {
    choices.push({ weight: 1, arbitrary: slot(SLOTS.hold).map((h) => ({ op: 'release-hold' as const, h })) });
  }
  if (has('read-reservation')) {
    choices.push({ weight: 1, arbitrary: slot(SLOTS.hold).map((h) => ({ op: 'read-reservation' as const, h })) });
  }
  return fc.oneof(...choices);
}

/** The contract operation an op is sent as. */
export function operationOf(op: Op): OperationName {
  return op.op;
}

/** Whether an op is a read (safe to repeat, never faulted into a second effect). */
export function isRead(op: Op): boolean {
  return op.op.startsWith('read-');
}

/** One op in words with its ids, for a failure report, e.g. `settle xk3-s2 retail 5 rate 4`. */
export function describeOp(op: Op, prefix: string): string {
  const id = (slot: string): string => idOf(prefix, slot);
  const txn = (t: TxnSlot): string => id(slotName(t));
  switch (op.op) {
    case 'credit': return `credit ${id(`c${op.c}`)} of ${op.amount} to the payer`;
    case 'settle': return `settle ${id(`s${op.s}`)}: retail ${op.retail}, rate ${op.rate}`;
    case 'reverse': return `reverse ${id(`r${op.r}`)} undoing ${txn(op.target)}`;
    case 'open-hold': return `open-hold ${id(`h${op.h}`)} of ${op.amount}`;
    case 'resize-hold': return `resize-hold ${id(`h${op.h}`)} to ${op.amount}`;
    case 'draw': return `draw ${id(`d${op.d}`)} on ${id(`h${op.h}`)}: lines ${op.lines.join(', ')}`;
    case 'release-hold': return `release-hold ${id(`h${op.h}`)}`;
    case 'read-balance': return `read-balance of the ${op.who}`;
    case 'read-settlement': return `read-settlement ${txn(op.target)}`;
    case 'read-reservation': return `read-reservation ${id(`h${op.h}`)}`;
  }
}
