/**
 * §6.1 resolve-account, §6.2 read-balance, §6.3 read-summary: the reads every caller starts from.
 */
import { checksOf } from '../check.ts';
import { answered, asObject, ensure, gotOf, isInt, NotApplicable } from '../expect.ts';
import { figureProblems, reservationProblems } from '../shapes.ts';
import type { Reply } from '../wire.ts';

/** Median answer time, in milliseconds, under which resolve-account counts as cheap (§6.1). */
const CHEAP_RESOLVE_MS = 250;

/** The accounts checks, in run order. */
export const accountChecks = checksOf('accounts', [
  {
    id: 'resolve.known-agent',
    cite: '§6.1',
    level: 'MUST',
    title: 'resolve-account maps the configured agent key to the payer account',
    async run(ctx) {
      const key = ctx.config.fixtures.agent_key;
      const reply = await ctx.wire.resolveAccount(key);
      const body = answered(reply, `resolve-account ${key}`);
      ensure(body.agent === key && body.account === ctx.payer, 'the agent key did not resolve to the payer',
        `{"agent": ${JSON.stringify(key)}, "account": ${JSON.stringify(ctx.payer)}} (fixtures.agent_key resolves to accounts.payer)`,
        gotOf(reply), reply);
    },
  },
  {
    id: 'resolve.unknown-agent-null',
    cite: '§6.1',
    level: 'MUST',
    title: 'an agent key that resolves to nobody answers 200 with account null, not an error',
    async run(ctx) {
      const key = ctx.config.fixtures.unknown_agent_key;
      const reply = await ctx.wire.resolveAccount(key);
      const body = answered(reply, `resolve-account ${key}`);
      ensure(body.agent === key && 'account' in body && body.account === null, 'an unresolvable key was not answered with null',
        `200 {"agent": ${JSON.stringify(key)}, "account": null}: null is an answer, not an error`, gotOf(reply), reply);
    },
  },
  {
    id: 'resolve.cheap',
    cite: '§6.1',
    level: 'SHOULD',
    title: `resolve-account answers cheaply (median of 5 calls under ${CHEAP_RESOLVE_MS} ms)`,
    async run(ctx) {
      const replies: Reply[] = [];
      for (let i = 0; i < 5; i += 1) replies.push(await ctx.wire.resolveAccount(ctx.config.fixtures.agent_key));
      const times = replies.map((r) => r.exchange.elapsed_ms).sort((a, b) => a - b);
      const median = times[2] as number;
      ensure(median < CHEAP_RESOLVE_MS, 'resolve-account is slow; the platform calls it on every priced request',
        `median under ${CHEAP_RESOLVE_MS} ms`, `median ${median} ms (${times.join(', ')} ms)`, ...replies);
    },
  },
  {
    id: 'balance.shape',
    cite: '§6.2',
    level: 'MUST',
    title: 'read-balance answers account, balance, available and reserved as integers, pending an integer or absent',
    async run(ctx) {
      const reply = await ctx.wire.readBalance(ctx.payer);
      const problems = figureProblems(answered(reply, `read-balance ${ctx.payer}`), ctx.payer);
      ensure(problems.length === 0, 'read-balance figures are malformed', 'the §6.2 shape', problems.join('; '), reply);
    },
  },
  {
    id: 'balance.unknown-account',
    cite: '§6.2, §7.1',
    level: 'MUST',
    title: 'read-balance of an account nobody holds answers figures or 404 no_such_object, never not_offered',
    async run(ctx) {
      const account = ctx.id('nobody');
      const reply = await ctx.wire.readBalance(account);
      const body = asObject(reply.body);
      const code = body?.code;
      const ok = (reply.status === 200 && body !== null && figureProblems(body, account).length === 0)
        || (reply.status === 404 && code === 'no_such_object')
        || (reply.status === 422 && typeof code === 'string' && code !== 'not_offered' && code !== 'no_such_route');
      ensure(ok, 'read-balance of an unknown account answered as if the operation were missing or broken',
        'figures, 404 no_such_object or a 422 refusal; a 404 not_offered here would downgrade every caller (§7.1)',
        gotOf(reply), reply);
    },
  },
  {
    id: 'balance.no-reservations',
    cite: '§6.2',
    level: 'MUST',
    title: 'a binding without reservations answers reserved 0 and available equal to balance (less pending)',
    async run(ctx) {
      if (ctx.offers('open-hold')) throw new NotApplicable('the binding offers reservations');
      const f = await ctx.figures(ctx.payer);
      ensure(f.reserved === 0 && f.available === f.balance - f.pending, 'available differs from balance without any reservation',
        `reserved 0, available = balance - pending = ${f.balance - f.pending}`,
        `reserved ${f.reserved}, available ${f.available}`, f.reply);
    },
  },
  {
    id: 'summary.shape',
    cite: '§6.3',
    level: 'MUST',
    title: 'read-summary answers the figures, reservations, totals (integers), funding and statement',
    needs: ['read-summary'],
    async run(ctx) {
      const reply = await ctx.wire.readSummary(ctx.payer);
      const body = answered(reply, `read-summary ${ctx.payer}`);
      const problems = figureProblems(body, ctx.payer);
      if (!Array.isArray(body.reservations)) problems.push('`reservations` must be an array');
      else problems.push(...body.reservations.flatMap(reservationProblems));
      const totals = asObject(body.totals);
      if (totals === null || !Object.values(totals).every(isInt)) problems.push('`totals` must be an object of integers');
      if (!Array.isArray(body.funding)) problems.push('`funding` must be an array');
      if (!Array.isArray(body.statement)) problems.push('`statement` must be an array');
      ensure(problems.length === 0, 'read-summary is malformed', 'the §6.3 shape', problems.join('; '), reply);
    },
  },
  {
    id: 'summary.totals-move',
    cite: '§6.3',
    level: 'SHOULD',
    title: 'totals answer honestly: a settlement moves a figure of the payer and of the payee',
    needs: ['read-summary'],
    async run(ctx) {
      const payerBefore = await ctx.totals(ctx.payer);
      const payeeBefore = await ctx.totals(ctx.payee);
      await ctx.settle(ctx.amount(3), ctx.amount(2));
      for (const [account, before] of [[ctx.payer, payerBefore], [ctx.payee, payeeBefore]] as const) {
        const after = await ctx.totals(account);
        const moved = Object.keys({ ...before.totals, ...after.totals }).some((k) => before.totals[k] !== after.totals[k]);
        ensure(moved, `no totals figure of ${account} moved on a settlement`, 'a figure such as spent or earned to move (§6.3: SHOULD answer honestly)',
          `${JSON.stringify(before.totals)} before and after`, before.reply, after.reply);
      }
    },
  },
]);
