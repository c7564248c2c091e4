/**
 * Health tells the truth (issue 27 §2): a gateway process and the reference binding whose
 * database takes no writes (here: the database made read-only and every session cut, as a
 * failover leaves a client on the old primary's port, now a standby) answer `/healthz` 503
 * `database_unavailable` with the reason and answer a call 503 `database_unavailable`, never
 * 500; once the database takes writes again they serve again with no restart, the gateway under
 * a new process lease. Postgres only for the read-only part (PGlite lives in the process).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pg from 'pg';
import { onPostgres, useTestGateway, waitFor } from '../helpers/gateway.ts';

describe('readiness on /healthz', () => {
  const gw = useTestGateway();

  test('a gateway and its binding that can write answer 200 {ok: true}', async () => {
    const answer = await gw.http.get('/healthz');
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, { ok: true });
    const binding = await fetch(`${gw.running.clearing_url}/healthz`);
    assert.equal(binding.status, 200);
    assert.deepEqual(await binding.json(), { ok: true });
  });

  test('a read-only database: 503 database_unavailable on /healthz and on a call, never 500; writable again: served again under a new lease', { skip: onPostgres() ? false : 'Postgres only (DATABASE_URL)' }, async () => {
    const mandate = await gw.mandate();
    const call = () => gw.call({ mandate: mandate.id, agent: 'acme/table-extract', input: { text: 'a;b' } });
    assert.equal((await call()).status, 200);
    const name = new URL(gw.store.database_url!).pathname.slice(1);
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    const lease_before = gw.running.lease.id;
    try {
      await admin.query(`ALTER DATABASE ${name} SET default_transaction_read_only = on`);
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);

      const health = await gw.http.get('/healthz');
      assert.equal(health.status, 503);
      assert.equal(health.body.code, 'database_unavailable');
      assert.match(health.body.error, /is read-only/);
      const refused = await call();
      assert.equal(refused.status, 503, JSON.stringify(refused.body));
      assert.equal(refused.body.code, 'database_unavailable');
      const binding = await fetch(`${gw.running.clearing_url}/healthz`);
      assert.equal(binding.status, 503);
      assert.equal(((await binding.json()) as { code: string }).code, 'database_unavailable');
    } finally {
      await admin.query(`ALTER DATABASE ${name} RESET default_transaction_read_only`);
      await admin.end();
    }
    await waitFor(async () => (await gw.http.get('/healthz')).status === 200, 10_000);
    assert.notEqual(gw.running.lease.id, lease_before, 'the lost lease was replaced by a new one');
    const served = await call();
    assert.equal(served.status, 200);
    assert.equal(served.body.receipt.status, 'succeeded');
  });
});
