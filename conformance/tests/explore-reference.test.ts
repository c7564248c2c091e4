/**
 * The reference binding (`src/clearing/`) passes explore with every fault on, on the suite's
 * database (PGlite, or the `DATABASE_URL` PostgreSQL): once on a fixed seed, once on a random
 * seed that the test prints. Budgets come from HOLON_EXPLORE_SECONDS (fixed seed) and
 * HOLON_EXPLORE_RANDOM_SECONDS (random seed), 10 s each by default; `.ci/run` runs 300 and 30.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Database } from '../../src/db/index.ts';
import { openTestDatabase } from '../../tests/helpers/clearing.ts';
import { FAULT_KINDS } from '../src/explore/proxy.ts';
import { runExplore } from '../src/explore/run.ts';
import { formatFailure } from '../src/report/text.ts';
import { referenceFixtures, serveReference } from './reference-binding.ts';

const FIXED_SEED = 20261205;
const seconds = (name: string): number => {
  const value = Number(process.env[name] ?? 10);
  if (!Number.isSafeInteger(value) || value < 1 || value > 3600) throw new Error(`${name} must be whole seconds from 1 to 3600`);
  return value;
};

let db: Database;
before(async () => {
  db = await openTestDatabase();
});
after(async () => {
  await db.close();
});

for (const [name, seed, budget] of [
  ['a fixed seed', FIXED_SEED, seconds('HOLON_EXPLORE_SECONDS')],
  ['a random seed', undefined, seconds('HOLON_EXPLORE_RANDOM_SECONDS')],
] as const) {
  test(`the reference binding passes explore with every fault on, ${name}, for ${budget} s`, { timeout: (budget + 120) * 1000 }, async (t) => {
    const binding = await serveReference(db);
    try {
      const report = await runExplore({ url: binding.url, fixtures: await referenceFixtures(db, 0) }, {
        seed, budget_ms: budget * 1000, concurrency: 8, faults: [...FAULT_KINDS],
      });
      t.diagnostic(`seed ${report.explore.seed}: ${report.explore.histories} histories, ${report.explore.requests} requests, faults injected ${JSON.stringify(report.explore.injected)}`);
      assert.deepEqual(report.results.filter((r) => r.outcome !== 'pass').map((r) => `${r.id}: ${r.failure === null ? r.reason : formatFailure(r)}`), [], `replay: ${report.explore.replay}`);
      assert.ok(report.explore.histories > 0);
    } finally {
      await binding.close();
    }
  });
}
