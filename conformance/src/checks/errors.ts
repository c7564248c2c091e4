/**
 * §7 errors, checked last and across the whole run: every error answer carries the `{error, code}`
 * body, a §7.2 code travels with its status, and no refusal hides behind 200 ok:false (§7.4).
 */
import type { SettleRequest } from '../../../generated/clearing/client/types.gen.ts';
import { checksOf } from '../check.ts';
import type { CheckContext } from '../context.ts';
import { ERROR_STATUS, FORWARDED, isKnownCode, OPERATIONS } from '../contract.ts';
import { asObject, ensure, gotOf, NotApplicable } from '../expect.ts';
import type { Exchange } from '../http.ts';
import { errorBodyProblems } from '../shapes.ts';
import { malformed, type Reply } from '../wire.ts';
import { probe } from './capabilities.ts';
import { ensureEveryExchange, isError, isSuccess } from './scan.ts';

/**
 * Provokes one error of each kind the binding can produce: an unknown route, a malformed
 * settle, an unknown hold, an operation not offered, a hold available cannot cover, and (with
 * the loopback gate) a forwarded request.
 */
async function provokeErrors(ctx: CheckContext): Promise<void> {
  await ctx.wire.raw('GET', '/internal/ledger/no-such-operation');
  await ctx.wire.settle(malformed<SettleRequest>({ txnId: ctx.id('invalid'), caller: ctx.payer }));
  if (ctx.offers('read-reservation')) await ctx.wire.readReservation(ctx.id('no-such-hold'));
  const unlisted = OPERATIONS.find((op) => !ctx.offers(op));
  if (unlisted !== undefined) await probe(ctx, unlisted, false);
  if (ctx.offers('open-hold')) {
    const f = await ctx.figures(ctx.payer);
    await ctx.wire.openHold({ holdId: ctx.id('hold'), account: ctx.payer, amount: Math.max(f.available, 0) + ctx.amount(1), expiresAt: ctx.expiresAt(60_000) });
  }
  if (ctx.config.access === 'loopback') await ctx.wire.readBalance(ctx.payer, FORWARDED);
}

/** Problems of one error answer's code: a §7.2 code must travel with its §7.2 status. */
function codeStatusProblems(exchange: Exchange): string[] {
  const code = asObject(exchange.json)?.code;
  if (typeof code !== 'string' || !isKnownCode(code)) return [];
  return ERROR_STATUS[code] === exchange.status ? [] : [`code ${code} with status ${exchange.status}; §7.2 pairs it with ${ERROR_STATUS[code]}`];
}

/** The error checks, in run order: last of all, so their scans see every answer of the run. */
export const errorChecks = checksOf('errors', [
  {
    id: 'errors.body',
    cite: '§7, §7.3',
    level: 'MUST',
    title: 'every error answer of the run carries a JSON body with an error sentence and a code',
    async run(ctx) {
      await provokeErrors(ctx);
      ensureEveryExchange(ctx.runExchanges().filter(isError), (e) => errorBodyProblems(e.json), 'the error body',
        '{"error": "<a sentence>", "code": "<a §7.2 code or the binding\'s own>"} on every error (§7)');
    },
  },
  {
    id: 'errors.code-status',
    cite: '§7.2',
    level: 'MUST',
    title: 'a §7.2 code always travels with its status (e.g. not_offered with 404, invalid_request with 422)',
    async run(ctx) {
      await provokeErrors(ctx);
      ensureEveryExchange(ctx.runExchanges().filter(isError), codeStatusProblems, 'a code with its status',
        'the §7.2 pairing of status and code; codes of the binding\'s own are accepted with any status');
    },
  },
  {
    id: 'errors.no-ok-false',
    cite: '§7.4',
    level: 'MUST',
    title: 'no answer of the run is a refusal dressed as 200 ok:false',
    async run(ctx) {
      await provokeErrors(ctx);
      ensureEveryExchange(ctx.runExchanges().filter(isSuccess), (e) => (asObject(e.json)?.ok === false ? ['a 2xx answer with ok: false'] : []),
        'a refusal carries a 4xx status', 'a refusal MUST carry a 4xx status, never 200 with ok: false (§7.4)');
    },
  },
  {
    id: 'errors.messages-specific',
    cite: '§7.4',
    level: 'SHOULD',
    title: 'a refusal names the object it is about (an unknown hold or transaction is named in the error)',
    async run(ctx) {
      let reply: Reply;
      let name: string;
      if (ctx.offers('read-reservation')) {
        name = ctx.id('no-such-hold');
        reply = await ctx.wire.readReservation(name);
      } else if (ctx.offers('reverse')) {
        name = ctx.id('never');
        reply = await ctx.wire.reverse({ txnId: ctx.id('reverse'), reverses: name, reason: 'holon-conformance' });
      } else {
        throw new NotApplicable('the binding offers neither read-reservation nor reverse, the refusals that name an object');
      }
      const error = asObject(reply.body)?.error;
      ensure(typeof error === 'string' && error.includes(name), 'the refusal does not name the object',
        `an error sentence naming ${name} (§7.4: refusal messages SHOULD be specific)`, gotOf(reply), reply);
    },
  },
]);
