import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ContractError } from '../../src/contracts/errors.ts';
import { validateMandate } from '../../src/contracts/mandate.ts';
import { type Manifest } from '../../src/contracts/manifest.ts';
import { chargeFor, worstCase, type Outcome, type UsageReport } from '../../src/contracts/pricing.ts';
import { testManifest } from '../helpers/contracts.ts';

/** A valid manifest: acme/extract, per_run 0.10 EUR, over MCP; `over` replaces top-level fields. */
const manifest = testManifest;

const EUR = validateMandate({
  id: 'alice/q4',
  issuer: 'alice',
  grantee: 'alice/assistant',
  allow: { agents: ['*'] },
  budget: { total: '10.00', currency: 'EUR', fx: { USD: '0.9' } },
}).budget;

const NOTHING: UsageReport = { units: [], quote: null };
const OK: Outcome = { kind: 'output_valid' };
const perUnit = (currency = 'EUR', amount = '0.01', max = '3.00') => ({ price: { model: 'per_unit', amount, unit: 'page', max, currency } });
const quote = (max = '1.00') => ({ price: { model: 'quote', max, currency: 'EUR' } });
const attempt = {
  interface: {
    input: true,
    output: true,
    charge_on: 'attempt',
    errors: { quota_exceeded: { billed: true }, bad_file: { billed: false } },
  },
};

describe('billing table (gateway §2)', () => {
  const billedAt = (m: Manifest, outcome: Outcome) => chargeFor(m, outcome, NOTHING, EUR, null);

  it('output valid: billed', () => {
    assert.deepEqual(billedAt(manifest(), OK), { billed: true, cost_micros: 100_000 });
  });
  it('declared error with billed: true, under charge_on: attempt: billed', () => {
    assert.deepEqual(billedAt(manifest(attempt), { kind: 'agent_error', code: 'quota_exceeded' }), { billed: true, cost_micros: 100_000 });
  });
  it('declared error, any other case: not billed', () => {
    assert.deepEqual(billedAt(manifest(attempt), { kind: 'agent_error', code: 'bad_file' }), { billed: false, cost_micros: 0 });
    const onSuccess = manifest({ interface: { input: true, output: true, errors: { bad_file: { billed: false } } } });
    assert.deepEqual(billedAt(onSuccess, { kind: 'agent_error', code: 'bad_file' }), { billed: false, cost_micros: 0 });
  });
  it('undeclared error, crash, timeout, invalid output: never', () => {
    assert.deepEqual(billedAt(manifest(attempt), { kind: 'agent_error', code: 'made_up' }), { billed: false, cost_micros: 0 });
    assert.deepEqual(billedAt(manifest(attempt), { kind: 'failed' }), { billed: false, cost_micros: 0 });
  });
  it('denied, pending approval, rejected input: never', () => {
    assert.deepEqual(billedAt(manifest(attempt), { kind: 'not_run' }), { billed: false, cost_micros: 0 });
  });
});

describe('price actually charged (gateway §2)', () => {
  it('per_run: the amount', () => {
    assert.equal(chargeFor(manifest(), OK, { units: [50], quote: '9' }, EUR, null).cost_micros, 100_000);
  });
  it('per_unit: amount × units, capped at max', () => {
    assert.equal(chargeFor(manifest(perUnit()), OK, { units: [3], quote: null }, EUR, null).cost_micros, 30_000);
    assert.equal(chargeFor(manifest(perUnit()), OK, { units: [301], quote: null }, EUR, null).cost_micros, 3_000_000);
  });
  it('quote: the reported quote, capped at max', () => {
    assert.equal(chargeFor(manifest(quote()), OK, { units: [], quote: '0.25' }, EUR, null).cost_micros, 250_000);
    assert.equal(chargeFor(manifest(quote()), OK, { units: [], quote: '5' }, EUR, null).cost_micros, 1_000_000);
  });
  it('converts into the mandate currency at fx, rounded up: 0.10 USD at 0.9 → 0.09; 0.123457 USD → 0.111112', () => {
    const usd = manifest({ price: { model: 'per_run', amount: '0.10', currency: 'USD' } });
    assert.equal(chargeFor(usd, OK, NOTHING, EUR, null).cost_micros, 90_000);
    const odd = manifest({ price: { model: 'per_run', amount: '0.123457', currency: 'USD' } });
    assert.equal(chargeFor(odd, OK, NOTHING, EUR, null).cost_micros, 111_112); // 111111.3 rounded up
  });
  it('refuses malformed reports as agent faults', () => {
    assert.throws(() => chargeFor(manifest(perUnit()), OK, { units: [-1], quote: null }, EUR, null), (e: unknown) => e instanceof ContractError && e.code === 'invalid_units');
    assert.throws(() => chargeFor(manifest(perUnit()), OK, { units: [1.5], quote: null }, EUR, null), /reported 1\.5 units/);
    assert.throws(() => chargeFor(manifest(quote()), OK, { units: [], quote: '-1' }, EUR, null), (e: unknown) => e instanceof ContractError && e.code === 'invalid_quote');
  });
});

describe('open points decided in pricing', () => {
  it('1. per_unit with fx: computed and capped in the agent currency, converted once: 7 × 0.000333 USD at 0.9 → 0.002098 EUR (not 0.002100)', () => {
    const m = manifest(perUnit('USD', '0.000333', '1.00'));
    assert.equal(chargeFor(m, OK, { units: [7], quote: null }, EUR, null).cost_micros, 2_098);
  });
  it('1. the cap applies in the agent currency before conversion: max 1.00 USD → 0.90 EUR', () => {
    const m = manifest(perUnit('USD', '0.01', '1.00'));
    assert.equal(chargeFor(m, OK, { units: [1000], quote: null }, EUR, null).cost_micros, 900_000);
  });
  it('2. a quote finer than a micro-unit rounds up, then the max applies', () => {
    assert.equal(chargeFor(manifest(quote()), OK, { units: [], quote: '0.0000011' }, EUR, null).cost_micros, 2);
    assert.equal(chargeFor(manifest(quote('0.000001')), OK, { units: [], quote: '0.0000011' }, EUR, null).cost_micros, 1);
  });
  it('3. a quote run that succeeds without a quote costs 0, and 7. is then not billed', () => {
    assert.deepEqual(chargeFor(manifest(quote()), OK, NOTHING, EUR, null), { billed: false, cost_micros: 0 });
  });
  it('3. several unit reports in one run are summed: 2 + 3 pages → 0.05', () => {
    assert.equal(chargeFor(manifest(perUnit()), OK, { units: [2, 3], quote: null }, EUR, null).cost_micros, 50_000);
  });
  it('3. a billed declared error is charged for the units reported before it: 4 pages → 0.04', () => {
    const m = manifest({ ...perUnit(), ...attempt });
    assert.equal(chargeFor(m, { kind: 'agent_error', code: 'quota_exceeded' }, { units: [4], quote: null }, EUR, null).cost_micros, 40_000);
  });
  it('7. a billable outcome that costs 0 is billed: false (free agent, 0 units)', () => {
    assert.deepEqual(chargeFor(manifest({ price: { model: 'free', currency: 'EUR' } }), OK, NOTHING, EUR, null), { billed: false, cost_micros: 0 });
    assert.deepEqual(chargeFor(manifest(perUnit()), OK, { units: [0], quote: null }, EUR, null), { billed: false, cost_micros: 0 });
  });
});

describe('caller cap: max_cost (gateway §2)', () => {
  const upTo3 = manifest(perUnit());

  it('admission uses max_cost when it is lower than the listed worst case; 9. the receipt worst_case shows it', () => {
    assert.deepEqual(worstCase(upTo3, EUR, 200_000), {
      ok: true,
      listed_micros: 3_000_000,
      worst_case_micros: 200_000,
      agent_cap: { amount_micros: 200_000, currency: 'EUR' },
    });
  });
  it('a max_cost above the listed worst case changes nothing but the cap the agent receives (never above its worst case)', () => {
    assert.deepEqual(worstCase(upTo3, EUR, 5_000_000), {
      ok: true,
      listed_micros: 3_000_000,
      worst_case_micros: 3_000_000,
      agent_cap: { amount_micros: 3_000_000, currency: 'EUR' },
    });
  });
  it('without max_cost: the listed worst case, and no cap for the agent', () => {
    assert.deepEqual(worstCase(upTo3, EUR, null), { ok: true, listed_micros: 3_000_000, worst_case_micros: 3_000_000, agent_cap: null });
  });
  it('the charge is capped at max_cost: the agent absorbs the overrun', () => {
    assert.deepEqual(chargeFor(upTo3, OK, { units: [100], quote: null }, EUR, 200_000), { billed: true, cost_micros: 200_000 });
  });
  it('4. the agent receives the cap in its own currency, rounded down: 0.20 EUR at 0.9 → 0.222222 USD', () => {
    const usd = manifest(perUnit('USD', '0.01', '3.00'));
    const priced = worstCase(usd, EUR, 200_000);
    assert.ok(priced.ok);
    assert.deepEqual(priced.agent_cap, { amount_micros: 222_222, currency: 'USD' });
    // A quote of exactly that cap converts back within max_cost: 0.222222 × 0.9 = 0.1999998 → 0.20.
    const usdQuote = manifest({ price: { model: 'quote', max: '3.00', currency: 'USD' } });
    assert.equal(chargeFor(usdQuote, OK, { units: [], quote: '0.222222' }, EUR, null).cost_micros, 200_000);
    assert.equal(chargeFor(usdQuote, OK, { units: [], quote: '0.222223' }, EUR, null).cost_micros, 200_001);
  });
  it('a per_run price is fixed: a max_cost below it is denied, equal to it is fine', () => {
    assert.deepEqual(worstCase(manifest(), EUR, 99_999), {
      ok: false,
      code: 'below_fixed_price',
      reason: 'max_cost 0.099999 EUR is below the fixed per_run price 0.10 EUR of acme/extract: a per_run price never buys the run for less',
    });
    const exact = worstCase(manifest(), EUR, 100_000);
    assert.ok(exact.ok && exact.worst_case_micros === 100_000);
  });
  it('an orchestrator under passthrough lists its price plus the downstream cap; max_cost between the two is admitted', () => {
    const orchestrator = manifest({ calls: [{ capability: 'extraction.table', max_cost: '0.05' }], downstream: { mode: 'passthrough', cap: '0.05' } });
    assert.deepEqual(worstCase(orchestrator, EUR, null), { ok: true, listed_micros: 150_000, worst_case_micros: 150_000, agent_cap: null });
    const capped = worstCase(orchestrator, EUR, 120_000);
    assert.ok(capped.ok && capped.worst_case_micros === 120_000);
    const included = manifest({ calls: [{ capability: 'extraction.table', max_cost: '0.05' }], downstream: { mode: 'included' } });
    assert.deepEqual(worstCase(included, EUR, null), { ok: true, listed_micros: 100_000, worst_case_micros: 100_000, agent_cap: null });
  });
  it('an agent priced in a currency without an fx rate cannot be priced', () => {
    const gbp = manifest({ price: { model: 'per_run', amount: '0.10', currency: 'GBP' } });
    assert.deepEqual(worstCase(gbp, EUR, null), {
      ok: false,
      code: 'no_fx_rate',
      reason: 'acme/extract is priced in GBP and the mandate has no fx rate from GBP to EUR',
    });
  });
});
