/**
 * §3 transport and access: health outside the gate, the loopback gate, percent-encoded path
 * parameters; §7.1 the three meanings of 404 kept apart for an unknown route.
 */
import { checksOf } from '../check.ts';
import type { CheckContext } from '../context.ts';
import { FORWARDED } from '../contract.ts';
import { answered, ensure, gotOf, INVALID, NotApplicable, refused } from '../expect.ts';
import { isSuccess } from './scan.ts';

/** Characters that only survive a round trip when path parameters are percent-encoded and decoded (§3). */
const AWKWARD = ' /:%?#é';

function requireLoopback(ctx: CheckContext): void {
  if (ctx.config.access !== 'loopback') throw new NotApplicable('config access is "other": the loopback gate is not checked');
}

/** The transport checks, in run order. */
export const transportChecks = checksOf('transport', [
  {
    id: 'transport.health',
    cite: '§3',
    level: 'MUST',
    title: 'GET /healthz answers success',
    async run(ctx) {
      const reply = await ctx.wire.health();
      ensure(isSuccess(reply.exchange), 'the liveness check did not answer success',
        '2xx from GET /healthz (§3 Health)', gotOf(reply), reply);
    },
  },
  {
    id: 'transport.health-outside-gate',
    cite: '§3',
    level: 'MUST',
    title: 'GET /healthz answers success even with X-Forwarded-For (it is outside the access gate)',
    async run(ctx) {
      requireLoopback(ctx);
      const reply = await ctx.wire.health(FORWARDED);
      ensure(isSuccess(reply.exchange), 'the liveness check is behind the access gate',
        '2xx: the health endpoint is outside the gate (§3)', gotOf(reply), reply);
    },
  },
  {
    id: 'transport.forwarded-refused',
    cite: '§3, §7.2',
    level: 'MUST',
    title: 'a request carrying X-Forwarded-For is refused 403 not_permitted, and a write so refused moves nothing',
    async run(ctx) {
      requireLoopback(ctx);
      const rule = { status: [403], codes: ['not_permitted'] } as const;
      refused(await ctx.wire.capabilities(FORWARDED), 'the capability read with X-Forwarded-For', rule);
      refused(await ctx.wire.readBalance(ctx.payer, FORWARDED), 'read-balance with X-Forwarded-For', rule);
      const txnId = ctx.id('forwarded');
      const amount = ctx.amount(1);
      refused(await ctx.wire.settle({ txnId, caller: ctx.payer, owner: ctx.payee, rate: amount, retail: amount }, FORWARDED),
        'settle with X-Forwarded-For', rule);
      const { body, reply } = await ctx.settlement(txnId);
      ensure(body.state === 'unknown', 'a settle refused at the gate was recorded anyway',
        'state "unknown": nothing was applied', gotOf(reply), reply);
    },
  },
  {
    id: 'transport.percent-encoding',
    cite: '§3',
    level: 'MUST',
    title: 'percent-encoded path parameters are decoded: an id with spaces, slashes and non-ASCII round-trips exactly',
    needs: ['settle'],
    async run(ctx) {
      const unknownId = `${ctx.id('enc')}${AWKWARD}`;
      const first = await ctx.wire.readSettlement(unknownId);
      const unknown = answered(first, 'read-settlement of an id with awkward characters');
      ensure(unknown.txn_id === unknownId && unknown.state === 'unknown', 'the id was not decoded as sent',
        `200 {"txn_id": ${JSON.stringify(unknownId)}, "state": "unknown"}`, gotOf(first), first);
      const txnId = `${ctx.id('enc')}${AWKWARD}`;
      const amount = ctx.amount(1);
      const settleReply = await ctx.wire.settle({ txnId, caller: ctx.payer, owner: ctx.payee, rate: amount, retail: amount });
      ensure(settleReply.status === 200, 'settle with an id carrying awkward characters was not accepted',
        '200: a transaction id is an opaque string', gotOf(settleReply), settleReply);
      const { body, reply } = await ctx.settlement(txnId);
      ensure(body.txn_id === txnId && body.state === 'settled', 'read-settlement did not find the settlement by its encoded id',
        `{"txn_id": ${JSON.stringify(txnId)}, "state": "settled"}`, gotOf(reply), settleReply, reply);
    },
  },
  {
    id: 'transport.no-such-route',
    cite: '§7.1, §7.2',
    level: 'MUST',
    title: 'a path that is not an operation of the contract answers 404 no_such_route (not not_offered)',
    async run(ctx) {
      const rule = { status: [404], codes: ['no_such_route'] } as const;
      refused(await ctx.wire.raw('GET', '/internal/ledger/no-such-operation'), 'GET of an unknown route', rule);
      refused(await ctx.wire.raw('POST', '/internal/ledger/no-such-operation', '{}'), 'POST to an unknown route', rule);
      refused(await ctx.wire.raw('GET', '/internal/clearing/no-such-document'), 'GET of an unknown clearing route', rule);
    },
  },
  {
    id: 'transport.malformed-json',
    cite: '§3, §7.2',
    level: 'MUST',
    title: 'a request body that is not JSON is refused 422 invalid_request, not 5xx',
    async run(ctx) {
      refused(await ctx.wire.raw('POST', '/internal/ledger/charge', '{"txnId": '), 'settle with a truncated JSON body', INVALID);
    },
  },
]);
