/**
 * Run-wide scans: a rule that must hold of every answer checked against every exchange of the
 * run so far, not only the check's own. Run-wide checks therefore run last.
 */
import { fail, Inconclusive } from '../expect.ts';
import type { Exchange } from '../http.ts';

/** How many offending exchanges a failure shows. */
const SHOWN = 3;

/**
 * Fails when `problemsOf` finds anything wrong with any of `exchanges`: the message counts the
 * offenders and the failure carries the first few, with their problems as `got`. Throws
 * Inconclusive when there is nothing to scan, since an empty scan proves nothing.
 */
export function ensureEveryExchange(
  exchanges: readonly Exchange[], problemsOf: (exchange: Exchange) => string[], what: string, expected: string,
): void {
  if (exchanges.length === 0) throw new Inconclusive(`the run holds no answer to check for: ${what}`);
  const offenders = exchanges.map((exchange) => ({ exchange, problems: problemsOf(exchange) })).filter((o) => o.problems.length > 0);
  if (offenders.length === 0) return;
  const shown = offenders.slice(0, SHOWN);
  fail(`${offenders.length} of ${exchanges.length} answers break the rule: ${what}`, expected,
    shown.map((o) => `#${o.exchange.seq} ${o.exchange.op}: ${o.problems.join('; ')}`).join(' | '),
    ...shown.map((o) => o.exchange));
}

/** Whether the exchange was answered with a 2xx status. */
export function isSuccess(exchange: Exchange): boolean {
  return exchange.status !== null && exchange.status >= 200 && exchange.status <= 299;
}

/** Whether the exchange was answered with a 4xx or 5xx status. */
export function isError(exchange: Exchange): boolean {
  return exchange.status !== null && exchange.status >= 400;
}
