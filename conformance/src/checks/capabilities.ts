/**
 * §5 capability declaration: the document's fields, and that it tells the truth about which
 * operations answer (§5.2: an unlisted operation answers 404 not_offered).
 */
import { checksOf } from '../check.ts';
import type { CheckContext } from '../context.ts';
import { OPERATIONS, REQUIRED_OPERATIONS, type OperationName } from '../contract.ts';
import { answered, asObject, ensure, fail, gotOf, NotApplicable, type Json } from '../expect.ts';
import { capabilityProblems, operationNameProblems, unitProblems } from '../shapes.ts';
import { malformed, type Reply } from '../wire.ts';

/** Reads the capability document on the check's own wire. */
async function readCapabilities(ctx: CheckContext): Promise<{ doc: Json; reply: Reply }> {
  const reply = await ctx.wire.capabilities();
  return { doc: answered(reply, 'GET /internal/clearing/capabilities'), reply };
}

/**
 * Calls `op` the way a caller holding a stale capability document would (§5.2). For an offered
 * write the body is empty, so nothing is applied; for an operation not offered the body is
 * well-formed, so only the not_offered answer can be right.
 */
export function probe(ctx: CheckContext, op: OperationName, offered: boolean): Promise<Reply> {
  const w = ctx.wire;
  const body = <T>(valid: Record<string, unknown>): T => malformed<T>(offered ? {} : valid);
  switch (op) {
    case 'resolve-account': return w.resolveAccount(ctx.id('probe-agent'));
    case 'read-balance': return w.readBalance(ctx.payer);
    case 'read-summary': return w.readSummary(ctx.payer);
    case 'read-settlement': return w.readSettlement(ctx.id('probe'));
    case 'list-reservations': return w.listReservations(ctx.payer);
    case 'read-reservation': return w.readReservation(ctx.id('probe-hold'));
    case 'credit': return w.credit(body({ txnId: ctx.id('probe'), account: ctx.payer, amount: ctx.amount(1) }));
    case 'settle': return w.settle(body({ txnId: ctx.id('probe'), caller: ctx.payer, owner: ctx.payee, rate: ctx.amount(1), retail: ctx.amount(1) }));
    case 'reverse': return w.reverse(body({ txnId: ctx.id('probe'), reverses: ctx.id('probe'), reason: 'probe' }));
    case 'adjust': return w.adjust(body({ txnId: ctx.id('probe'), account: ctx.payer, delta: ctx.amount(1), reason: 'probe' }));
    case 'open-hold': return w.openHold(body({ holdId: ctx.id('probe-hold'), account: ctx.payer, amount: ctx.amount(1), expiresAt: ctx.expiresAt(60_000) }));
    case 'resize-hold': return w.resizeHold(body({ holdId: ctx.id('probe-hold'), amount: ctx.amount(1) }));
    case 'draw': return w.draw(body({ holdId: ctx.id('probe-hold'), txnId: ctx.id('probe'), caller: ctx.payer, owner: ctx.payee, lines: [{ meter: 'probe', amount: ctx.amount(1) }] }));
    case 'release-hold': return w.releaseHold(body({ holdId: ctx.id('probe-hold') }));
  }
}

/** Whether a reply is the §5.2 answer for an operation that is not offered. */
export function isNotOffered(reply: Reply): boolean {
  return reply.status === 404 && asObject(reply.body)?.code === 'not_offered';
}

/** The capability checks, in run order. */
export const capabilityChecks = checksOf('capabilities', [
  {
    id: 'capabilities.document',
    cite: '§5',
    level: 'MUST',
    title: 'The capability read answers a document with every REQUIRED field, each of the right type',
    async run(ctx) {
      const { doc, reply } = await readCapabilities(ctx);
      const problems = capabilityProblems(doc);
      ensure(problems.length === 0, 'the capability document is incomplete or mistyped',
        'contract, unit, operations, finality, notifications, funding, payout, negative_balance (§5)', problems.join('; '), reply);
    },
  },
  {
    id: 'capabilities.unit',
    cite: '§11',
    level: 'MUST',
    title: 'unit declares a three-letter code, an integer scale and a peg that is null or an object',
    async run(ctx) {
      const { doc, reply } = await readCapabilities(ctx);
      const problems = unitProblems(doc.unit);
      ensure(problems.length === 0, 'the unit declaration is malformed', 'code ^[A-Z]{3}$, scale >= 0, peg null or object (§11)',
        problems.join('; '), reply);
    },
  },
  {
    id: 'capabilities.poll',
    cite: '§5, §10.3',
    level: 'MUST',
    title: 'notifications lists poll',
    async run(ctx) {
      const { doc, reply } = await readCapabilities(ctx);
      ensure(Array.isArray(doc.notifications) && doc.notifications.includes('poll'), '`notifications` does not list poll',
        '"poll" in notifications (poll is REQUIRED, §5)', JSON.stringify(doc.notifications), reply);
    },
  },
  {
    id: 'capabilities.required-operations',
    cite: '§5',
    level: 'MUST',
    title: 'operations lists resolve-account, read-balance, read-settlement and settle',
    async run(ctx) {
      const { reply } = await readCapabilities(ctx);
      const missing = REQUIRED_OPERATIONS.filter((op) => !ctx.offers(op));
      ensure(missing.length === 0, 'a REQUIRED operation is not listed', REQUIRED_OPERATIONS.join(', '),
        `missing: ${missing.join(', ')}`, reply);
    },
  },
  {
    id: 'capabilities.operation-names',
    cite: '§5',
    level: 'SHOULD',
    title: 'operations names only operations of §6, each once (the capability read is not listed)',
    async run(ctx) {
      const { doc, reply } = await readCapabilities(ctx);
      const problems = operationNameProblems(Array.isArray(doc.operations) ? doc.operations : []);
      ensure(problems.length === 0, '`operations` names something the contract does not have', OPERATIONS.join(', '),
        problems.join('; '), reply);
    },
  },
  {
    id: 'capabilities.credit-needs-funding',
    cite: '§5.1, §6.7',
    level: 'MUST',
    title: 'credit is offered only with a non-empty funding array',
    async run(ctx) {
      const { doc, reply } = await readCapabilities(ctx);
      const funding = Array.isArray(doc.funding) ? doc.funding : [];
      ensure(!ctx.offers('credit') || funding.length > 0, 'credit is offered but funding is empty',
        'credit absent when funding is empty; value the holder can put in MUST be declared in funding (§5.1, §6.7)',
        `operations lists credit, funding is ${JSON.stringify(doc.funding)}`, reply);
    },
  },
  {
    id: 'capabilities.listed-operations-answer',
    cite: '§5',
    level: 'MUST',
    title: 'every listed operation answers: never 404 not_offered or no_such_route, never 5xx',
    async run(ctx) {
      for (const op of OPERATIONS.filter((o) => ctx.offers(o))) {
        const reply = await probe(ctx, op, true);
        const code = asObject(reply.body)?.code;
        const broken = reply.status === null || reply.status >= 500
          || (reply.status === 404 && (code === 'not_offered' || code === 'no_such_route'));
        if (broken) {
          fail(`${op} is listed in operations but does not answer as an operation`,
            'an answer from the operation (a read, or a refusal of the empty body); not 404 not_offered/no_such_route, not 5xx',
            gotOf(reply), reply);
        }
      }
    },
  },
  {
    id: 'capabilities.unlisted-not-offered',
    cite: '§5.2, §7.2',
    level: 'MUST',
    title: 'every operation not listed answers 404 with code not_offered',
    async run(ctx) {
      const unlisted = OPERATIONS.filter((op) => !ctx.offers(op));
      if (unlisted.length === 0) throw new NotApplicable('the binding offers every operation');
      for (const op of unlisted) {
        const reply = await probe(ctx, op, false);
        ensure(isNotOffered(reply), `${op} is not listed, and calling it did not answer not_offered`,
          '404 {"error": ..., "code": "not_offered"} (§5.2)', gotOf(reply), reply);
      }
    },
  },
  {
    id: 'capabilities.period-shape',
    cite: '§5, §12.1',
    level: 'MUST',
    title: 'period, when present, names its grain and the current period; it is never present as null',
    async run(ctx) {
      const { doc, reply } = await readCapabilities(ctx);
      if (!('period' in doc)) throw new NotApplicable('the binding declares no periods');
      const period = asObject(doc.period);
      ensure(period !== null && typeof period.grain === 'string' && period.grain !== ''
        && typeof period.current === 'string' && period.current !== '',
      '`period` is malformed', '{"grain": string, "current": string}, or the field absent (§5, §12.1)',
      JSON.stringify(doc.period), reply);
    },
  },
]);
