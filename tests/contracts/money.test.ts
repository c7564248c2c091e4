import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ContractError } from '../../src/contracts/errors.ts';
import {
  MAX_AMOUNT_MICROS, divCeil, divFloor, formatMoney, parseMoney, parseMoneyRoundingUp, parseRate, parseShare, toAgentCurrency, toPayerCurrency,
} from '../../src/contracts/money.ts';

const MAX_SCHEMA_MICROS = 999_999_999_999_999; // "999999999.999999", the schemas' largest amount

describe('money: decimal strings ⇄ integer micro-units', () => {
  it('parses exactly', () => {
    assert.equal(parseMoney('0.10'), 100_000);
    assert.equal(parseMoney('3'), 3_000_000);
    assert.equal(parseMoney('0.000001'), 1);
    assert.equal(parseMoney('0.035'), 35_000);
    assert.equal(parseMoney('999999999.999999'), MAX_SCHEMA_MICROS);
  });

  it('refuses anything but a non-negative decimal string with at most 6 decimals, naming the field', () => {
    for (const bad of ['0.0000001', '-1', '1.', '.5', '1e3', ' 1', '01', '1,5', '', 'NaN']) {
      assert.throws(() => parseMoney(bad, 'price.amount'), (e: unknown) => e instanceof ContractError && e.code === 'invalid_money' && e.field === 'price.amount', bad);
    }
    assert.throws(() => parseMoney(0.1 as unknown as string), ContractError);
    assert.throws(() => parseMoney('1000000000'), /"1000000000" is more than 999999999.999999, the largest amount accepted/);
    assert.throws(() => parseMoney('9007199254.740992'), /the largest amount accepted/);
    assert.equal(MAX_AMOUNT_MICROS, MAX_SCHEMA_MICROS);
  });

  it('formats with 2 to 6 decimals, as receipts and the journal show them', () => {
    assert.equal(formatMoney(100_000), '0.10');
    assert.equal(formatMoney(192_000), '0.192');
    assert.equal(formatMoney(26_775), '0.026775');
    assert.equal(formatMoney(3_500), '0.0035');
    assert.equal(formatMoney(-5_000_000), '-5.00');
    assert.equal(formatMoney(0), '0.00');
    assert.throws(() => formatMoney(0.5), RangeError);
  });

  it('round-trips every amount (property)', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: MAX_AMOUNT_MICROS }), (micros) => parseMoney(formatMoney(micros)) === micros));
    const decimal = fc.tuple(fc.integer({ min: 0, max: 999_999_999 }), fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 0, maxLength: 6 }));
    fc.assert(
      fc.property(decimal, ([whole, fraction]) => {
        const text = fraction === '' ? String(whole) : `${whole}.${fraction}`;
        return parseMoney(formatMoney(parseMoney(text))) === parseMoney(text);
      }),
    );
  });

  it('rounds a quote finer than one micro-unit up (open point 2)', () => {
    assert.equal(parseMoneyRoundingUp('0.0000001'), 1);
    assert.equal(parseMoneyRoundingUp('0.0000011'), 2);
    assert.equal(parseMoneyRoundingUp('1.0000000'), 1_000_000);
    assert.equal(parseMoneyRoundingUp('0.25'), 250_000);
    assert.throws(() => parseMoneyRoundingUp('-0.1'), ContractError);
  });
});

describe('money: rounding helpers', () => {
  it('divides down and up', () => {
    assert.equal(divFloor(7n, 2n), 3n);
    assert.equal(divCeil(7n, 2n), 4n);
    assert.equal(divCeil(6n, 2n), 3n);
    assert.equal(divCeil(0n, 5n), 0n);
    assert.throws(() => divFloor(-1n, 2n), RangeError);
    assert.throws(() => divCeil(1n, 0n), RangeError);
  });

  it('floor ≤ ceil ≤ floor + 1, and equal exactly when the division is exact (property)', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 30n }), fc.bigInt({ min: 1n, max: 10n ** 15n }), (n, d) => {
        const floor = divFloor(n, d);
        const ceil = divCeil(n, d);
        return floor * d <= n && n <= ceil * d && ceil - floor === (n % d === 0n ? 0n : 1n);
      }),
    );
  });
});

describe('money: shares and exchange rates', () => {
  it('parses a royalty share as parts per million', () => {
    assert.equal(parseShare('0.15'), 150_000);
    assert.equal(parseShare('1'), 1_000_000);
    assert.equal(parseShare('0'), 0);
    assert.throws(() => parseShare('1.5', 'lineage.royalty'), /lineage\.royalty: "1\.5" is more than 1/);
  });

  it('parses rates with up to 9 decimals, more than 0', () => {
    assert.equal(parseRate('0.92'), 920_000_000n);
    assert.equal(parseRate('1.085302123'), 1_085_302_123n);
    assert.throws(() => parseRate('0'), /must be more than 0/);
    assert.throws(() => parseRate('1.0000000001'), /at most 9 are allowed/);
  });

  it('converts into the payer currency rounded up: 0.10 USD at 0.923456789 is 0.092346 EUR', () => {
    assert.equal(toPayerCurrency(100_000, parseRate('0.923456789')), 92_346);
    assert.equal(toPayerCurrency(100_000, parseRate('0.92')), 92_000);
  });

  it('converts a cap into the agent currency rounded down: 0.20 EUR at 0.92 is 0.217391 USD (open point 4)', () => {
    assert.equal(toAgentCurrency(200_000, parseRate('0.92'), 3_000_000), 217_391);
    assert.equal(toAgentCurrency(200_000, parseRate('0.92'), 100_000), 100_000);
    assert.equal(toPayerCurrency(217_391, parseRate('0.92')), 200_000);
    assert.equal(toPayerCurrency(217_392, parseRate('0.92')), 200_001);
  });

  it('a charge within the converted cap never converts back above the cap (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_SCHEMA_MICROS }), fc.bigInt({ min: 1n, max: 999_999_999_999_999n }), (cap, rate) => {
        const agentCap = toAgentCurrency(cap, rate, MAX_SCHEMA_MICROS);
        return agentCap <= MAX_SCHEMA_MICROS && toPayerCurrency(agentCap, rate) <= cap;
      }),
    );
  });
});
