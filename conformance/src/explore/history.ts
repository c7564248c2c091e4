/**
 * Runs one generated history against a binding and checks it against the model step by step:
 * set the payer's available to a known float, send each step's operations together (retrying an
 * answer lost on the wire with the same body, §9), check that some order explains every answer
 * (linearize.ts), then read both accounts and keep only the states whose figures match (§6.2,
 * §8). Throws HistoryFailed at the first step nothing explains.
 */
import type { ConformanceConfig } from '../config.ts';
import type { Declared } from '../declared.ts';
import { asObject, isInt } from '../expect.ts';
import type { Exchange } from '../http.ts';
import type { Wire, Reply } from '../wire.ts';
import { linearize, MAX_CANDIDATES, type Mismatch, type Sent } from './linearize.ts';
import { figuresOf, initialState, type ModelAccount, type ModelState } from './model.ts';
import { idOf, SLOTS, slotName, type History, type Op } from './ops.ts';
import { FAULT_HEADER } from './proxy.ts';

/** Units of `limits.min_amount` the payer has available when a history starts (a hold of 60 can then be refused). */
export const FLOAT_UNITS = 100;
/** Attempts per request when no answer arrives (the first and its retries under the same id, §9). */
export const MAX_ATTEMPTS = 6;
/** How long the holds a history opens stay open: longer than any history runs, so none expires mid-run (§6.15). */
const HOLD_WINDOW_MS = 3_600_000;

/** A step no order of the model explains: the mismatch, and every step sent up to it. */
export class HistoryFailed extends Error {
  override name = 'HistoryFailed';

  constructor(readonly mismatch: Mismatch, readonly steps: readonly (readonly Exchange[])[]) {
    super(mismatch.message);
  }
}

/** The run could not be set up or the binding stopped answering: explore proves nothing this run. */
export class HistoryInconclusive extends Error {
  override name = 'HistoryInconclusive';
}

/** What a history runs against: the wire through the fault proxy, the clean one, ids and amounts. */
export interface HistoryTarget {
  readonly config: ConformanceConfig;
  readonly declared: Declared;
  /** Through the fault proxy when faults are on; the history's operations go here. */
  readonly wire: Wire;
  /** Straight to the binding: set-up, checkpoints and clean-up. */
  readonly direct: Wire;
  /** Prefix of this history's ids, unique to the run. */
  readonly prefix: string;
}

/** Runs `history`; answers the number of requests sent. Throws HistoryFailed or HistoryInconclusive. */
export async function runHistory(history: History, target: HistoryTarget): Promise<number> {
  const { payer, payee } = target.config.fixtures.accounts;
  const expiresAt = new Date(Date.now() + HOLD_WINDOW_MS).toISOString();
  const ballast = idOf(target.prefix, 'ballast');
  const steps: Exchange[][] = [];
  let requests = 0;
  try {
    let states = [await setUp(target, ballast, expiresAt)];
    for (const step of history) {
      const sent = await Promise.all(step.map((op) => send(op, target, expiresAt)));
      requests += sent.reduce((n, s) => n + s.attempts, 0);
      steps.push(sent.map((s) => s.reply.exchange));
      const lin = linearize(states, sent, target.prefix);
      if (lin.mismatch !== null) throw new HistoryFailed(lin.mismatch, steps);
      if (lin.states.length > MAX_CANDIDATES) throw new HistoryInconclusive(`more than ${MAX_CANDIDATES} states explain step ${steps.length}`);
      const [a, b] = [await target.direct.readBalance(payer), await target.direct.readBalance(payee)];
      requests += 2;
      states = lin.states.filter((s) => matches(s.payer, a) && matches(s.payee, b));
      if (states.length === 0) {
        const wanted = [...new Set(lin.states.map((s) => `payer ${JSON.stringify(figuresOf(s.payer))}, payee ${JSON.stringify(figuresOf(s.payee))}`))];
        throw new HistoryFailed({
          property: 'explore.figures',
          message: `after step ${steps.length}, the figures read-balance answers are none the accepted history implies`,
          expected: wanted.slice(0, 4).join(' or '),
          got: `payer ${a.exchange.response_body}, payee ${b.exchange.response_body}`,
          sent: { op: { op: 'read-balance', who: 'payer' }, reply: a, faulted: false },
        }, [...steps, [a.exchange, b.exchange]]);
      }
    }
    return requests;
  } finally {
    await cleanUp(target, ballast);
  }
}

/**
 * Brings the payer's available to FLOAT_UNITS units: a credit (or adjust) for what is missing, a
 * ballast hold over what is above (a hold moves no value, invariant 1). Answers the state to start from.
 */
async function setUp(target: HistoryTarget, ballast: string, expiresAt: string): Promise<ModelState> {
  const { payer, payee } = target.config.fixtures.accounts;
  const ops = target.declared.operations;
  const float = FLOAT_UNITS * target.declared.min_amount;
  const before = figures(await target.direct.readBalance(payer));
  const available = before.balance - before.reserved;
  if (available < float && ops.has('credit')) {
    await target.direct.credit({ txnId: idOf(target.prefix, 'fund'), account: payer, amount: float - available, ref: 'holon-conformance explore' });
  } else if (available < float && ops.has('adjust')) {
    await target.direct.adjust({ txnId: idOf(target.prefix, 'fund'), account: payer, delta: float - available, reason: 'holon-conformance explore' });
  } else if (available > float && ops.has('open-hold')) {
    await target.direct.openHold({ holdId: ballast, account: payer, amount: available - float, expiresAt, ref: 'holon-conformance explore ballast' });
  }
  return initialState(figures(await target.direct.readBalance(payer)), figures(await target.direct.readBalance(payee)));
}

/** Releases every hold slot the history could have opened, and the ballast (§6.14: release is idempotent). */
async function cleanUp(target: HistoryTarget, ballast: string): Promise<void> {
  if (!target.declared.operations.has('release-hold')) return;
  const holds = [ballast, ...Array.from({ length: SLOTS.hold }, (_, n) => idOf(target.prefix, `h${n}`))];
  await Promise.all(holds.map((holdId) => target.direct.releaseHold({ holdId, reason: 'holon-conformance explore clean-up' })));
}

function figures(reply: Reply): ModelAccount {
  const body = asObject(reply.body);
  if (reply.status !== 200 || body === null || !isInt(body.balance) || !isInt(body.reserved)) {
    throw new HistoryInconclusive(`read-balance did not answer figures to start from: ${reply.status ?? reply.exchange.transport_error} ${reply.exchange.response_body.slice(0, 200)}`);
  }
  return { balance: body.balance, reserved: body.reserved };
}

function matches(account: ModelAccount, reply: Reply): boolean {
  const body = asObject(reply.body);
  if (reply.status !== 200 || body === null) return false;
  const want = figuresOf(account);
  return body.balance === want.balance && body.available === want.available && body.reserved === want.reserved && (body.pending ?? 0) === 0;
}

/** Sends one op, again with the same body while no answer arrives; answers the final reply and whether a fault touched it. */
async function send(op: Op, target: HistoryTarget, expiresAt: string): Promise<Sent & { attempts: number }> {
  let faulted = false;
  for (let attempt = 1; ; attempt += 1) {
    const reply = await request(op, target, expiresAt);
    if (reply.exchange.response_headers[FAULT_HEADER] !== undefined) faulted = true;
    if (reply.status !== null) return { op, reply, faulted, attempts: attempt };
    faulted = true;
    if (attempt === MAX_ATTEMPTS) {
      throw new HistoryInconclusive(`no answer after ${MAX_ATTEMPTS} attempts: ${reply.exchange.transport_error}`);
    }
  }
}

function request(op: Op, target: HistoryTarget, expiresAt: string): Promise<Reply> {
  const w = target.wire;
  const id = (slot: string): string => idOf(target.prefix, slot);
  const { payer, payee } = target.config.fixtures.accounts;
  const memo = 'holon-conformance explore';
  switch (op.op) {
    case 'credit': return w.credit({ txnId: id(`c${op.c}`), account: payer, amount: op.amount, ref: memo });
    case 'settle': return w.settle({ txnId: id(`s${op.s}`), caller: payer, owner: payee, rate: op.rate, retail: op.retail, memo });
    case 'reverse': return w.reverse({ txnId: id(`r${op.r}`), reverses: id(slotName(op.target)), reason: memo });
    case 'open-hold': return w.openHold({ holdId: id(`h${op.h}`), account: payer, amount: op.amount, expiresAt, ref: memo });
    case 'resize-hold': return w.resizeHold({ holdId: id(`h${op.h}`), amount: op.amount });
    case 'draw': return w.draw({ holdId: id(`h${op.h}`), txnId: id(`d${op.d}`), caller: payer, owner: payee, lines: op.lines.map((amount) => ({ meter: 'calls', amount })) });
    case 'release-hold': return w.releaseHold({ holdId: id(`h${op.h}`), reason: memo });
    case 'read-balance': return w.readBalance(op.who === 'payer' ? payer : payee);
    case 'read-settlement': return w.readSettlement(id(slotName(op.target)));
    case 'read-reservation': return w.readReservation(id(`h${op.h}`));
  }
}
