/**
 * §10 finality: the states an immediate binding may answer, explicit state on a deferred one,
 * no state on a refusal, and holds that are immediate everywhere (§10.6).
 */
import type { SettleRequest } from '../../../generated/clearing/client/types.gen.ts';
import { checksOf } from '../check.ts';
import type { CheckContext } from '../context.ts';
import { HOLD_WRITES, VALUE_MOVING, type OperationName } from '../contract.ts';
import { applied, asObject, ensure, gotOf, INVALID, NotApplicable, refused } from '../expect.ts';
import type { Exchange } from '../http.ts';
import { malformed } from '../wire.ts';
import { ensureEveryExchange, isError, isSuccess } from './scan.ts';

/** The accepted answers of the run to operations in `ops`. */
function acceptedOf(ctx: CheckContext, ops: readonly OperationName[]): Exchange[] {
  return ctx.runExchanges().filter((e) => (ops as readonly string[]).includes(e.op) && isSuccess(e) && asObject(e.json) !== null);
}

/** Problems of one accepted answer whose `state`, when present, must be in `allowed`. */
function stateProblems(allowed: readonly unknown[], required: boolean) {
  return (exchange: Exchange): string[] => {
    const body = asObject(exchange.json) ?? {};
    if (!('state' in body)) return required ? ['no `state`'] : [];
    return allowed.includes(body.state) ? [] : [`state ${JSON.stringify(body.state)}`];
  };
}

/** The finality checks, in run order. */
export const finalityChecks = checksOf('finality', [
  {
    id: 'finality.immediate-states',
    cite: '§10.1, §6.4',
    level: 'MUST',
    title: 'an immediate binding answers only settled or unknown, on every read-settlement and accepted answer of the run',
    async run(ctx) {
      if (ctx.declared.finality !== 'immediate') throw new NotApplicable('the binding declares deferred finality');
      const { txnId } = await ctx.settle(ctx.amount(1));
      await ctx.settlement(txnId);
      const reads = ctx.runExchanges().filter((e) => e.op === 'read-settlement' && e.status === 200);
      ensureEveryExchange(reads, stateProblems(['settled', 'unknown'], true), 'read-settlement on an immediate binding', 'state settled or unknown (§6.4)');
      ensureEveryExchange(acceptedOf(ctx, VALUE_MOVING), stateProblems(['settled'], false), 'an accepted answer on an immediate binding',
        'state absent or settled: an immediate binding never produces pending (§10.1)');
    },
  },
  {
    id: 'finality.deferred-carries-state',
    cite: '§10.2',
    level: 'MUST',
    title: 'a deferred binding carries state explicitly on every accepted value-moving answer',
    async run(ctx) {
      if (ctx.declared.finality !== 'deferred') throw new NotApplicable('the binding declares immediate finality');
      await ctx.settle(ctx.amount(1));
      ensureEveryExchange(acceptedOf(ctx, VALUE_MOVING), stateProblems(['settled', 'pending', 'failed'], true),
        'an accepted answer of a deferred binding', 'state settled, pending or failed on every accepted value-moving answer (§10.2)');
    },
  },
  {
    id: 'finality.absent-state-settled',
    cite: '§6, §10.2',
    level: 'MUST',
    title: 'an accepted answer without state reads back as settled',
    async run(ctx) {
      const { txnId, body, reply } = await ctx.settle(ctx.amount(1));
      if ('state' in body) throw new NotApplicable('the binding carries state on its accepted answers');
      const record = await ctx.settlement(txnId);
      ensure(record.body.state === 'settled', 'an accepted settle without state does not read back as settled',
        'state "settled": an absent state MUST be read as settled (§10.2)', gotOf(record.reply), reply, record.reply);
    },
  },
  {
    id: 'finality.refusal-no-state',
    cite: '§6, §10.2',
    level: 'MUST',
    title: 'a refusal carries no state, on every error answer of the run',
    async run(ctx) {
      const reply = await ctx.wire.settle(malformed<SettleRequest>({ txnId: ctx.id('invalid'), caller: ctx.payer, owner: ctx.payee, rate: 0, retail: 0 }));
      refused(reply, 'settle with amounts of 0', INVALID);
      ensureEveryExchange(ctx.runExchanges().filter(isError), (e) => ('state' in (asObject(e.json) ?? {}) ? ['a refusal carrying `state`'] : []),
        'a refusal carries no state', 'no `state` on a 4xx: a refusal is not a settlement (§10.2)');
    },
  },
  {
    id: 'finality.holds-immediate',
    cite: '§10.6',
    level: 'MUST',
    needs: ['open-hold'],
    title: 'opening, resizing and releasing a hold are immediate: no pending or failed state on any hold answer of the run',
    async run(ctx) {
      const { holdId } = await ctx.openFundedHold(ctx.amount(2));
      if (ctx.offers('resize-hold')) applied(await ctx.wire.resizeHold({ holdId, amount: ctx.amount(1) }), 'resize-hold', true);
      if (ctx.offers('release-hold')) applied(await ctx.wire.releaseHold({ holdId }), 'release-hold', true);
      ensureEveryExchange(acceptedOf(ctx, HOLD_WRITES), stateProblems(['settled'], false), 'a hold answer', 'state absent (or settled) on open-hold, resize-hold and release-hold (§10.6)');
    },
  },
]);
