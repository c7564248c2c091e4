/**
 * The model explore checks a binding against, written from `clearing-contract` alone: the payer's
 * and the payee's figures, the transactions and holds a history created, and for each operation
 * every answer the contract allows with the state it leaves (§6, §7.2, §8, §9). Immediate
 * finality only (§10: a binding that settles later is out of explore's reach; the CLI says so).
 *
 * Amounts in the model are the binding's own integer units (invariant 7), already multiplied by
 * the declared `limits.min_amount`.
 */
import { REFUSED as REFUSED_RULE } from '../expect.ts';
import { idOf, slotName, type Op } from './ops.ts';

/** An account's figures as read-balance answers them (§6.2); pending is 0 in an immediate binding. */
export interface ModelAccount {
  readonly balance: number;
  readonly reserved: number;
}

/** What the model remembers of one accepted value-moving transaction (§6.4, §9). */
export interface ModelTxn {
  readonly kind: 'credit' | 'settle' | 'draw' | 'reverse';
  /** The request's terms, to tell a replay from a reuse with other terms (§9). */
  readonly terms: string;
  /** What read-settlement answers as `amount`, and what a reversal of it answers (§6.4, §6.9). */
  readonly amount: number;
  /** How the payer's and the payee's balances moved. */
  readonly payer: number;
  readonly payee: number;
  /** A draw's hold, billed figure and `remaining` as first answered (§6.13 replay). */
  readonly hold: string | null;
  readonly remaining: number | null;
  /** The reversal that undid it (§6.9 `reversed_by`), or null. */
  readonly reversedBy: string | null;
  /** For a reversal: the transaction it undid. */
  readonly reverses: string | null;
}

/** A hold on the payer's account (§6.11): its cap, what was drawn, open or released. */
export interface ModelHold {
  readonly amount: number;
  /** The cap it was opened with: its terms under §9. */
  readonly opened: number;
  readonly drawn: number;
  readonly open: boolean;
}

/** The whole state the model tracks; immutable, each step answers a new one. */
export interface ModelState {
  readonly payer: ModelAccount;
  readonly payee: ModelAccount;
  readonly txns: Readonly<Record<string, ModelTxn>>;
  readonly holds: Readonly<Record<string, ModelHold>>;
}

/**
 * One answer the contract allows, as a predicate over the reply: `accepted` (200) with `applied`
 * (true, false, or either after a fault) and fields that must equal the model's figures, or
 * `refused` with a status and code (§7.2; `own` admits a code of the binding's own).
 */
export type Expected =
  | { readonly kind: 'accepted'; readonly applied: boolean | 'either'; readonly fields: Readonly<Record<string, unknown>> }
  | { readonly kind: 'refused'; readonly status: readonly number[]; readonly codes: readonly string[]; readonly own: boolean }
  | { readonly kind: 'read'; readonly status: 200 | 404; readonly fields: Readonly<Record<string, unknown>>; readonly legsSumZero?: boolean };

/** One possible outcome of an operation: the answer it gives and the state it leaves. */
export interface Outcome {
  readonly expected: Expected;
  readonly next: ModelState;
  /** The explore property this outcome's answer speaks to (see properties.ts). */
  readonly property: PropertyId;
}

/** The properties explore reports, one JUnit test case each. */
export type PropertyId = 'explore.answers' | 'explore.once' | 'explore.no-overcommit' | 'explore.within-cap' | 'explore.figures';

/** A refusal of a request naming an object that does not exist (§7.2 no_such_object, or invalid_request). */
const NO_OBJECT: Expected = { kind: 'refused', status: [404, 422], codes: ['no_such_object', 'invalid_request', 'closed'], own: true };
/** A refusal the contract names no code for (a draw on a released hold...): the scripted checks' rule. */
const REFUSED: Expected = { kind: 'refused', status: REFUSED_RULE.status, codes: REFUSED_RULE.codes, own: true };
const code = (c: string): Expected => ({ kind: 'refused', status: [422], codes: [c], own: false });

/** The state a history starts from: the accounts' figures as read, nothing created yet. */
export function initialState(payer: ModelAccount, payee: ModelAccount): ModelState {
  return { payer, payee, txns: {}, holds: {} };
}

/**
 * A state as a string that two equal states share whatever order their ids were created in
 * (ids sorted), so the orders of a step that end in one state are explored once.
 */
export function stateKey(state: ModelState): string {
  const sorted = <T>(record: Readonly<Record<string, T>>): [string, T][] => Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([state.payer, state.payee, sorted(state.txns), sorted(state.holds)]);
}

/** What read-balance answers for an account in this state (§6.2: available = balance - reserved - pending). */
export function figuresOf(account: ModelAccount): Record<string, number> {
  return { balance: account.balance, available: account.balance - account.reserved, reserved: account.reserved };
}

/** Every outcome the contract allows for `op` on `state`; `prefix` makes the run's ids. */
export function outcomes(state: ModelState, op: Op, prefix: string): readonly Outcome[] {
  const id = (slot: string): string => idOf(prefix, slot);
  const same = (expected: Expected, property: PropertyId = 'explore.answers'): Outcome[] => [{ expected, next: state, property }];
  switch (op.op) {
    case 'read-balance': {
      const account = op.who === 'payer' ? state.payer : state.payee;
      return same({ kind: 'read', status: 200, fields: figuresOf(account) }, 'explore.figures');
    }
    case 'read-settlement': {
      const txn = state.txns[id(slotName(op.target))];
      if (txn === undefined) return same({ kind: 'read', status: 200, fields: { state: 'unknown' } });
      const record: Outcome = { expected: { kind: 'read', status: 200, fields: { state: 'settled', amount: txn.amount, reversed_by: txn.reversedBy }, legsSumZero: true }, next: state, property: 'explore.answers' };
      // A draw that billed nothing moved nothing: a binding may keep no settlement for it.
      return txn.amount === 0 ? [record, ...same({ kind: 'read', status: 200, fields: { state: 'unknown' } })] : [record];
    }
    case 'read-reservation': {
      const hold = state.holds[id(`h${op.h}`)];
      if (hold === undefined) return same({ kind: 'read', status: 404, fields: { code: 'no_such_object' } });
      return same({ kind: 'read', status: 200, fields: { amount: hold.amount, drawn: hold.drawn, status: hold.open ? 'open' : 'released' } }, 'explore.within-cap');
    }
    case 'credit': return credit(state, id(`c${op.c}`), op.amount);
    case 'settle': return settle(state, id(`s${op.s}`), op.retail, op.rate);
    case 'reverse': return reverse(state, id(`r${op.r}`), id(slotName(op.target)));
    case 'open-hold': return openHold(state, id(`h${op.h}`), op.amount);
    case 'resize-hold': return resizeHold(state, id(`h${op.h}`), op.amount);
    case 'draw': return draw(state, id(`d${op.d}`), id(`h${op.h}`), op.lines);
    case 'release-hold': return releaseHold(state, id(`h${op.h}`));
  }
}

/** §9: a reused id with the same terms is a replay (applied false); with other terms a replay or a refusal, never applied. */
function replayOf(state: ModelState, txn: ModelTxn, terms: string, fields: Record<string, unknown>): Outcome[] {
  if (txn.terms === terms) return [{ expected: { kind: 'accepted', applied: false, fields }, next: state, property: 'explore.once' }];
  // Other terms: a replay or a refusal, never an effect; the refusal may name what the new terms
  // point at (a draw naming a hold that does not exist answers no_such_object).
  return [
    { expected: { kind: 'accepted', applied: false, fields: {} }, next: state, property: 'explore.once' },
    { expected: REFUSED, next: state, property: 'explore.once' },
    { expected: NO_OBJECT, next: state, property: 'explore.once' },
  ];
}

function withTxn(state: ModelState, txnId: string, txn: ModelTxn, payer: ModelAccount, payee: ModelAccount): ModelState {
  return { ...state, payer, payee, txns: { ...state.txns, [txnId]: txn } };
}

function move(account: ModelAccount, delta: number): ModelAccount {
  return { ...account, balance: account.balance + delta };
}

/** §6.7 credit: value into the payer's account, keyed by the payment's id. */
function credit(state: ModelState, txnId: string, amount: number): Outcome[] {
  const terms = `credit:${amount}`;
  const seen = state.txns[txnId];
  if (seen !== undefined) return replayOf(state, seen, terms, {});
  const txn: ModelTxn = { kind: 'credit', terms, amount, payer: amount, payee: 0, hold: null, remaining: null, reversedBy: null, reverses: null };
  return [{ expected: { kind: 'accepted', applied: true, fields: {} }, next: withTxn(state, txnId, txn, move(state.payer, amount), state.payee), property: 'explore.once' }];
}

/** §6.8 settle: the payer pays retail, the payee earns rate; never refused for funds (invariant 10). */
function settle(state: ModelState, txnId: string, retail: number, rate: number): Outcome[] {
  const terms = `settle:${retail}:${rate}`;
  const seen = state.txns[txnId];
  if (seen !== undefined) return replayOf(state, seen, terms, {});
  const txn: ModelTxn = { kind: 'settle', terms, amount: retail, payer: -retail, payee: rate, hold: null, remaining: null, reversedBy: null, reverses: null };
  return [{ expected: { kind: 'accepted', applied: true, fields: {} }, next: withTxn(state, txnId, txn, move(state.payer, -retail), move(state.payee, rate)), property: 'explore.once' }];
}

/** §6.9 reverse: the exact inverse, once; a draw's reversal gives the cap back while the hold is open. */
function reverse(state: ModelState, txnId: string, target: string): Outcome[] {
  const terms = `reverse:${target}`;
  const seen = state.txns[txnId];
  if (seen !== undefined) return replayOf(state, seen, terms, { amount: seen.amount });
  const original = state.txns[target];
  if (original === undefined) return [{ expected: NO_OBJECT, next: state, property: 'explore.answers' }];
  if (original.kind === 'reverse') return [{ expected: code('not_reversible'), next: state, property: 'explore.answers' }];
  if (original.reversedBy !== null) return [{ expected: code('already_reversed'), next: state, property: 'explore.once' }];
  const undone: ModelTxn = { ...original, reversedBy: txnId };
  const txn: ModelTxn = { kind: 'reverse', terms, amount: original.amount, payer: -original.payer, payee: -original.payee, hold: null, remaining: null, reversedBy: null, reverses: target };
  let holds = state.holds;
  let payer = move(state.payer, -original.payer);
  if (original.kind === 'draw' && original.hold !== null) {
    const hold = state.holds[original.hold];
    if (hold !== undefined && hold.open) {
      holds = { ...holds, [original.hold]: { ...hold, drawn: hold.drawn - original.amount } };
      payer = { ...payer, reserved: payer.reserved + original.amount };
    }
  }
  const next: ModelState = { payer, payee: move(state.payee, -original.payee), holds, txns: { ...state.txns, [target]: undone, [txnId]: txn } };
  const applied: Outcome = { expected: { kind: 'accepted', applied: true, fields: { amount: original.amount } }, next, property: 'explore.once' };
  // A draw that billed nothing moved nothing, and a credit's reversal takes value back the payer may
  // no longer have: §6.9 names no rule for either, so a refusal is allowed beside the reversal.
  const mayRefuse = original.amount === 0 || (original.kind === 'credit' && original.amount > state.payer.balance - state.payer.reserved);
  return mayRefuse ? [applied, { expected: REFUSED, next: state, property: 'explore.answers' }] : [applied];
}

/** §6.11 open-hold: refused when available does not cover it; idempotent on holdId with the same terms. */
function openHold(state: ModelState, holdId: string, amount: number): Outcome[] {
  const hold = state.holds[holdId];
  if (hold !== undefined) {
    const replay: Outcome = { expected: { kind: 'accepted', applied: false, fields: {} }, next: state, property: 'explore.once' };
    const refusal: Outcome = { expected: REFUSED, next: state, property: 'explore.once' };
    if (amount !== hold.opened && amount !== hold.amount) return [{ expected: code('terms_conflict'), next: state, property: 'explore.once' }];
    // Same terms as first opened and still so: a replay. After a resize or a release the contract
    // leaves open whether the id's terms are the first or the current ones: either answer, no effect.
    return amount === hold.opened && amount === hold.amount && hold.open ? [replay] : [replay, refusal];
  }
  const available = state.payer.balance - state.payer.reserved;
  if (amount > available) return [{ expected: code('insufficient_funds'), next: state, property: 'explore.no-overcommit' }];
  const next: ModelState = {
    ...state,
    payer: { ...state.payer, reserved: state.payer.reserved + amount },
    holds: { ...state.holds, [holdId]: { amount, opened: amount, drawn: 0, open: true } },
  };
  return [{ expected: { kind: 'accepted', applied: true, fields: { available: available - amount } }, next, property: 'explore.no-overcommit' }];
}

/** §6.12 resize-hold: a raise must fit in available, never below drawn, never a released hold; same target is a no-op. */
function resizeHold(state: ModelState, holdId: string, amount: number): Outcome[] {
  const hold = state.holds[holdId];
  if (hold === undefined) return [{ expected: NO_OBJECT, next: state, property: 'explore.answers' }];
  if (!hold.open) return [{ expected: REFUSED, next: state, property: 'explore.answers' }];
  if (amount < hold.drawn) return [{ expected: REFUSED, next: state, property: 'explore.within-cap' }];
  if (amount === hold.amount) return [{ expected: { kind: 'accepted', applied: false, fields: {} }, next: state, property: 'explore.once' }];
  const available = state.payer.balance - state.payer.reserved;
  const raise = amount - hold.amount;
  if (raise > 0 && raise > available) return [{ expected: code('insufficient_funds'), next: state, property: 'explore.no-overcommit' }];
  const next: ModelState = {
    ...state,
    payer: { ...state.payer, reserved: state.payer.reserved + raise },
    holds: { ...state.holds, [holdId]: { ...hold, amount } },
  };
  return [{ expected: { kind: 'accepted', applied: true, fields: { available: available - raise } }, next, property: 'explore.no-overcommit' }];
}

/** §6.13 draw: lines in order, clamped at the cap; the movement is a settlement payer → payee with no margin. */
function draw(state: ModelState, txnId: string, holdId: string, lines: readonly number[]): Outcome[] {
  const terms = `draw:${holdId}:${lines.join(',')}`;
  const seen = state.txns[txnId];
  if (seen !== undefined) return replayOf(state, seen, terms, { billed: seen.amount });
  const hold = state.holds[holdId];
  if (hold === undefined) return [{ expected: NO_OBJECT, next: state, property: 'explore.answers' }];
  if (!hold.open) return [{ expected: REFUSED, next: state, property: 'explore.within-cap' }];
  const billed = Math.min(lines.reduce((a, b) => a + b, 0), hold.amount - hold.drawn);
  const remaining = hold.amount - hold.drawn - billed;
  const txn: ModelTxn = { kind: 'draw', terms, amount: billed, payer: -billed, payee: billed, hold: holdId, remaining, reversedBy: null, reverses: null };
  const next: ModelState = {
    payer: { balance: state.payer.balance - billed, reserved: state.payer.reserved - billed },
    payee: move(state.payee, billed),
    holds: { ...state.holds, [holdId]: { ...hold, drawn: hold.drawn + billed } },
    txns: { ...state.txns, [txnId]: txn },
  };
  return [{ expected: { kind: 'accepted', applied: true, fields: { billed, remaining } }, next, property: 'explore.within-cap' }];
}

/** §6.14 release-hold: returns only what was not drawn, once. */
function releaseHold(state: ModelState, holdId: string): Outcome[] {
  const hold = state.holds[holdId];
  if (hold === undefined) return [{ expected: NO_OBJECT, next: state, property: 'explore.answers' }];
  if (!hold.open) return [{ expected: { kind: 'accepted', applied: false, fields: { released: 0 } }, next: state, property: 'explore.once' }];
  const released = hold.amount - hold.drawn;
  const next: ModelState = {
    ...state,
    payer: { ...state.payer, reserved: state.payer.reserved - released },
    holds: { ...state.holds, [holdId]: { ...hold, open: false } },
  };
  return [{ expected: { kind: 'accepted', applied: true, fields: { released } }, next, property: 'explore.once' }];
}
