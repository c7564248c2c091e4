/**
 * Money: decimal strings at the edges, integer micro-units inside (DESIGN "Money").
 *
 * 1 unit of any currency (1 EUR, 1 USD) is 1,000,000 micro-units. Amounts are JS numbers that are
 * always safe integers; every product or quotient is computed on bigint and checked on the way
 * back, so no floating point ever touches a value. Exchange rates are bigints of nano-units
 * (rate × 10^9), so a rate like "1.085302" is exact too.
 */
import { ContractError } from './errors.ts';

/** An amount of money in integer micro-units of some currency (1 unit = 1,000,000). Always a safe integer. */
export type Micros = number;

/** An exchange rate × 10^9, exact: "0.92" is `920_000_000n`. */
export type RateNanos = bigint;

/** Micro-units in one unit of a currency. */
export const MICROS_PER_UNIT = 1_000_000;

/**
 * The largest single amount anywhere on the wire, in micro-units: 999 999 999.999999 units
 * (10^15 − 1), what a decimal of at most 9 integer digits and 6 decimals can say. Every amount
 * of `openapi/clearing.yaml` has it as `maximum`; every money string of the gateway (manifests,
 * mandates, `max_cost`) is parsed against it. Chosen with {@link MAX_BALANCE_MICROS} so that no
 * figure the binding or the gateway computes leaves the safe integer range (docs/bounds.md).
 */
export const MAX_AMOUNT_MICROS = 999_999_999_999_999;

/**
 * The largest absolute balance of any account, machinery (`external:*`, `platform:*`) included,
 * in micro-units: 3 × 10^15 (3 billion units). A write that would take an account beyond it is
 * refused. Every figure computed from balances is at most one balance, one `reserved` (itself at
 * most a balance) and two amounts: 2 × 3×10^15 + 2 × 10^15 = 8×10^15 < 2^53 − 1.
 */
export const MAX_BALANCE_MICROS = 3_000_000_000_000_000;

/** Decimal places of a money string: one micro-unit. */
const MONEY_DECIMALS = 6;
/** Decimal places of an exchange rate in `budget.fx`. */
const RATE_DECIMALS = 9;
const NANOS_PER_UNIT = 1_000_000_000n;
const DECIMAL_SYNTAX = /^(0|[1-9][0-9]*)(?:\.([0-9]+))?$/;

/**
 * `numerator / denominator`, rounded down. Both non-negative, denominator positive.
 * Throws RangeError on a negative numerator or a non-positive denominator (a bug, not an input).
 */
export function divFloor(numerator: bigint, denominator: bigint): bigint {
  assertDivision(numerator, denominator);
  return numerator / denominator;
}

/**
 * `numerator / denominator`, rounded up. Both non-negative, denominator positive.
 * Throws RangeError on a negative numerator or a non-positive denominator (a bug, not an input).
 */
export function divCeil(numerator: bigint, denominator: bigint): bigint {
  assertDivision(numerator, denominator);
  return (numerator + denominator - 1n) / denominator;
}

function assertDivision(numerator: bigint, denominator: bigint): void {
  if (numerator < 0n || denominator <= 0n) {
    throw new RangeError(`division ${numerator} / ${denominator}: expected a non-negative numerator and a positive denominator`);
  }
}

/**
 * A bigint of micro-units back to a {@link Micros} number.
 * Throws ContractError `invalid_money` when it exceeds Number.MAX_SAFE_INTEGER (about 9 billion units).
 */
export function toMicros(value: bigint, field: string | null = null): Micros {
  if (value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new ContractError('invalid_money', `${label(field)}${value} micro-units is outside 0..${Number.MAX_SAFE_INTEGER}`, field);
  }
  return Number(value);
}

/**
 * Parses a non-negative decimal string ("0.10", "3", "0.000001") into a count of 10^-decimals.
 * `rounding: 'exact'` refuses more decimals than `decimals`; `'up'` rounds a finer value up.
 * Throws ContractError `invalid_money` naming `field` on any other shape (sign, exponent, spaces,
 * "1."): "<field>: "<text>" is not <expected>", so a caller whose values are bounded names the bound there.
 */
function parseScaled(text: string, decimals: number, rounding: 'exact' | 'up', field: string | null, expected = 'a non-negative decimal string such as "0.10"'): bigint {
  const match = typeof text === 'string' ? DECIMAL_SYNTAX.exec(text) : null;
  if (match === null) {
    throw new ContractError('invalid_money', `${label(field)}${JSON.stringify(text)} is not ${expected}`, field);
  }
  const whole = BigInt(match[1]) * 10n ** BigInt(decimals);
  const fraction = match[2] ?? '';
  if (fraction.length <= decimals) return whole + BigInt(fraction.padEnd(decimals, '0') || '0');
  if (rounding === 'exact') {
    throw new ContractError('invalid_money', `${label(field)}"${text}" has ${fraction.length} decimals; at most ${decimals} are allowed`, field);
  }
  const kept = BigInt(fraction.slice(0, decimals) || '0');
  const dropped = /[1-9]/.test(fraction.slice(decimals)) ? 1n : 0n;
  return whole + kept + dropped;
}

/**
 * "0.10" → 100000. Exact: at most 6 decimals, non-negative, at most {@link MAX_AMOUNT_MICROS}.
 * Throws ContractError `invalid_money` naming `field` and that bound otherwise (a sign, "-0", an
 * exponent, more digits). (DESIGN "Money")
 */
export function parseMoney(text: string, field: string | null = null): Micros {
  const micros = parseScaled(text, MONEY_DECIMALS, 'exact', field, `a decimal string from 0 to ${formatMoney(MAX_AMOUNT_MICROS)} such as "0.10"`);
  if (micros > BigInt(MAX_AMOUNT_MICROS)) {
    throw new ContractError('invalid_money', `${label(field)}"${text}" is more than ${formatMoney(MAX_AMOUNT_MICROS)}, the largest amount accepted`, field);
  }
  return Number(micros);
}

/**
 * Like {@link parseMoney}, but a value finer than one micro-unit is rounded up to the next
 * micro-unit instead of refused: "0.0000001" → 1. Used for an agent's reported quote
 * (open point 2; gateway §6 `holon/quote`). Throws ContractError `invalid_money` on a malformed string.
 */
export function parseMoneyRoundingUp(text: string, field: string | null = null): Micros {
  return toMicros(parseScaled(text, MONEY_DECIMALS, 'up', field), field);
}

/**
 * 100000 → "0.10"; 26775 → "0.026775"; -5000000 → "-5.00". At least 2 decimals, at most 6, no
 * trailing zeros beyond the second (the receipts and journal of gateway §4 and §7).
 * Throws RangeError when `micros` is not a safe integer.
 */
export function formatMoney(micros: Micros): string {
  if (!Number.isSafeInteger(micros)) throw new RangeError(`formatMoney: ${micros} is not a safe integer of micro-units`);
  const sign = micros < 0 ? '-' : '';
  const magnitude = Math.abs(micros);
  const whole = Math.floor(magnitude / MICROS_PER_UNIT);
  const fraction = String(magnitude % MICROS_PER_UNIT).padStart(MONEY_DECIMALS, '0').replace(/0{1,4}$/, '');
  return `${sign}${whole}.${fraction}`;
}

/**
 * A share of a whole ("0.15", "1") as parts per million: 150000. At most 6 decimals, 0..1.
 * Throws ContractError `invalid_money` naming `field` otherwise. (manifest `lineage.royalty`)
 */
export function parseShare(text: string, field: string | null = null): number {
  const ppm = parseScaled(text, MONEY_DECIMALS, 'exact', field);
  if (ppm > BigInt(MICROS_PER_UNIT)) {
    throw new ContractError('invalid_money', `${label(field)}"${text}" is more than 1: a share is between 0 and 1`, field);
  }
  return Number(ppm);
}

/**
 * An exchange rate ("0.92": one unit of the foreign currency is worth 0.92 of the mandate's) as
 * {@link RateNanos}. Positive, at most 9 decimals, at most 999999 (the mandate schema's bound).
 * Throws ContractError `invalid_money` naming `field` otherwise. (mandate `budget.fx`)
 */
export function parseRate(text: string, field: string | null = null): RateNanos {
  const nanos = parseScaled(text, RATE_DECIMALS, 'exact', field);
  if (nanos === 0n || nanos >= 1_000_000n * NANOS_PER_UNIT) {
    throw new ContractError('invalid_money', `${label(field)}rate "${text}" must be more than 0 and less than 1000000`, field);
  }
  return nanos;
}

/**
 * Converts an amount in a foreign (agent) currency into the payer's (mandate) currency at `rate`,
 * rounded up to the micro-unit: the payer pays at most one micro-unit more than the exact value
 * (gateway §2 "converted ... rounded up"). Throws ContractError `invalid_money` on overflow.
 */
export function toPayerCurrency(amount_micros: Micros, rate: RateNanos): Micros {
  return toMicros(divCeil(BigInt(amount_micros) * rate, NANOS_PER_UNIT));
}

/**
 * Converts a ceiling in the payer's (mandate) currency into the agent's currency at `rate`,
 * rounded down, so that any agent charge within the result converts back (rounding up) to at
 * most the ceiling (open point 4); and at most `limit_micros` (the agent's own worst case), so
 * a tiny rate cannot overflow. Never throws for valid arguments.
 */
export function toAgentCurrency(ceiling_micros: Micros, rate: RateNanos, limit_micros: Micros): Micros {
  const converted = divFloor(BigInt(ceiling_micros) * NANOS_PER_UNIT, rate);
  return converted < BigInt(limit_micros) ? Number(converted) : limit_micros;
}

function label(field: string | null): string {
  return field === null ? '' : `${field}: `;
}
