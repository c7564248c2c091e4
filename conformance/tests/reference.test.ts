/**
 * The kit against the reference binding (`src/clearing/`), on the suite's database (in-memory
 * PGlite, or the `DATABASE_URL` PostgreSQL): every MUST check passes, nothing is left as a
 * warning, and a binding offering only the four REQUIRED operations, funded through
 * `prefunded`, passes too. The kit itself uses nothing from `src/`; only this test does.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { REQUIRED_OPERATIONS } from '../../src/clearing/capabilities.ts';
import type { Database } from '../../src/db/index.ts';
import { openTestDatabase, testBinding } from '../../tests/helpers/clearing.ts';
import { runConformance } from '../src/runner.ts';
import { referenceFixtures, serveReference } from './reference-binding.ts';

let db: Database;

before(async () => {
  db = await openTestDatabase();
});
after(async () => {
  await db.close();
});

function failures(report: Awaited<ReturnType<typeof runConformance>>) {
  return report.results.filter((r) => r.outcome === 'fail' || r.outcome === 'warn').map((r) => `${r.id} ${r.outcome}: ${r.reason ?? r.failure?.expected ?? ''}`);
}

test('the reference binding passes every check of the kit', { timeout: 240_000 }, async () => {
  const binding = await serveReference(db);
  try {
    const config = { url: binding.url, fixtures: await referenceFixtures(db, 0) };
    const report = await runConformance(config);
    assert.deepEqual(failures(report), []);
    assert.equal(report.exit_code, 0);
    const payer = (await testBinding(db).http.get(`/internal/ledger/balance/${config.fixtures.accounts.payer}`)).body;
    assert.equal(payer.reserved, 0, 'the kit releases every hold it opened');
    // What a full, immediate binding without periods that always answers `state` has nothing to show for.
    assert.deepEqual(report.results.filter((r) => r.outcome === 'skip').map((r) => r.id).sort(), [
      'balance.no-reservations',
      'capabilities.period-shape',
      'capabilities.unlisted-not-offered',
      'finality.absent-state-settled',
      'finality.deferred-carries-state',
    ]);
  } finally {
    await binding.close();
  }
});

test('the reference binding offering only the four REQUIRED operations, funded through prefunded, passes', { timeout: 240_000 }, async () => {
  const binding = await serveReference(db, REQUIRED_OPERATIONS);
  try {
    const report = await runConformance({ url: binding.url, fixtures: await referenceFixtures(db, 50_000_000) });
    assert.deepEqual(failures(report), []);
    assert.equal(report.exit_code, 0);
    assert.deepEqual(report.binding?.operations, [...REQUIRED_OPERATIONS]);
  } finally {
    await binding.close();
  }
});
