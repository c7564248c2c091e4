/**
 * Concurrency (§8.4, §6.11, §9, §15): what must hold when calls race. The contract states no
 * ordering, so only the outcomes are checked: no cap is exceeded, no available is overcommitted,
 * no replay applies twice. An error answer under load is tolerated; a wrong outcome is not.
 */
import { checksOf } from '../check.ts';
import { asObject, ensure, gotOf, Inconclusive, isInt, type Json } from '../expect.ts';
import type { Reply } from '../wire.ts';

/** How many calls each check sends at once. */
const PARALLEL = 8;

/** The bodies of the replies that were accepted with applied true. */
function appliedBodies(replies: readonly Reply[]): Json[] {
  return replies.map((r) => (r.status === 200 ? asObject(r.body) : null)).filter((b): b is Json => b?.applied === true);
}

/** The concurrency checks, in run order. */
export const concurrencyChecks = checksOf('concurrency', [
  {
    id: 'concurrency.parallel-draws',
    cite: '§8.4, §6.13',
    level: 'MUST',
    needs: ['open-hold', 'draw'],
    title: `${PARALLEL} parallel draws on one hold never bill more than its cap, and the balance moves by what they billed`,
    async run(ctx) {
      const cap = ctx.amount(10);
      const { holdId } = await ctx.openFundedHold(cap);
      const before = await ctx.figures(ctx.payer);
      const replies = await Promise.all(Array.from({ length: PARALLEL }, () => ctx.wire.draw({
        holdId, txnId: ctx.id('draw'), caller: ctx.payer, owner: ctx.payee, lines: [{ meter: 'calls', amount: ctx.amount(3) }],
      })));
      const billed = appliedBodies(replies).map((b) => (isInt(b.billed) ? b.billed : Number.NaN));
      ensure(billed.length > 0, `every one of ${PARALLEL} parallel draws of ${ctx.amount(3)} on an open hold of ${cap} was refused`,
        'at least one draw applied: the hold was answered open with its whole cap undrawn (§6.13)', replies.map(gotOf).join(' | '), ...replies);
      const total = billed.reduce((a, b) => a + b, 0);
      ensure(total <= cap, `parallel draws billed ${total} against a cap of ${cap}`, `at most ${cap} in total (invariant 4)`,
        `billed ${billed.join(' + ')}`, ...replies);
      const after = await ctx.figures(ctx.payer);
      ensure(after.balance - before.balance === -total, 'the payer\'s balance does not match what the parallel draws billed',
        `a move of ${-total}`, `${after.balance - before.balance}`, before.reply, ...replies, after.reply);
    },
  },
  {
    id: 'concurrency.parallel-holds',
    cite: '§6.11, §8.2',
    level: 'MUST',
    needs: ['open-hold'],
    title: `${PARALLEL} parallel holds, each over half of available, never overcommit: at most one is opened`,
    async run(ctx) {
      const start = await ctx.ensureAvailable(ctx.amount(10));
      const size = Math.floor(start.available / 2) + 1;
      const max = ctx.declared.max_amount;
      if (max !== null && size > max) throw new Inconclusive(`half of available (${size}) exceeds limits.max_amount ${max}`);
      const holdIds = Array.from({ length: PARALLEL }, () => ctx.id('hold'));
      const replies = await Promise.all(holdIds.map((holdId) => ctx.wire.openHold({
        holdId, account: ctx.payer, amount: size, expiresAt: ctx.expiresAt(60_000),
      })));
      const opened = holdIds.filter((_, i) => asObject((replies[i] as Reply).body)?.applied === true);
      if (ctx.offers('release-hold')) for (const holdId of opened) await ctx.wire.releaseHold({ holdId });
      ensure(opened.length <= 1, `${opened.length} parallel holds of ${size} were opened with ${start.available} available`,
        'at most one: a hold MUST be refused when available does not cover it (§6.11)', replies.map(gotOf).join(' | '), ...replies);
      ensure(opened.length === 1, `none of ${PARALLEL} parallel holds of ${size} was opened with ${start.available} available`,
        'exactly one: available covers one of them (§6.11)', replies.map(gotOf).join(' | '), start.reply, ...replies);
    },
  },
  {
    id: 'concurrency.parallel-replays',
    cite: '§9',
    level: 'MUST',
    title: `${PARALLEL} parallel settles under one transaction id apply once, and exactly one says so`,
    async run(ctx) {
      const before = await ctx.figures(ctx.payer);
      const txnId = ctx.id('settle');
      const retail = ctx.amount(3);
      const replies = await Promise.all(Array.from({ length: PARALLEL }, () => ctx.wire.settle({
        txnId, caller: ctx.payer, owner: ctx.payee, rate: retail, retail,
      })));
      const after = await ctx.figures(ctx.payer);
      ensure(after.balance - before.balance === -retail, 'parallel replays of one settlement did not move value exactly once',
        `a move of ${-retail}`, `${after.balance - before.balance}`, before.reply, ...replies, after.reply);
      const count = appliedBodies(replies).length;
      ensure(count === 1, `${count} of the parallel replays answered applied: true`, 'exactly one (a replay MUST be reported, §9)',
        replies.map(gotOf).join(' | '), ...replies);
    },
  },
]);
