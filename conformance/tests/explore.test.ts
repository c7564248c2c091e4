/**
 * Explore mode against bindings that break what no script reaches, and against a correct one:
 * the faithful fake passes with every fault on; a racy, a
 * double-applying, a drifting and a retry-refusing binding, and for every property a binding that
 * breaks it, are each found, named by the property they break, and shrunk to a history of at most
 * 10 requests.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exploreOptions } from '../src/explore/flags.ts';
import { differs } from '../src/explore/linearize.ts';
import { FAULT_KINDS } from '../src/explore/proxy.ts';
import { runExplore, type ExploreOptions } from '../src/explore/run.ts';
import { formatFailure } from '../src/report/text.ts';
import { FAKE_FIXTURES, startFakeBinding, type Fault } from './fake-binding.ts';

const ALL_FAULTS = [...FAULT_KINDS];
/** These bindings are in memory: no database engine is involved, so the PostgreSQL leg of the suite need not run them again. */
const ONCE = process.env.DATABASE_URL === undefined ? false : 'in-memory bindings: run on the PGlite leg only';
const SEED = 20261205;

async function exploreFake(fault: Fault | undefined, options: Partial<ExploreOptions>) {
  const fake = await startFakeBinding({ fault });
  try {
    return await runExplore({ url: fake.url, fixtures: FAKE_FIXTURES }, { seed: SEED, budget_ms: 60_000, shrink_ms: 60_000, concurrency: 8, faults: [], ...options });
  } finally {
    await fake.close();
  }
}

const failed = (report: Awaited<ReturnType<typeof runExplore>>) => report.results.filter((r) => r.outcome === 'fail').map((r) => r.id);

test('a faithful binding passes explore with every fault on, and the run is bounded by its budget', { timeout: 120_000, skip: ONCE }, async () => {
  const report = await exploreFake(undefined, { budget_ms: 8_000, faults: ALL_FAULTS });
  assert.deepEqual(report.results.filter((r) => r.outcome === 'fail').map(formatFailure), []);
  assert.equal(report.exit_code, 0);
  assert.ok(report.explore.histories > 3, `ran ${report.explore.histories} histories`);
  const injected = report.explore.injected as Record<string, number>;
  for (const kind of ALL_FAULTS) assert.ok((injected[kind] ?? 0) > 0, `the proxy injected ${kind}: ${JSON.stringify(injected)}`);
  assert.deepEqual(report.results.map((r) => r.section), Array(5).fill('explore'));
});

// The racy binding checks, yields, then acts: which race the history hits first (two holds
// overcommitting, or two copies of one hold both applied) is the scheduler's, so either is the find.
const broken: [Fault, readonly string[], Partial<ExploreOptions>][] = [
  ['racy-holds', ['explore.no-overcommit', 'explore.once'], {}],
  // Two copies both applied show as an applied replay, or (when the proxy passed back one answer) in the figures.
  ['double-apply', ['explore.once', 'explore.figures'], { faults: ['duplicates'] }],
  ['drift', ['explore.figures'], {}],
  ['retry-refused', ['explore.once'], { faults: ['lost-answers'], fault_percent: 30 }],
  // Scripted faults explore must find too, one for each property the races above leave unnamed.
  ['hold-overcommits', ['explore.no-overcommit'], {}],
  ['draw-exceeds-cap', ['explore.within-cap'], {}],
  ['unknown-settlement-404', ['explore.answers'], {}],
];

for (const [fault, properties, options] of broken) {
  test(`explore finds the ${fault} binding (${properties.join(' or ')}) and shrinks it to at most 10 requests`, { timeout: 240_000, skip: ONCE }, async () => {
    const report = await exploreFake(fault, options);
    const found = failed(report);
    assert.equal(found.length, 1, `one property fails: ${found.join(', ')}`);
    assert.ok(properties.includes(found[0] as string), `${found[0]} is one of ${properties.join(', ')}`);
    assert.equal(report.exit_code, 1);
    const shortest = report.explore.shortest_failing_requests;
    assert.ok(shortest !== null && shortest <= 10, `shrunk to ${shortest} requests`);
    const text = formatFailure(report.results.find((r) => r.outcome === 'fail')!);
    assert.match(text, /the shortest history that fails/);
    assert.match(text, /1\. curl -sS -i -X /);
    assert.match(text, new RegExp(`replay: holon-conformance explore --seed ${SEED}`));
  });
}

test('the same seed generates the same histories against a deterministic binding', { timeout: 300_000, skip: ONCE }, async () => {
  const a = await exploreFake('drift', {});
  const b = await exploreFake('drift', {});
  assert.equal(a.explore.shortest_failing_requests, b.explore.shortest_failing_requests);
  assert.equal(a.explore.histories, b.explore.histories);
});

test('an answer is matched field by field: a replay answered as applied is not a replay', () => {
  const exchange = { seq: 1, op: 'settle', method: 'POST', url: 'http://x', request_headers: {}, request_body: null, status: 200, response_headers: {}, response_body: '', json: undefined, transport_error: null, elapsed_ms: 0 };
  const reply = (status: number, body: unknown) => ({ status, body, exchange });
  assert.equal(differs({ kind: 'accepted', applied: false, fields: {} }, reply(200, { ok: true, applied: false })), null);
  assert.equal(differs({ kind: 'accepted', applied: false, fields: {} }, reply(200, { ok: true, applied: true })), 'applied true');
  assert.equal(differs({ kind: 'accepted', applied: true, fields: { billed: 5 } }, reply(200, { applied: true, billed: 6 })), 'billed 6');
  assert.equal(differs({ kind: 'refused', status: [422], codes: ['insufficient_funds'], own: false }, reply(422, { code: 'closed' })), 'code closed');
  assert.equal(differs({ kind: 'refused', status: [422], codes: ['closed'], own: true }, reply(422, { code: 'my_own' })), null);
  assert.equal(differs({ kind: 'read', status: 200, fields: { state: 'settled' }, legsSumZero: true }, reply(200, { state: 'settled', legs: [{ delta: -5 }, { delta: 4 }] })), 'legs summing to -1');
});

test('explore flags: durations, ranges and fault kinds are checked before anything runs', () => {
  const base = { budget: '60s', shrinkBudget: '60s', concurrency: '8' };
  assert.deepEqual(exploreOptions({ ...base, budget: '5m', seed: '7', faults: 'lost-answers,resets' }), {
    seed: 7, budget_ms: 300_000, shrink_ms: 60_000, concurrency: 8, max_requests: 500_000, fault_percent: undefined, faults: ['lost-answers', 'resets'],
  });
  assert.throws(() => exploreOptions({ ...base, budget: 'soon' }), /--budget must be a duration such as 60s/);
  assert.throws(() => exploreOptions({ ...base, concurrency: '17' }), /--concurrency must be an integer from 1 to 16; got "17"/);
  assert.throws(() => exploreOptions({ ...base, faults: 'lost-answers,gremlins' }), /unknown fault gremlins/);
  assert.throws(() => exploreOptions({ ...base, faultRate: '80' }), /--fault-rate must be an integer from 1 to 50; got "80"/);
});
