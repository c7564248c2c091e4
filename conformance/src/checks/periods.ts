/**
 * §12 periods: `period` (and `opened_in` on reservation records) wherever §12.1 requires them
 * when the binding declares periods, and nowhere when it does not.
 */
import { checksOf } from '../check.ts';
import type { CheckContext } from '../context.ts';
import { BALANCE_BEARING_READS, VALUE_MOVING } from '../contract.ts';
import { asObject, type Json } from '../expect.ts';
import type { Exchange } from '../http.ts';
import { ensureEveryExchange, isSuccess } from './scan.ts';

/**
 * Problems of one object's `period` field: a non-empty string when declared, absent otherwise.
 * read-reservation answers a record, whose period is null once released (§6.5), with "period
 * beside it" (§6.6); the two share one field, so a released record may answer either.
 */
function periodProblems(declared: boolean, body: Json, where: string): string[] {
  if (!declared) return 'period' in body ? [`${where} carries period though none is declared`] : [];
  if (typeof body.period === 'string' && body.period !== '') return [];
  return where === 'read-reservation' && body.status === 'released' && body.period === null ? [] : [`${where} has no period`];
}

/** The reservation records an answer carries: its own body, `reservation`, or `reservations[]`. */
function recordsOf(exchange: Exchange): Json[] {
  const body = asObject(exchange.json);
  if (body === null || !isSuccess(exchange)) return [];
  if (exchange.op === 'read-reservation') return [body];
  if (['open-hold', 'resize-hold', 'release-hold'].includes(exchange.op)) return [asObject(body.reservation)].filter((r): r is Json => r !== null);
  if (exchange.op === 'list-reservations' || exchange.op === 'read-summary') {
    return (Array.isArray(body.reservations) ? body.reservations : []).map(asObject).filter((r): r is Json => r !== null);
  }
  return [];
}

/**
 * Problems of one reservation record under §6.5 and §12.1. `beside`: the record is the body of
 * read-reservation, whose period may be the one "beside it" (§6.6), a string even once released.
 */
function recordProblems(declared: boolean, record: Json, beside: boolean): string[] {
  const where = `reservation ${String(record.hold_id)}`;
  if (!declared) {
    return ['period', 'opened_in'].filter((f) => f in record).map((f) => `${where} carries ${f} though no period is declared`);
  }
  const problems: string[] = [];
  const named = typeof record.period === 'string' && record.period !== '';
  const wantPeriod = record.status !== 'released' ? named : record.period === null || (beside && named);
  if (!wantPeriod) problems.push(`${where} (${String(record.status)}) has period ${JSON.stringify(record.period)}; open: a period, released: null`);
  if (typeof record.opened_in !== 'string' || record.opened_in === '') problems.push(`${where} has no opened_in`);
  return problems;
}

/** Makes sure the run holds at least one answer of each kind the period scans look at. */
async function exercise(ctx: CheckContext): Promise<void> {
  const { txnId } = await ctx.settle(ctx.amount(1));
  await ctx.settlement(txnId);
  await ctx.figures(ctx.payer);
  if (ctx.offers('read-summary')) await ctx.wire.readSummary(ctx.payer);
  if (ctx.offers('open-hold')) {
    const { holdId } = await ctx.openFundedHold(ctx.amount(2));
    if (ctx.offers('read-reservation')) await ctx.wire.readReservation(holdId);
    if (ctx.offers('release-hold')) await ctx.wire.releaseHold({ holdId });
  }
  if (ctx.offers('list-reservations')) await ctx.wire.listReservations(ctx.payer);
}

/** Declared or not, as the rule's expectation reads. */
function expectation(declared: boolean, what: string): string {
  return declared ? `${what} (the binding declares periods, §12.1)` : `no period anywhere (the binding declares none, §12.1)`;
}

/** A balance-bearing read answered 200, other than read-settlement of an id in state unknown (§6.4). */
function isBalanceRead(e: Exchange): boolean {
  return (BALANCE_BEARING_READS as readonly string[]).includes(e.op) && e.status === 200
    && !(e.op === 'read-settlement' && asObject(e.json)?.state === 'unknown');
}

/** An accepted value-moving answer with a JSON body. */
function isAcceptedValueMove(e: Exchange): boolean {
  return (VALUE_MOVING as readonly string[]).includes(e.op) && isSuccess(e) && asObject(e.json) !== null;
}

/**
 * Exercises the binding, then fails unless every answer of the run that `scanned` picks carries
 * `period` exactly when periods are declared (`what` and `expected` as the failure states them).
 */
async function ensurePeriodOnAnswers(ctx: CheckContext, scanned: (exchange: Exchange) => boolean, what: string, expected: string): Promise<void> {
  await exercise(ctx);
  const declared = ctx.declared.periods;
  ensureEveryExchange(ctx.runExchanges().filter(scanned), (e) => periodProblems(declared, asObject(e.json) ?? {}, e.op), what,
    expectation(declared, expected));
}

/** The period checks, in run order. */
export const periodChecks = checksOf('periods', [
  {
    id: 'periods.balance-reads',
    cite: '§12.1, §6.2, §6.4',
    level: 'MUST',
    title: 'every balance-bearing read carries period exactly when periods are declared',
    async run(ctx) {
      await ensurePeriodOnAnswers(ctx, isBalanceRead, 'period on balance-bearing reads',
        'period on read-balance, read-summary, read-settlement, list-reservations and read-reservation');
    },
  },
  {
    id: 'periods.reservation-records',
    cite: '§12.1, §6.5',
    level: 'MUST',
    needs: ['open-hold'],
    title: 'every reservation record carries period (null once released) and opened_in exactly when periods are declared',
    async run(ctx) {
      await exercise(ctx);
      const declared = ctx.declared.periods;
      ensureEveryExchange(ctx.runExchanges(), (e) => recordsOf(e).flatMap((r) => recordProblems(declared, r, e.op === 'read-reservation')), 'period and opened_in on reservation records',
        expectation(declared, 'period and opened_in on every reservation record'));
    },
  },
  {
    id: 'periods.value-moving',
    cite: '§12.1',
    level: 'MUST',
    title: 'every accepted value-moving answer names the period it landed in exactly when periods are declared',
    async run(ctx) {
      await ensurePeriodOnAnswers(ctx, isAcceptedValueMove, 'period on accepted value-moving answers',
        'period on every accepted credit, settle, reverse, adjust and draw');
    },
  },
]);
