/**
 * §8 invariants, as far as the wire shows them: available = balance - reserved - pending,
 * conservation, append-only history, totals net of corrections, integer amounts.
 */
import { checksOf } from '../check.ts';
import { AMOUNT_FIELDS } from '../contract.ts';
import { answered, applied, asObject, ensure, ensureEqual, gotOf, Inconclusive, isInt, jsonEqual, type Json } from '../expect.ts';
import type { Exchange } from '../http.ts';
import { legSum } from '../shapes.ts';
import { ensureEveryExchange, isSuccess } from './scan.ts';

/** Reads that carry the §6.2 figures at the top level of their answer. */
const FIGURE_READS = ['read-balance', 'read-summary', 'list-reservations'];

/** An amount field whose JSON number has a fraction or an exponent, e.g. `"balance": 100.0`. */
const NON_INTEGER = new RegExp(`"(${AMOUNT_FIELDS.join('|')})"\\s*:\\s*-?\\d+(?:\\.\\d+[eE]?|[eE])[^,}\\]]*`, 'g');

/** Problems of invariant 2 on one answer: available = balance - reserved - pending. */
function formulaProblems(exchange: Exchange): string[] {
  const b = asObject(exchange.json);
  if (!FIGURE_READS.includes(exchange.op) || exchange.status !== 200 || b === null) return [];
  const pending = b.pending ?? 0;
  if (![b.balance, b.available, b.reserved, pending].every(isInt)) return [];
  const expected = (b.balance as number) - (b.reserved as number) - (pending as number);
  return b.available === expected ? [] : [`available ${String(b.available)} but balance - reserved - pending = ${expected}`];
}

/** Problems of invariant 6 on one answer: the legs of a settled settlement sum to zero. */
function conservationProblems(exchange: Exchange): string[] {
  const b = asObject(exchange.json);
  if (exchange.op !== 'read-settlement' || exchange.status !== 200 || b?.state !== 'settled') return [];
  const sum = legSum(b.legs);
  return sum === 0 ? [] : [`the legs of ${String(b.txn_id)} sum to ${sum}`];
}

/** Problems of invariant 7 on one answer: every amount field, anywhere in it, is a JSON integer. */
function integerProblems(exchange: Exchange): string[] {
  const problems = [...exchange.response_body.matchAll(NON_INTEGER)].map((m) => `${m[0]} is not an integer`);
  const walk = (value: unknown, path: string): void => {
    if (Array.isArray(value)) value.forEach((v, i) => walk(v, `${path}[${i}]`));
    const o = asObject(value);
    if (o === null) return;
    for (const [key, v] of Object.entries(o)) {
      if (AMOUNT_FIELDS.includes(key) && v !== null && typeof v !== 'object' && !isInt(v)) problems.push(`${path}.${key} is ${JSON.stringify(v)}`);
      walk(v, `${path}.${key}`);
    }
  };
  walk(exchange.json, '$');
  return problems;
}

/** The record fields a correction must leave as they were (invariant 8). */
function standing(record: Json): Json {
  return { txn_id: record.txn_id, state: record.state, account: record.account, amount: record.amount, legs: record.legs, opened_at: record.opened_at };
}

/** The invariant checks, in run order (after the targeted sections, so the scans see their answers). */
export const invariantChecks = checksOf('invariants', [
  {
    id: 'invariants.available-formula',
    cite: '§8.2, §6.2',
    level: 'MUST',
    title: 'available = balance - reserved - pending on every figure read of the run; reserved is what open holds still commit',
    async run(ctx) {
      if (ctx.offers('open-hold')) {
        const { holdId } = await ctx.openFundedHold(ctx.amount(10));
        if (ctx.offers('draw')) await ctx.draw(holdId, [{ meter: 'calls', amount: ctx.amount(4) }]);
      }
      await ctx.figures(ctx.payer);
      if (ctx.offers('read-summary')) await ctx.wire.readSummary(ctx.payer);
      if (ctx.offers('list-reservations')) {
        const reply = await ctx.wire.listReservations(ctx.payer);
        const body = answered(reply, `list-reservations ${ctx.payer}`);
        const open = (Array.isArray(body.reservations) ? body.reservations : []).map(asObject).filter((r) => r?.status === 'open') as Json[];
        const committed = open.reduce((sum, r) => sum + Number(r.amount) - Number(r.drawn), 0);
        ensure(body.reserved === committed, 'reserved is not what the open holds still commit',
          `reserved = sum(open holds: amount - drawn) = ${committed} (invariant 2)`, `reserved ${String(body.reserved)}`, reply);
      }
      ensureEveryExchange(ctx.runExchanges(), formulaProblems, 'available = balance - reserved - pending', 'invariant 2 on every figure read');
    },
  },
  {
    id: 'invariants.conservation',
    cite: '§8.6, §6.4',
    level: 'MUST',
    title: 'value is conserved: the legs of every settled record of the run sum to zero, for every kind of movement',
    async run(ctx) {
      const txnIds = [(await ctx.settle(ctx.amount(3), ctx.amount(2))).txnId];
      if (ctx.offers('credit')) {
        const txnId = ctx.id('credit');
        applied(await ctx.wire.credit({ txnId, account: ctx.payer, amount: ctx.amount(4) }), `credit ${txnId}`, true);
        txnIds.push(txnId);
      }
      if (ctx.offers('adjust')) {
        const txnId = ctx.id('adjust');
        applied(await ctx.wire.adjust({ txnId, account: ctx.payer, delta: -ctx.amount(1), reason: 'holon-conformance' }), `adjust ${txnId}`, true);
        txnIds.push(txnId);
      }
      if (ctx.offers('open-hold') && ctx.offers('draw')) {
        const { holdId } = await ctx.openFundedHold(ctx.amount(5));
        txnIds.push((await ctx.draw(holdId, [{ meter: 'calls', amount: ctx.amount(2) }])).txnId);
      }
      for (const txnId of txnIds) await ctx.settlement(txnId);
      ensureEveryExchange(ctx.runExchanges(), conservationProblems, 'the legs of a settled settlement sum to zero', 'every unit came from somewhere (invariant 6)');
    },
  },
  {
    id: 'invariants.append-only',
    cite: '§8.8, §6.9',
    level: 'MUST',
    needs: ['reverse'],
    title: 'a reversal appends its exact inverse: the original record is unchanged but for reversed_by',
    async run(ctx) {
      const { txnId } = await ctx.settle(ctx.amount(5), ctx.amount(4));
      const original = await ctx.settlement(txnId);
      const reversalId = ctx.id('reverse');
      applied(await ctx.wire.reverse({ txnId: reversalId, reverses: txnId, reason: 'holon-conformance' }), `reverse ${txnId}`, true);
      const later = await ctx.settlement(txnId);
      ensureEqual(standing(later.body), standing(original.body), 'the original record after its reversal (nothing is edited)', original.reply, later.reply);
      const reversal = await ctx.settlement(reversalId);
      const accounts = new Set((Array.isArray(original.body.legs) ? original.body.legs : []).map((l) => String(asObject(l)?.account)));
      const inverse = [...accounts].every((a) => legSum(reversal.body.legs, a) === -legSum(original.body.legs, a));
      ensure(reversal.body.state === 'settled' && inverse && legSum(reversal.body.legs) === 0, 'the reversal is not on record as the exact inverse',
        'a settled record whose legs undo the original\'s, account by account (§6.9)', gotOf(reversal.reply), original.reply, reversal.reply);
    },
  },
  {
    id: 'invariants.totals-net',
    cite: '§8.14, §6.3',
    level: 'MUST',
    needs: ['read-summary', 'reverse'],
    title: 'totals are net of corrections: every figure a settlement moved returns once it is reversed',
    async run(ctx) {
      const before = { payer: await ctx.totals(ctx.payer), payee: await ctx.totals(ctx.payee) };
      const { txnId } = await ctx.settle(ctx.amount(5), ctx.amount(4));
      const settled = { payer: await ctx.totals(ctx.payer), payee: await ctx.totals(ctx.payee) };
      applied(await ctx.wire.reverse({ txnId: ctx.id('reverse'), reverses: txnId, reason: 'holon-conformance' }), `reverse ${txnId}`, true);
      let moved = 0;
      for (const who of ['payer', 'payee'] as const) {
        const after = await ctx.totals(who === 'payer' ? ctx.payer : ctx.payee);
        for (const key of Object.keys(settled[who].totals)) {
          if (jsonEqual(settled[who].totals[key], before[who].totals[key])) continue;
          moved += 1;
          ensure(jsonEqual(after.totals[key], before[who].totals[key]), `${who} totals.${key} still counts a reversed settlement`,
            `${JSON.stringify(before[who].totals[key])} (its value before the settlement)`, JSON.stringify(after.totals[key]),
            before[who].reply, settled[who].reply, after.reply);
        }
      }
      if (moved === 0) throw new Inconclusive('no totals figure moved on a settlement, so netting could not be observed (see summary.totals-move)');
    },
  },
  {
    id: 'invariants.integer-amounts',
    cite: '§3, §8.7',
    level: 'MUST',
    title: 'every amount in every answer of the run is a JSON integer (no fraction, no exponent, no string)',
    async run(ctx) {
      await ctx.figures(ctx.payer);
      const { txnId } = await ctx.settle(ctx.amount(2));
      await ctx.settlement(txnId);
      ensureEveryExchange(ctx.runExchanges().filter(isSuccess), integerProblems, 'amounts are JSON integers', 'integers only (invariant 7)');
    },
  },
]);

