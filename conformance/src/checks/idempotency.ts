/**
 * §9 idempotency, row by row: a repeat of every operation returns what the table says, changes
 * nothing, and different intents never deduplicate against each other.
 */
import { checksOf } from '../check.ts';
import type { CheckContext } from '../context.ts';
import type { OperationName } from '../contract.ts';
import { answered, applied, asObject, ensure, ensureEqual, gotOf, jsonEqual, NotApplicable, REFUSED, refused, type Json } from '../expect.ts';
import { ensureMoved, type Figures } from '../figures.ts';
import type { Reply } from '../wire.ts';

/** Figures every balance-bearing read carries (§6.2). */
const FIGURES = ['account', 'balance', 'available', 'reserved', 'pending', 'period'];

/** The fields of `body` a repeat of the read must answer unchanged; extra fields (timestamps) are the binding's. */
function pick(body: Json, fields: readonly string[]): Json {
  return Object.fromEntries(fields.map((f) => [f, body[f]]));
}

/**
 * One read per offered read operation, each with the fields a repeat must keep: resolve-account,
 * read-balance (three times: polling must not accumulate, §8.13), read-settlement, read-summary,
 * list-reservations and read-reservation.
 */
function repeatableReads(ctx: CheckContext, txnId: string, holdId: string | null): [OperationName, () => Promise<Reply>, readonly string[]][] {
  const w = ctx.wire;
  const reads: [OperationName, () => Promise<Reply>, readonly string[]][] = [
    ['resolve-account', () => w.resolveAccount(ctx.config.fixtures.agent_key), ['agent', 'account']],
    ['read-balance', () => w.readBalance(ctx.payer), FIGURES],
    ['read-balance', () => w.readBalance(ctx.payer), FIGURES],
    ['read-settlement', () => w.readSettlement(txnId), ['txn_id', 'state', 'account', 'amount', 'legs', 'reversed_by', 'period']],
    ['read-summary', () => w.readSummary(ctx.payer), [...FIGURES, 'totals']],
    ['list-reservations', () => w.listReservations(ctx.payer), [...FIGURES, 'reservations']],
  ];
  if (holdId !== null) reads.push(['read-reservation', () => w.readReservation(holdId), ['hold_id', 'amount', 'drawn', 'status', 'draws']]);
  return reads.filter(([op]) => ctx.offers(op));
}

/**
 * Sends one request twice: the first must apply (`first` names it in a failure), the repeat must
 * answer applied false (`repeat`), §9. Answers both bodies, the repeat's reply, and the payer's
 * figures read between the two.
 */
async function sendTwice(
  ctx: CheckContext, send: () => Promise<Reply>, first: string, repeat: string,
): Promise<{ first: Json; again: Json; before: Figures; reply: Reply }> {
  const firstBody = applied(await send(), first, true);
  const before = await ctx.figures(ctx.payer);
  const reply = await send();
  return { first: firstBody, again: applied(reply, repeat, false), before, reply };
}

/** Fails when an answer claims to replay another intent's identifier (§9 "different doors, different keys"). */
async function ensureOwnNamespace(ctx: CheckContext, txnId: string, what: string): Promise<void> {
  const before = await ctx.figures(ctx.payer);
  const amount = ctx.amount(2);
  const reply = await ctx.wire.settle({ txnId, caller: ctx.payer, owner: ctx.payee, rate: amount, retail: amount });
  const body = asObject(reply.body);
  if (reply.status === 422) {
    refused(reply, `settle under the id of ${what}`, REFUSED);
    ensureMoved(`a refused settle under the id of ${what}`, 'balance', before, await ctx.figures(ctx.payer), 0, reply);
    return;
  }
  ensure(reply.status === 200 && body?.applied === true, `settle under the id of ${what} was reported as a replay`,
    `either a 422 refusal or applied: true as a settlement of its own; never applied: false (§9)`, gotOf(reply), reply);
  ensureMoved(`settle under the id of ${what}, applied as its own`, 'balance', before, await ctx.figures(ctx.payer), -amount, reply);
}

/** The idempotency checks, in run order. */
export const idempotencyChecks = checksOf('idempotency', [
  {
    id: 'idempotency.reads-repeatable',
    cite: '§9, §8.13',
    level: 'MUST',
    title: 'every read answers the same twice in a row; polling read-balance accumulates nothing',
    async run(ctx) {
      const { txnId } = await ctx.settle(ctx.amount(1));
      const holdId = ctx.offers('open-hold') && ctx.offers('read-reservation')
        ? (await ctx.openFundedHold(ctx.amount(1))).holdId
        : null;
      for (const [op, read, fields] of repeatableReads(ctx, txnId, holdId)) {
        const first = await read();
        const second = await read();
        const a = pick(answered(first, op), fields);
        const b = pick(answered(second, op), fields);
        ensure(jsonEqual(a, b), `${op} answered differently when repeated with nothing in between`,
          JSON.stringify(a), JSON.stringify(b), first, second);
      }
    },
  },
  {
    id: 'idempotency.credit-replay',
    cite: '§9, §6.7',
    level: 'MUST',
    needs: ['credit'],
    title: 'a repeated credit answers applied false and changes no balance',
    async run(ctx) {
      const body = { txnId: ctx.id('credit'), account: ctx.payer, amount: ctx.amount(3) };
      const { before, reply } = await sendTwice(ctx, () => ctx.wire.credit(body), 'the first credit', 'the repeated credit');
      ensureMoved('a repeated credit', 'balance', before, await ctx.figures(ctx.payer), 0, reply);
    },
  },
  {
    id: 'idempotency.settle-replay',
    cite: '§9, §6.8',
    level: 'MUST',
    title: 'a repeated settle answers applied false, changes no balance and leaves one record',
    async run(ctx) {
      const retail = ctx.amount(5);
      const { txnId } = await ctx.settle(retail, ctx.amount(4));
      const payer = await ctx.figures(ctx.payer);
      const payee = await ctx.figures(ctx.payee);
      const reply = await ctx.wire.settle({ txnId, caller: ctx.payer, owner: ctx.payee, rate: ctx.amount(4), retail });
      applied(reply, 'the repeated settle', false);
      ensureMoved('a repeated settle, payer', 'balance', payer, await ctx.figures(ctx.payer), 0, reply);
      ensureMoved('a repeated settle, payee', 'balance', payee, await ctx.figures(ctx.payee), 0, reply);
      const record = await ctx.settlement(txnId);
      ensureEqual(record.body.amount, retail, 'the record after the repeat', reply, record.reply);
    },
  },
  {
    id: 'idempotency.settle-replay-other-terms',
    cite: '§9, §6.8',
    level: 'MUST',
    title: 'a settle repeating an id with other terms is a replay (applied false) or a 422 refusal; it never applies',
    async run(ctx) {
      const retail = ctx.amount(5);
      const { txnId } = await ctx.settle(retail, ctx.amount(4));
      const before = await ctx.figures(ctx.payer);
      const reply = await ctx.wire.settle({ txnId, caller: ctx.payer, owner: ctx.payee, rate: ctx.amount(7), retail: ctx.amount(7) });
      if (reply.status === 422) refused(reply, 'the repeat with other terms', REFUSED);
      else applied(reply, 'the repeat with other terms', false);
      ensureMoved('a repeat with other terms', 'balance', before, await ctx.figures(ctx.payer), 0, reply);
      const record = await ctx.settlement(txnId);
      ensureEqual(record.body.amount, retail, 'the record keeps the first terms', reply, record.reply);
    },
  },
  {
    id: 'idempotency.reverse-replay',
    cite: '§9, §6.9',
    level: 'MUST',
    needs: ['reverse'],
    title: 'a repeated reverse answers applied false and the same amount, and changes no balance',
    async run(ctx) {
      const retail = ctx.amount(3);
      const { txnId } = await ctx.settle(retail);
      const body = { txnId: ctx.id('reverse'), reverses: txnId, reason: 'holon-conformance' };
      const { again, before, reply } = await sendTwice(ctx, () => ctx.wire.reverse(body), 'the first reversal', 'the repeated reversal');
      ensureEqual(again.amount, retail, 'the amount of the repeated reversal', reply);
      ensureMoved('a repeated reversal', 'balance', before, await ctx.figures(ctx.payer), 0, reply);
    },
  },
  {
    id: 'idempotency.reverse-draw-replay',
    cite: '§9, §6.9',
    level: 'MUST',
    needs: ['reverse', 'open-hold', 'draw'],
    title: 'a replayed reversal of a draw answers applied false and gives the hold\'s cap back only once',
    async run(ctx) {
      const cap = ctx.amount(10);
      const { holdId } = await ctx.openFundedHold(cap);
      const { txnId } = await ctx.draw(holdId, [{ meter: 'calls', amount: ctx.amount(4) }]);
      const body = { txnId: ctx.id('reverse'), reverses: txnId, reason: 'holon-conformance' };
      const { before, reply } = await sendTwice(ctx, () => ctx.wire.reverse(body), 'the reversal of the draw', 'the replayed reversal of the draw');
      const after = await ctx.figures(ctx.payer);
      ensureMoved('a replayed reversal of a draw', 'balance', before, after, 0, reply);
      ensureMoved('a replayed reversal of a draw (the cap was already given back)', 'reserved', before, after, 0, reply);
      const again = await ctx.draw(holdId, [{ meter: 'calls', amount: cap + ctx.amount(4) }]);
      ensureEqual(again.body.billed, cap, 'a draw past the cap after the reversal and its replay bills the cap once (§6.9 "once")', reply, again.reply);
    },
  },
  {
    id: 'idempotency.adjust-replay',
    cite: '§9, §6.10',
    level: 'MUST',
    needs: ['adjust'],
    title: 'a repeated adjust answers applied false and changes no balance',
    async run(ctx) {
      const body = { txnId: ctx.id('adjust'), account: ctx.payer, delta: ctx.amount(2), reason: 'holon-conformance' };
      const { before, reply } = await sendTwice(ctx, () => ctx.wire.adjust(body), 'the first adjustment', 'the repeated adjustment');
      ensureMoved('a repeated adjustment', 'balance', before, await ctx.figures(ctx.payer), 0, reply);
    },
  },
  {
    id: 'idempotency.hold-replay',
    cite: '§9, §6.11',
    level: 'MUST',
    needs: ['open-hold'],
    title: 'reopening a hold with identical terms answers applied false and the existing reservation, reserving nothing more',
    async run(ctx) {
      const cap = ctx.amount(10);
      await ctx.ensureAvailable(cap);
      const holdId = ctx.id('hold');
      const body = { holdId, account: ctx.payer, amount: cap, expiresAt: ctx.expiresAt(600_000) };
      const { again, before, reply } = await sendTwice(ctx, () => ctx.wire.openHold(body), 'the first open-hold', 'the repeated open-hold');
      const record = asObject(again.reservation);
      ensureEqual(record ? [record.hold_id, record.amount] : null, [holdId, cap], 'the existing reservation in the repeat\'s answer', reply);
      ensureMoved('a repeated open-hold', 'available', before, await ctx.figures(ctx.payer), 0, reply);
    },
  },
  {
    id: 'idempotency.hold-other-terms',
    cite: '§9, §6.11, §8.12',
    level: 'MUST',
    needs: ['open-hold'],
    title: 'reopening a hold with another amount is refused 422 terms_conflict, never silently reconciled',
    async run(ctx) {
      const cap = ctx.amount(10);
      const { holdId } = await ctx.openFundedHold(cap);
      const before = await ctx.figures(ctx.payer);
      const reply = await ctx.wire.openHold({ holdId, account: ctx.payer, amount: ctx.amount(5), expiresAt: ctx.expiresAt(600_000) });
      refused(reply, 'reopening a hold with another amount', { status: [422], codes: ['terms_conflict'] });
      ensureMoved('a refused reopening', 'available', before, await ctx.figures(ctx.payer), 0, reply);
    },
  },
  {
    id: 'idempotency.resize-same-target',
    cite: '§9, §6.12',
    level: 'MUST',
    needs: ['open-hold', 'resize-hold'],
    title: 'resizing to the cap a hold already has answers applied false; a replayed raise applies once',
    async run(ctx) {
      const cap = ctx.amount(10);
      const raised = ctx.amount(14);
      await ctx.ensureAvailable(raised);
      const { holdId } = await ctx.openHold(cap);
      const before = await ctx.figures(ctx.payer);
      const same = await ctx.wire.resizeHold({ holdId, amount: cap });
      applied(same, 'resizing to the current cap', false);
      ensureMoved('resizing to the current cap', 'available', before, await ctx.figures(ctx.payer), 0, same);
      applied(await ctx.wire.resizeHold({ holdId, amount: raised }), 'the raise', true);
      const replay = await ctx.wire.resizeHold({ holdId, amount: raised });
      applied(replay, 'the replayed raise', false);
      ensureMoved('a raise and its replay (the cap must not walk upward)', 'available', before, await ctx.figures(ctx.payer), cap - raised, replay);
    },
  },
  {
    id: 'idempotency.draw-replay',
    cite: '§9, §6.13',
    level: 'MUST',
    needs: ['open-hold', 'draw'],
    title: 'a repeated draw posts nothing and answers applied false with the same billed figure and the same stored lines',
    async run(ctx) {
      const cap = ctx.amount(10);
      const { holdId } = await ctx.openFundedHold(cap);
      const body = { holdId, txnId: ctx.id('draw'), caller: ctx.payer, owner: ctx.payee, lines: [{ meter: 'a', amount: ctx.amount(6) }, { meter: 'b', amount: ctx.amount(6) }] };
      const { first, again, before, reply } = await sendTwice(ctx, () => ctx.wire.draw(body), 'the first draw', 'the repeated draw');
      ensureEqual(pick(again, ['billed', 'refused', 'lines']), pick(first, ['billed', 'refused', 'lines']),
        'the repeated draw\'s billed, refused and lines (they must equal the first answer\'s)', reply);
      ensureMoved('a repeated draw', 'balance', before, await ctx.figures(ctx.payer), 0, reply);
    },
  },
  {
    id: 'idempotency.release-replay',
    cite: '§9, §6.14, §8.3',
    level: 'MUST',
    needs: ['open-hold', 'release-hold'],
    title: 'a second release answers applied false and released 0, and hands nothing back twice',
    async run(ctx) {
      const cap = ctx.amount(10);
      const { holdId } = await ctx.openFundedHold(cap);
      const { again, before, reply } = await sendTwice(ctx, () => ctx.wire.releaseHold({ holdId }), 'the first release', 'the second release');
      ensureEqual(again.released, 0, 'released on the second release', reply);
      ensureMoved('a second release', 'available', before, await ctx.figures(ctx.payer), 0, reply);
    },
  },
  {
    id: 'idempotency.separate-namespaces',
    cite: '§9, §4',
    level: 'MUST',
    title: 'a settle under the id of a credit, an adjustment or a hold is never reported as a replay of it',
    async run(ctx) {
      let probed = false;
      for (const op of ['credit', 'adjust'] as const) {
        if (!ctx.offers(op)) continue;
        const txnId = ctx.id(op);
        const reply = op === 'credit'
          ? await ctx.wire.credit({ txnId, account: ctx.payer, amount: ctx.amount(2) })
          : await ctx.wire.adjust({ txnId, account: ctx.payer, delta: ctx.amount(2), reason: 'holon-conformance' });
        applied(reply, `the ${op}`, true);
        await ensureOwnNamespace(ctx, txnId, `a ${op}`);
        probed = true;
      }
      if (ctx.offers('open-hold')) {
        const { holdId } = await ctx.openFundedHold(ctx.amount(1));
        await ensureOwnNamespace(ctx, holdId, 'a hold');
        probed = true;
      }
      if (!probed) throw new NotApplicable('the binding offers no door besides settle whose identifier could collide');
    },
  },
]);

