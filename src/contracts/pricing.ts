/**
 * Pricing: the worst case of a call (what admission, approval and the hold use) and the charge
 * of a finished run (gateway §2 "What gets billed", "Price actually charged", "Caller cap").
 *
 * Amounts are integer micro-units. A manifest's amounts are in its `price.currency` (the agent's
 * currency); worst cases, caps and charges that reach the payer are in the mandate's
 * `budget.currency` (the payer's currency), converted at `budget.fx` rounded up.
 */
import { ContractError } from './errors.ts';
import type { Mandate } from './mandate.ts';
import type { Manifest } from './manifest.ts';
import { formatMoney, parseMoneyRoundingUp, toAgentCurrency, toMicros, toPayerCurrency, type Micros, type RateNanos } from './money.ts';

/** The exchange terms of a mandate: its currency and its `fx` rates. */
export type PayerTerms = Pick<Mandate['budget'], 'currency' | 'fx'>;

/** The identity rate: one unit of the mandate's currency is worth one unit. */
const SAME_CURRENCY: RateNanos = 1_000_000_000n;

/**
 * The worst case of a call, or why it cannot be priced.
 *
 * - `listed_micros`: the agent's listed worst case in the payer's currency: its own worst price
 *   (`free` 0, `per_run` amount, `per_unit` / `quote` max) plus `downstream.cap` under
 *   `passthrough`, each converted rounded up.
 * - `worst_case_micros`: what admission, the approval threshold, the budget reservation and the
 *   payer's hold use, and what the receipt's `worst_case` shows (open point 9): the caller's
 *   `max_cost` when it is lower than `listed_micros`, else `listed_micros`.
 * - `agent_cap`: what the agent receives as its ceiling (MCP `_meta["holon/max_cost"]`), in its own
 *   currency, whenever the caller set `max_cost` (open point 4: the wire contract of gateway §6
 *   says "when the caller set one"): `max_cost` converted rounded down, never above the listed
 *   worst case in the agent's currency. Null when no `max_cost` was sent.
 *
 * Refusals: `no_fx_rate` (the agent's currency is not in `budget.fx`), `below_fixed_price` (a
 * `max_cost` below a `per_run` price: it never buys the run for less, gateway §2 "Caller cap").
 */
export type WorstCase =
  | { ok: true; listed_micros: Micros; worst_case_micros: Micros; agent_cap: { amount_micros: Micros; currency: string } | null }
  | { ok: false; code: 'no_fx_rate' | 'below_fixed_price'; reason: string };

/**
 * How a run ended, as far as billing is concerned (gateway §2 billing table):
 * - `output_valid`: the output validated against `interface.output`;
 * - `agent_error`: the agent returned an error with `code` (declared in `interface.errors` or not);
 * - `failed`: a crash, a timeout, an invalid output, an error without a code, an unreachable
 *   runtime, a gateway error: never billed;
 * - `not_run`: denied, pending approval, rejected input: nothing ran, never billed.
 */
export type Outcome = { kind: 'output_valid' } | { kind: 'agent_error'; code: string } | { kind: 'failed' } | { kind: 'not_run' };

/**
 * What the agent reported during the run: every `ctx.units(n)` / `_meta["holon/units"]` report in
 * order (summed, open point 3), and the last `ctx.quote(x)` / `_meta["holon/quote"]` decimal
 * string. Units are read only for `per_unit` pricing, the quote only for `quote` pricing.
 */
export interface UsageReport {
  units: readonly number[];
  quote: string | null;
}

/**
 * The charge of a run, in the payer's currency.
 * `billed` is true exactly when `cost_micros` > 0, i.e. when a settlement is posted: a billable
 * outcome that costs 0 (a free agent, 0 units, no quote) shows `billed: false` on the receipt
 * (open point 7), so "billed" always means money moved.
 */
export interface Charge {
  billed: boolean;
  cost_micros: Micros;
}

/**
 * The rate from `currency` into the payer's currency: exact 1 for the same currency, the
 * mandate's `fx` rate otherwise, null when there is none.
 */
export function rateInto(currency: string, terms: PayerTerms): RateNanos | null {
  return currency === terms.currency ? SAME_CURRENCY : (terms.fx[currency] ?? null);
}

/** The agent's own worst price in its currency, before any downstream cap. */
function ownWorstMicros(manifest: Manifest): Micros {
  const { price } = manifest;
  switch (price.model) {
    case 'free':
      return 0;
    case 'per_run':
      return price.amount_micros;
    case 'per_unit':
    case 'quote':
      return price.max_micros;
  }
}

/**
 * The worst case of calling `manifest` under a mandate with `terms`, with the caller's optional
 * `max_cost_micros` (in the payer's currency; null when none was sent). See {@link WorstCase}.
 * Implements gateway §2 "Caller cap" and §3 "Who pays downstream calls" (passthrough cap).
 * Throws ContractError `invalid_money` only when an amount overflows the safe-integer range.
 */
export function worstCase(manifest: Manifest, terms: PayerTerms, max_cost_micros: Micros | null): WorstCase {
  const { currency } = manifest.price;
  const rate = rateInto(currency, terms);
  if (rate === null) {
    return { ok: false, code: 'no_fx_rate', reason: `${manifest.id} is priced in ${currency} and the mandate has no fx rate from ${currency} to ${terms.currency}` };
  }
  const own_micros = ownWorstMicros(manifest);
  const downstream_micros = manifest.downstream?.mode === 'passthrough' ? manifest.downstream.cap_micros : 0;
  const listed_micros = toPayerCurrency(own_micros, rate) + toPayerCurrency(downstream_micros, rate);
  if (max_cost_micros === null) return { ok: true, listed_micros, worst_case_micros: listed_micros, agent_cap: null };

  if (manifest.price.model === 'per_run') {
    const price_micros = toPayerCurrency(manifest.price.amount_micros, rate);
    if (max_cost_micros < price_micros) {
      return {
        ok: false,
        code: 'below_fixed_price',
        reason: `max_cost ${formatMoney(max_cost_micros)} ${terms.currency} is below the fixed per_run price ${formatMoney(price_micros)} ${terms.currency} of ${manifest.id}: a per_run price never buys the run for less`,
      };
    }
  }
  return {
    ok: true,
    listed_micros,
    worst_case_micros: Math.min(max_cost_micros, listed_micros),
    agent_cap: { amount_micros: toAgentCurrency(max_cost_micros, rate, own_micros + downstream_micros), currency },
  };
}

/**
 * Whether an outcome is billed under the manifest (gateway §2 table): a valid output always; an
 * agent error only when its code is declared with `billed: true` and `charge_on` is `attempt`;
 * anything else never.
 */
function isBillable(manifest: Manifest, outcome: Outcome): boolean {
  switch (outcome.kind) {
    case 'output_valid':
      return true;
    case 'agent_error':
      return manifest.interface.charge_on === 'attempt' && manifest.interface.errors[outcome.code]?.billed === true;
    case 'failed':
    case 'not_run':
      return false;
  }
}

/**
 * The charge of a finished run, in the payer's currency (gateway §2 "Price actually charged").
 *
 * In the agent's currency first: `per_run` the amount; `per_unit` the amount × the sum of all
 * unit reports, capped at `max`; `quote` the reported quote rounded up to the micro-unit, capped
 * at `max` (no quote reported: 0). Then converted once at the mandate's rate, rounded up (open
 * point 1), then capped at `max_cost_micros` when the caller sent one. A billed declared error is
 * charged the same way from what the agent reported before failing (open point 3).
 *
 * Throws ContractError `invalid_units` (a report that is not a non-negative safe integer) or
 * `invalid_quote` (a quote that is not a non-negative decimal string); the gateway treats either as
 * an agent failure, never billed. Throws Error when the agent's currency has no rate: such a
 * call cannot have been admitted (see {@link worstCase}).
 */
export function chargeFor(manifest: Manifest, outcome: Outcome, usage: UsageReport, terms: PayerTerms, max_cost_micros: Micros | null): Charge {
  if (!isBillable(manifest, outcome)) return { billed: false, cost_micros: 0 };
  const rate = rateInto(manifest.price.currency, terms);
  if (rate === null) throw new Error(`chargeFor: no fx rate from ${manifest.price.currency} to ${terms.currency}; worstCase refuses such a call`);
  const converted_micros = toPayerCurrency(agentCharge(manifest, usage), rate);
  const cost_micros = max_cost_micros === null ? converted_micros : Math.min(converted_micros, max_cost_micros);
  return { billed: cost_micros > 0, cost_micros };
}

/** The charge in the agent's currency, capped at the price's `max`. */
function agentCharge(manifest: Manifest, usage: UsageReport): Micros {
  const { price } = manifest;
  switch (price.model) {
    case 'free':
      return 0;
    case 'per_run':
      return price.amount_micros;
    case 'per_unit': {
      const total_micros = BigInt(price.amount_micros) * totalUnits(usage.units);
      return total_micros > BigInt(price.max_micros) ? price.max_micros : toMicros(total_micros);
    }
    case 'quote':
      return usage.quote === null ? 0 : Math.min(parseQuote(usage.quote), price.max_micros);
  }
}

/** The sum of every unit report (open point 3). Throws ContractError `invalid_units`. */
function totalUnits(units: readonly number[]): bigint {
  let total = 0n;
  for (const n of units) {
    if (!Number.isSafeInteger(n) || n < 0) {
      throw new ContractError('invalid_units', `the agent reported ${n} units: units are non-negative integers`);
    }
    total += BigInt(n);
  }
  return total;
}

/** An agent's quote, rounded up to the micro-unit (open point 2). Throws ContractError `invalid_quote`. */
function parseQuote(quote: string): Micros {
  try {
    return parseMoneyRoundingUp(quote);
  } catch (error) {
    throw new ContractError('invalid_quote', `the agent reported the quote ${JSON.stringify(quote)}: ${(error as Error).message}`);
  }
}
