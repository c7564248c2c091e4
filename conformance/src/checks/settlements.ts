/**
 * §6.4 read-settlement and the value-moving doors: §6.7 credit, §6.8 settle, §6.9 reverse,
 * §6.10 adjust. Every rule is observed through balance deltas and the settlement record.
 */
import { checksOf } from '../check.ts';
import type { CheckContext } from '../context.ts';
import {
  answered, applied, asObject, ensure, ensureEqual, gotOf, Inconclusive, INVALID, NotApplicable, refused, type Json,
} from '../expect.ts';
import { ensureMoved, type Figures } from '../figures.ts';
import { legSum, settlementProblems } from '../shapes.ts';
import { malformed, type Reply } from '../wire.ts';

/** The payer's and the payee's figures, read one after the other. */
async function both(ctx: CheckContext): Promise<{ payer: Figures; payee: Figures }> {
  return { payer: await ctx.figures(ctx.payer), payee: await ctx.figures(ctx.payee) };
}

/** Fails unless `reversal` is refused with `code` and moved neither the payer nor the payee. */
async function ensureReversalRefused(ctx: CheckContext, reverses: string, code: 'already_reversed' | 'not_reversible', what: string): Promise<void> {
  const before = await both(ctx);
  const txnId = ctx.id('reverse');
  const reply = await ctx.wire.reverse({ txnId, reverses, reason: 'holon-conformance: must be refused' });
  refused(reply, what, { status: [422], codes: [code] });
  const after = await both(ctx);
  ensureMoved(`${what}, payer`, 'balance', before.payer, after.payer, 0, reply);
  ensureMoved(`${what}, payee`, 'balance', before.payee, after.payee, 0, reply);
  await ctx.ensureUnknown(txnId, what, reply);
}

/** A refusal case: what is wrong with the request, and the fields that make it so. */
type InvalidCase = readonly [string, Record<string, unknown>];

/**
 * Sends each case to `op` (through `send`) under a fresh transaction id; fails unless every one
 * is refused as invalid and leaves no record (§7.2, §6.4).
 */
async function ensureInvalidRefused(
  ctx: CheckContext, op: string, send: (body: Record<string, unknown>) => Promise<Reply>, cases: readonly InvalidCase[],
): Promise<void> {
  for (const [what, fields] of cases) {
    const txnId = ctx.id('invalid');
    const reply = await send({ txnId, ...fields });
    refused(reply, `${op} with ${what}`, INVALID);
    await ctx.ensureUnknown(txnId, `${op} with ${what}`, reply);
  }
}

/** Reverses `reverses`; fails unless applied. Answers the reversal's id and body (§6.9). */
async function reverseOnce(ctx: CheckContext, reverses: string): Promise<{ txnId: string; amount: unknown; reply: Reply }> {
  const txnId = ctx.id('reverse');
  const reply = await ctx.wire.reverse({ txnId, reverses, reason: 'holon-conformance correction', actor: 'holon-conformance' });
  return { txnId, amount: applied(reply, `reverse ${reverses} as ${txnId}`, true).amount, reply };
}

/** Opens a funded hold of 10 units, draws 4 from it and releases it (§6.11, §6.13, §6.14): the case of a draw whose hold is gone. */
async function drawThenRelease(ctx: CheckContext): Promise<{ cap: number; drawn: number; holdId: string; txnId: string }> {
  const cap = ctx.amount(10);
  const drawn = ctx.amount(4);
  const { holdId } = await ctx.openFundedHold(cap);
  const { txnId } = await ctx.draw(holdId, [{ meter: 'calls', amount: drawn }]);
  applied(await ctx.wire.releaseHold({ holdId, reason: 'holon-conformance' }), `release-hold ${holdId}`, true);
  return { cap, drawn, holdId, txnId };
}

/** The settlement checks, in run order. */
export const settlementChecks = checksOf('settlements', [
  {
    id: 'settlement.unknown',
    cite: '§6.4',
    level: 'MUST',
    title: 'read-settlement of an id the binding never saw answers 200 with state unknown',
    async run(ctx) {
      const txnId = ctx.id('never');
      const reply = await ctx.wire.readSettlement(txnId);
      const body = answered(reply, `read-settlement ${txnId}`);
      ensure(body.txn_id === txnId && body.state === 'unknown', 'an unknown transaction id was not answered as unknown',
        `200 {"txn_id": ${JSON.stringify(txnId)}, "state": "unknown"}: not an error (§6.4)`, gotOf(reply), reply);
    },
  },
  {
    id: 'settle.moves-value',
    cite: '§6.8',
    level: 'MUST',
    title: 'settle takes retail from the caller and gives rate to the owner',
    async run(ctx) {
      const before = await both(ctx);
      const retail = ctx.amount(5);
      const rate = ctx.amount(4);
      const { reply } = await ctx.settle(retail, rate);
      const after = await both(ctx);
      ensureMoved(`settle retail ${retail} rate ${rate}, payer`, 'balance', before.payer, after.payer, -retail, reply);
      ensureMoved(`settle retail ${retail} rate ${rate}, payee`, 'balance', before.payee, after.payee, rate, reply);
    },
  },
  {
    id: 'settle.no-margin-accepted',
    cite: '§6.8',
    level: 'MUST',
    title: 'a settlement whose retail equals its rate is accepted (the binding invents no margin)',
    async run(ctx) {
      const before = await both(ctx);
      const amount = ctx.amount(3);
      const { reply } = await ctx.settle(amount, amount);
      const after = await both(ctx);
      ensureMoved('settle without margin, payer', 'balance', before.payer, after.payer, -amount, reply);
      ensureMoved('settle without margin, payee', 'balance', before.payee, after.payee, amount, reply);
    },
  },
  {
    id: 'settle.never-refused-for-funds',
    cite: '§6.8, §8.10',
    level: 'MUST',
    title: 'settle is not refused for insufficient funds: the payer may go negative',
    async run(ctx) {
      if (!ctx.declared.negative_balance) throw new NotApplicable('the binding declares negative_balance: false (open question 3)');
      const before = await ctx.figures(ctx.payer);
      const big = Math.max(before.available, 0) + ctx.amount(10);
      const max = ctx.declared.max_amount;
      if (max !== null && big > max) throw new Inconclusive(`the payer's available ${before.available} is too close to limits.max_amount ${max} to exceed it`);
      const { reply } = await ctx.settle(big, big);
      const after = await ctx.figures(ctx.payer);
      ensureMoved(`settle of ${big}, more than available`, 'balance', before, after, -big, reply);
      await ctx.wire.settle({ txnId: ctx.id('restore'), caller: ctx.payee, owner: ctx.payer, rate: big, retail: big, memo: 'holon-conformance: give back' });
    },
  },
  {
    id: 'settle.refuses-invalid',
    cite: '§6.8, §7.2',
    level: 'MUST',
    title: 'settle refuses retail below rate, non-positive or non-integer amounts and missing fields with 422, recording nothing',
    async run(ctx) {
      const base = { caller: ctx.payer, owner: ctx.payee };
      await ensureInvalidRefused(ctx, 'settle', (body) => ctx.wire.settle(malformed(body)), [
        ['retail below rate', { ...base, rate: ctx.amount(2), retail: ctx.amount(1) }],
        ['rate 0', { ...base, rate: 0, retail: ctx.amount(1) }],
        ['fractional amounts', { ...base, rate: 1.5, retail: 2.5 }],
        ['amounts as strings', { ...base, rate: '1', retail: '1' }],
        ['no owner', { caller: ctx.payer, rate: ctx.amount(1), retail: ctx.amount(1) }],
      ]);
    },
  },
  {
    id: 'settlement.record',
    cite: '§6.4',
    level: 'MUST',
    title: 'a settlement reads back as one record: settled, the payer as account, retail as amount, reversed_by null',
    async run(ctx) {
      const retail = ctx.amount(5);
      const { txnId, reply: settleReply } = await ctx.settle(retail, ctx.amount(4));
      const { body, reply } = await ctx.settlement(txnId);
      const problems = settlementProblems(body, txnId);
      ensure(problems.length === 0, 'the settlement record is malformed', 'the §6.4 record', problems.join('; '), settleReply, reply);
      ensureEqual({ state: body.state, account: body.account, amount: body.amount, reversed_by: body.reversed_by },
        { state: 'settled', account: ctx.payer, amount: retail, reversed_by: null },
        'the record does not describe the settlement (account is the payer, amount what the payer paid)', settleReply, reply);
    },
  },
  {
    id: 'settlement.legs',
    cite: '§6.4, §8.6',
    level: 'MUST',
    title: 'a settlement\'s legs sum to zero: the payer\'s to minus retail, the owner\'s to rate',
    async run(ctx) {
      const retail = ctx.amount(5);
      const rate = ctx.amount(4);
      const { txnId } = await ctx.settle(retail, rate);
      const { body, reply } = await ctx.settlement(txnId);
      ensureEqual({ all: legSum(body.legs), payer: legSum(body.legs, ctx.payer), payee: legSum(body.legs, ctx.payee) },
        { all: 0, payer: -retail, payee: rate }, 'the legs do not describe the whole movement', reply);
    },
  },
  {
    id: 'credit.moves-value',
    cite: '§6.7, §6.4',
    level: 'MUST',
    needs: ['credit'],
    title: 'credit puts the amount in the account and reads back as a settled record with balanced legs',
    async run(ctx) {
      const before = await ctx.figures(ctx.payer);
      const amount = ctx.amount(7);
      const txnId = ctx.id('credit');
      const creditReply = await ctx.wire.credit({ txnId, account: ctx.payer, amount, ref: 'holon-conformance' });
      applied(creditReply, `credit ${txnId}`, true);
      ensureMoved(`credit of ${amount}`, 'balance', before, await ctx.figures(ctx.payer), amount, creditReply);
      const { body, reply } = await ctx.settlement(txnId);
      ensureEqual({ state: body.state, account: body.account, amount: body.amount, legs: legSum(body.legs), payer: legSum(body.legs, ctx.payer) },
        { state: 'settled', account: ctx.payer, amount, legs: 0, payer: amount }, 'the credit record', creditReply, reply);
    },
  },
  {
    id: 'credit.refuses-invalid',
    cite: '§6.7, §7.2',
    level: 'MUST',
    needs: ['credit'],
    title: 'credit refuses a zero, negative or fractional amount and a missing account with 422, recording nothing',
    async run(ctx) {
      await ensureInvalidRefused(ctx, 'credit', (body) => ctx.wire.credit(malformed(body)), [
        ['amount 0', { account: ctx.payer, amount: 0 }],
        ['a negative amount', { account: ctx.payer, amount: -ctx.amount(1) }],
        ['a fractional amount', { account: ctx.payer, amount: 1.5 }],
        ['no account', { amount: ctx.amount(1) }],
      ]);
    },
  },
  {
    id: 'adjust.moves-value',
    cite: '§6.10, §6.4',
    level: 'MUST',
    needs: ['adjust'],
    title: 'adjust moves the balance by delta in either sign; the record names the account and the size of the move',
    async run(ctx) {
      for (const delta of [ctx.amount(4), -ctx.amount(3)]) {
        const before = await ctx.figures(ctx.payer);
        const txnId = ctx.id('adjust');
        const adjustReply = await ctx.wire.adjust({ txnId, account: ctx.payer, delta, reason: 'holon-conformance', actor: 'holon-conformance' });
        applied(adjustReply, `adjust ${txnId} by ${delta}`, true);
        ensureMoved(`adjust by ${delta}`, 'balance', before, await ctx.figures(ctx.payer), delta, adjustReply);
        const { body, reply } = await ctx.settlement(txnId);
        ensureEqual({ state: body.state, account: body.account, amount: body.amount, legs: legSum(body.legs) },
          { state: 'settled', account: ctx.payer, amount: Math.abs(delta), legs: 0 },
          'the adjustment record (amount is the size of the movement, §6.4)', adjustReply, reply);
      }
    },
  },
  {
    id: 'adjust.refuses-invalid',
    cite: '§6.10, §7.2',
    level: 'MUST',
    needs: ['adjust'],
    title: 'adjust refuses a zero or fractional delta and a missing or empty reason with 422, recording nothing',
    async run(ctx) {
      const base = { account: ctx.payer };
      await ensureInvalidRefused(ctx, 'adjust', (body) => ctx.wire.adjust(malformed(body)), [
        ['delta 0', { ...base, delta: 0, reason: 'x' }],
        ['a fractional delta', { ...base, delta: 1.5, reason: 'x' }],
        ['no reason', { ...base, delta: ctx.amount(1) }],
        ['an empty reason', { ...base, delta: ctx.amount(1), reason: '' }],
      ]);
    },
  },
  {
    id: 'reverse.restores',
    cite: '§6.9',
    level: 'MUST',
    needs: ['reverse'],
    title: 'reversing a settlement gives the payer retail back and takes rate back from the owner, answering the amount',
    async run(ctx) {
      const retail = ctx.amount(5);
      const rate = ctx.amount(4);
      const { txnId } = await ctx.settle(retail, rate);
      const before = await both(ctx);
      const reversal = await reverseOnce(ctx, txnId);
      ensureEqual(reversal.amount, retail, 'the reversal answers the amount undone (what the payer paid)', reversal.reply);
      const after = await both(ctx);
      ensureMoved('reversal, payer', 'balance', before.payer, after.payer, retail, reversal.reply);
      ensureMoved('reversal, payee', 'balance', before.payee, after.payee, -rate, reversal.reply);
    },
  },
  {
    id: 'reverse.marks-original',
    cite: '§6.4, §6.9',
    level: 'MUST',
    needs: ['reverse'],
    title: 'after a reversal the original record names it in reversed_by',
    async run(ctx) {
      const { txnId } = await ctx.settle(ctx.amount(2));
      const reversal = await reverseOnce(ctx, txnId);
      const { body, reply } = await ctx.settlement(txnId);
      ensureEqual(body.reversed_by, reversal.txnId, 'reversed_by of the original', reversal.reply, reply);
    },
  },
  {
    id: 'reverse.once',
    cite: '§6.9, §7.2',
    level: 'MUST',
    needs: ['reverse'],
    title: 'a second reversal under another id is refused 422 already_reversed and moves nothing',
    async run(ctx) {
      const { txnId } = await ctx.settle(ctx.amount(2));
      await reverseOnce(ctx, txnId);
      await ensureReversalRefused(ctx, txnId, 'already_reversed', 'a second reversal of the same settlement');
    },
  },
  {
    id: 'reverse.once-names-existing',
    cite: '§6.9, §7.4',
    level: 'MUST',
    needs: ['reverse'],
    title: 'the refusal of a second reversal names the reversal that already exists',
    async run(ctx) {
      const { txnId } = await ctx.settle(ctx.amount(2));
      const first = await reverseOnce(ctx, txnId);
      const reply = await ctx.wire.reverse({ txnId: ctx.id('reverse'), reverses: txnId, reason: 'holon-conformance: must be refused' });
      const body = refused(reply, 'a second reversal', { status: [422], codes: ['already_reversed'] });
      ensure(String(body.error).includes(first.txnId), 'the refusal does not name the existing reversal',
        `an error sentence naming ${first.txnId} (§6.9)`, gotOf(reply), first.reply, reply);
    },
  },
  {
    id: 'reverse.correction-not-reversible',
    cite: '§6.9, §7.2',
    level: 'MUST',
    needs: ['reverse'],
    title: 'a reversal cannot itself be reversed: 422 not_reversible, nothing moves',
    async run(ctx) {
      const { txnId } = await ctx.settle(ctx.amount(2));
      const first = await reverseOnce(ctx, txnId);
      await ensureReversalRefused(ctx, first.txnId, 'not_reversible', 'reversing a reversal');
    },
  },
  {
    id: 'reverse.adjustment-not-reversible',
    cite: '§6.9, §6.10, §7.2',
    level: 'MUST',
    needs: ['reverse', 'adjust'],
    title: 'an adjustment is a correction and cannot be reversed: 422 not_reversible, nothing moves',
    async run(ctx) {
      const txnId = ctx.id('adjust');
      applied(await ctx.wire.adjust({ txnId, account: ctx.payer, delta: ctx.amount(2), reason: 'holon-conformance' }), `adjust ${txnId}`, true);
      await ensureReversalRefused(ctx, txnId, 'not_reversible', 'reversing an adjustment');
    },
  },
  {
    id: 'reverse.refuses-invalid',
    cite: '§6.9, §7.1, §7.2',
    level: 'MUST',
    needs: ['reverse'],
    title: 'reverse refuses a missing or empty reason (422) and an unknown target (404 no_such_object or 422), recording nothing',
    async run(ctx) {
      const { txnId } = await ctx.settle(ctx.amount(2));
      await ensureInvalidRefused(ctx, 'reverse', (body) => ctx.wire.reverse(malformed(body)), [
        ['no reason', { reverses: txnId }],
        ['an empty reason', { reverses: txnId, reason: '' }],
      ]);
      const { body, reply } = await ctx.settlement(txnId);
      ensureEqual(body.reversed_by, null, 'a refused reversal left the original reversed', reply);
      const id = ctx.id('invalid');
      const unknown = await ctx.wire.reverse({ txnId: id, reverses: ctx.id('never'), reason: 'holon-conformance' });
      refused(unknown, 'reversing a transaction that does not exist', { status: [404, 422], codes: ['no_such_object', 'invalid_request'], ownCodes: true });
      await ctx.ensureUnknown(id, 'reversing a transaction that does not exist', unknown);
    },
  },
  {
    id: 'reverse.draw-restores-cap',
    cite: '§6.9',
    level: 'MUST',
    needs: ['reverse', 'open-hold', 'draw'],
    title: 'reversing a draw on an open hold gives the cap back: the whole cap can be drawn again',
    async run(ctx) {
      const cap = ctx.amount(10);
      const drawn = ctx.amount(4);
      const start = await ctx.ensureAvailable(cap);
      const { holdId } = await ctx.openHold(cap);
      const { txnId } = await ctx.draw(holdId, [{ meter: 'calls', amount: drawn }]);
      const reversal = await reverseOnce(ctx, txnId);
      const after = await ctx.figures(ctx.payer);
      ensureMoved('open, draw, reverse the draw: the payer is made whole', 'balance', start, after, 0, reversal.reply);
      ensureMoved('open, draw, reverse the draw: the hold commits its whole cap again', 'available', start, after, -cap, reversal.reply);
      const again = await ctx.draw(holdId, [{ meter: 'calls', amount: cap }]);
      ensureEqual(asObject(again.body)?.billed, cap, 'a draw of the whole cap after the reversal (the cap was given back, §6.9)', reversal.reply, again.reply);
    },
  },
  {
    id: 'reverse.released-draw-no-cap',
    cite: '§6.9',
    level: 'MUST',
    needs: ['reverse', 'open-hold', 'draw', 'release-hold'],
    title: 'reversing a draw on a released hold makes the payer whole and gives the hold nothing back',
    async run(ctx) {
      const { drawn, holdId, txnId } = await drawThenRelease(ctx);
      const before = await ctx.figures(ctx.payer);
      const reversal = await reverseOnce(ctx, txnId);
      const after = await ctx.figures(ctx.payer);
      ensureMoved('reversing a draw of a released hold', 'balance', before, after, drawn, reversal.reply);
      ensureMoved('reversing a draw of a released hold (a released hold commits nothing)', 'reserved', before, after, 0, reversal.reply);
      ensureMoved('reversing a draw of a released hold', 'available', before, after, drawn, reversal.reply);
      if (ctx.offers('read-reservation') || ctx.offers('list-reservations')) {
        const { record, reply } = await ctx.reservation(holdId);
        ensureEqual(record.status, 'released', 'the hold stays released after its draw is reversed', reversal.reply, reply);
      }
    },
  },
  {
    id: 'reverse.released-draw-record',
    cite: '§6.9, §6.5',
    level: 'MUST',
    needs: ['reverse', 'open-hold', 'draw', 'release-hold'],
    title: 'reversing a draw on a released hold leaves the hold\'s record as it was: its cap, drawn and remaining unchanged',
    async run(ctx) {
      const { cap, drawn, holdId, txnId } = await drawThenRelease(ctx);
      const before = await ctx.reservation(holdId);
      const reversal = await reverseOnce(ctx, txnId);
      const after = await ctx.reservation(holdId);
      const summary = (r: Json): unknown => ({ status: r.status, amount: r.amount, drawn: r.drawn, remaining: Number(r.amount) - Number(r.drawn) });
      ensureEqual(summary(after.record), { status: 'released', amount: cap, drawn, remaining: cap - drawn },
        'the released hold after its draw was reversed (a released hold gets nothing back, §6.9)', before.reply, reversal.reply, after.reply);
    },
  },
]);
