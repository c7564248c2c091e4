import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ContractError } from '../../src/contracts/errors.ts';
import { lineageChain, MAX_LINEAGE_LEVELS, type LineageLevel } from '../../src/contracts/lineage.ts';
import { validateManifest, type Manifest } from '../../src/contracts/manifest.ts';
import { formatMoney } from '../../src/contracts/money.ts';
import { PLATFORM_ACCOUNT, splitCharge, splitLines } from '../../src/contracts/split.ts';

/** A per_run agent `id@version`, a fork of `fork_of` paying `royalty` when given. */
function agent(id: string, version: string, fork_of?: string, royalty?: string): Manifest {
  return validateManifest({
    id,
    version,
    summary: 'An agent',
    capabilities: [],
    interface: { input: true, output: true },
    price: { model: 'per_run', amount: '0.035', currency: 'EUR' },
    runtime: { kind: 'dev' },
    license: 'MIT',
    ...(fork_of === undefined ? {} : { lineage: { fork_of, royalty } }),
  }).manifest;
}

const acme = agent('acme/extract', '1.2.0');
const lena = agent('lena/extract-plus', '0.1.0', 'acme/extract@1.2.0', '0.15');
const registry = new Map([acme, lena].map((m) => [`${m.id}@${m.version}`, m]));
const lookup = (ref: string) => registry.get(ref);

describe('split (gateway §2 "Split", §7 journal)', () => {
  it('0.035 to a 15% fork: holon 0.0035, lena 0.026775, acme 0.004725 (open point 10)', () => {
    const split = splitCharge(35_000, lineageChain(lena, lookup));
    assert.deepEqual(split, {
      amount_micros: 35_000,
      platform_fee_micros: 3_500,
      levels: [
        { agent: 'lena/extract-plus@0.1.0', account: 'lena', revenue_micros: 31_500, royalty_micros: 4_725, kept_micros: 26_775 },
        { agent: 'acme/extract@1.2.0', account: 'acme', revenue_micros: 4_725, royalty_micros: 0, kept_micros: 4_725 },
      ],
    });
    assert.deepEqual(
      splitLines(split).map(({ to, amount_micros }) => [to, formatMoney(amount_micros)]),
      [[PLATFORM_ACCOUNT, '0.0035'], ['lena', '0.026775'], ['acme', '0.004725']],
    );
  });

  it('a receipt example: 0.10 to an agent that is no fork → holon 0.01, holon-labs 0.09', () => {
    const split = splitCharge(100_000, [{ agent: 'holon-labs/invoice-pipeline@0.4.0', account: 'holon-labs', royalty_ppm: 0 }]);
    assert.deepEqual(splitLines(split), [{ to: 'holon', amount_micros: 10_000 }, { to: 'holon-labs', amount_micros: 90_000 }]);
  });

  it('the fee and royalties round down; the remainder stays with the level that did the work (open point 2)', () => {
    const split = splitCharge(1_001, lineageChain(lena, lookup));
    assert.equal(split.platform_fee_micros, 100); // 100.1
    assert.deepEqual(split.levels.map((l) => [l.revenue_micros, l.royalty_micros, l.kept_micros]), [[901, 135, 766], [135, 0, 135]]); // 135.15
  });

  it('a tiny amount: 9 micro-units pay no fee, all to the author', () => {
    assert.deepEqual(splitLines(splitCharge(9, lineageChain(lena, lookup))), [{ to: 'lena', amount_micros: 8 }, { to: 'acme', amount_micros: 1 }]);
    assert.deepEqual(splitLines(splitCharge(0, lineageChain(lena, lookup))), []);
  });

  it('an account at several levels gets one line', () => {
    const chain: LineageLevel[] = [
      { agent: 'lena/b@2.0.0', account: 'lena', royalty_ppm: 500_000 },
      { agent: 'acme/a@1.0.0', account: 'acme', royalty_ppm: 500_000 },
      { agent: 'lena/a@1.0.0', account: 'lena', royalty_ppm: 0 },
    ];
    assert.deepEqual(splitLines(splitCharge(1_000_000, chain)), [
      { to: 'holon', amount_micros: 100_000 },
      { to: 'lena', amount_micros: 450_000 + 225_000 },
      { to: 'acme', amount_micros: 225_000 },
    ]);
  });

  it('conserves every micro-unit and takes floor(10%) as fee (property)', () => {
    const level = fc.record({ account: fc.constantFrom('a1', 'b2', 'c3', 'holon'), royalty_ppm: fc.integer({ min: 0, max: 1_000_000 }) });
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), fc.array(level, { minLength: 1, maxLength: MAX_LINEAGE_LEVELS }), (amount, levels) => {
        const chain = levels.map((l, i) => ({ agent: `${l.account}/x@${i}.0.0`, account: l.account, royalty_ppm: i === levels.length - 1 ? 0 : l.royalty_ppm }));
        const split = splitCharge(amount, chain);
        const kept = split.levels.reduce((sum, l) => sum + BigInt(l.kept_micros), 0n);
        const lines = splitLines(split).reduce((sum, l) => sum + BigInt(l.amount_micros), 0n);
        return (
          BigInt(split.platform_fee_micros) === BigInt(amount) / 10n &&
          BigInt(split.platform_fee_micros) + kept === BigInt(amount) &&
          lines === BigInt(amount) &&
          split.levels.every((l) => l.kept_micros >= 0 && l.royalty_micros <= l.revenue_micros)
        );
      }),
    );
  });

  it('refuses a chain whose last level pays a royalty to nobody', () => {
    assert.throws(() => splitCharge(100, [{ agent: 'a1/x@1.0.0', account: 'a1', royalty_ppm: 1 }]), RangeError);
    assert.throws(() => splitCharge(-1, lineageChain(acme, lookup)), RangeError);
  });
});

describe('lineage (gateway §7 "Limits")', () => {
  const invalidLineage = (message: RegExp) => (e: unknown) => e instanceof ContractError && e.code === 'invalid_lineage' && e.field === 'lineage.fork_of' && message.test(e.message);

  it('walks fork_of up to an agent that is no fork', () => {
    assert.deepEqual(lineageChain(lena, lookup), [
      { agent: 'lena/extract-plus@0.1.0', account: 'lena', royalty_ppm: 150_000 },
      { agent: 'acme/extract@1.2.0', account: 'acme', royalty_ppm: 0 },
    ]);
  });
  it('refuses a fork of a version that is not listed', () => {
    const stray = agent('lena/y', '1.0.0', 'acme/extract@9.9.9', '0.1');
    assert.throws(() => lineageChain(stray, lookup), invalidLineage(/lena\/y@1\.0\.0 forks acme\/extract@9\.9\.9, which is not a listed version/));
  });
  it('refuses a loop', () => {
    const a = agent('a1/x', '1.0.0', 'b1/x@1.0.0', '0.1');
    const b = agent('b1/x', '1.0.0', 'a1/x@1.0.0', '0.1');
    const loop = new Map([a, b].map((m) => [`${m.id}@${m.version}`, m]));
    assert.throws(() => lineageChain(a, (ref) => loop.get(ref)), invalidLineage(/loops back to a1\/x@1\.0\.0/));
  });
  it(`refuses a chain longer than ${MAX_LINEAGE_LEVELS} levels, accepts exactly ${MAX_LINEAGE_LEVELS}`, () => {
    const chainOf = (levels: number) => {
      const byRef = new Map<string, Manifest>();
      let top = agent('root/a', '1.0.0');
      byRef.set('root/a@1.0.0', top);
      for (let i = 1; i < levels; i++) {
        top = agent(`fork${i}/a`, '1.0.0', `${top.id}@1.0.0`, '0.1');
        byRef.set(`${top.id}@1.0.0`, top);
      }
      return () => lineageChain(top, (ref) => byRef.get(ref));
    };
    assert.equal(chainOf(MAX_LINEAGE_LEVELS)().length, MAX_LINEAGE_LEVELS);
    assert.throws(chainOf(MAX_LINEAGE_LEVELS + 1), invalidLineage(/longer than 8 levels/));
  });
});
