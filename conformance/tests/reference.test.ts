/**
 * The kit against the reference binding (`src/clearing/`), on the suite's database (in-memory
 * PGlite, or the `DATABASE_URL` PostgreSQL): every MUST check passes, nothing is left as a
 * warning, and a binding offering only the four REQUIRED operations, funded through
 * `prefunded`, passes too. The kit itself uses nothing from `src/`; only this test does.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { createClearingApp } from '../../src/clearing/app.ts';
import { REQUIRED_OPERATIONS } from '../../src/clearing/capabilities.ts';
import type { Database } from '../../src/db/index.ts';
import { openTestDatabase, testBinding, unique } from '../../tests/helpers/clearing.ts';
import { runConformance } from '../src/runner.ts';

let db: Database;

before(async () => {
  db = await openTestDatabase();
});
after(async () => {
  await db.close();
});

/** Serves the reference binding over `db` on a free loopback port; returns its URL and a closer. */
async function serve(operations?: typeof REQUIRED_OPERATIONS) {
  const server = createClearingApp({ db: db.knex, operations }).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}

/** Creates the kit's fixture accounts and agent link through the binding's own doors; returns the config fixtures. */
async function fixtures(prefunded_micros: number) {
  const binding = testBinding(db);
  const payer = prefunded_micros > 0 ? await binding.funded(prefunded_micros, 'conf-payer') : await binding.account('conf-payer');
  const payee = await binding.account('conf-payee');
  const agent_key = unique('conf-agent');
  await binding.http.post('/internal/reference/agent-links').send({ agentKey: agent_key, account: payer }).expect(200);
  return { agent_key, unknown_agent_key: unique('conf-nobody'), accounts: { payer, payee }, prefunded: prefunded_micros };
}

function failures(report: Awaited<ReturnType<typeof runConformance>>) {
  return report.results.filter((r) => r.outcome === 'fail' || r.outcome === 'warn').map((r) => `${r.id} ${r.outcome}: ${r.reason ?? r.failure?.expected ?? ''}`);
}

test('the reference binding passes every check of the kit', { timeout: 120_000 }, async () => {
  const binding = await serve();
  try {
    const config = { url: binding.url, fixtures: await fixtures(0) };
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

test('the reference binding offering only the four REQUIRED operations, funded through prefunded, passes', { timeout: 120_000 }, async () => {
  const binding = await serve(REQUIRED_OPERATIONS);
  try {
    const report = await runConformance({ url: binding.url, fixtures: await fixtures(50_000_000) });
    assert.deepEqual(failures(report), []);
    assert.equal(report.exit_code, 0);
    assert.deepEqual(report.binding?.operations, [...REQUIRED_OPERATIONS]);
  } finally {
    await binding.close();
  }
});
