/**
 * A crash among idempotent calls (gateway §7 "Idempotent calls", "Restarts"; issue 9 §4): a
 * hosted gateway in a process of its own runs 60 calls under Idempotency-Keys at once and is
 * killed with `kill -9` while they run. After a restart, every claim has its receipt and agrees
 * with it (the claim is written in the receipt's transactions), every interrupted key answers
 * 409 and every finished one replays its receipt, billed exactly as the receipt says.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { closedPort } from '../helpers/cli.ts';
import { FIXTURE_AGENTS, freshStore, waitFor } from '../helpers/gateway.ts';
import { ADMIN_KEY, inconsistentClaims, startTestHosted, uniqueAccount } from '../helpers/hosted.ts';

const CALLS = 60;

test(`after kill -9 among ${CALLS} idempotent calls, every claim agrees with its receipt, and each key answers as its receipt says`, async () => {
  const store = await freshStore();
  // Chosen once: the restarted gateway listens where the first one did.
  const PORT = await closedPort();
  const child = spawn(process.execPath, ['src/bin.mjs', 'serve', '--hosted', '--port', String(PORT), '--db', store.db], {
    env: {
      ...process.env,
      ...(store.database_url ? { DATABASE_URL: store.database_url } : {}),
      HOLON_ADMIN_KEY: ADMIN_KEY,
      HOLON_RATE_ADDRESS: '100000',
      HOLON_RATE_ACCOUNT: '100000',
      HOLON_RATE_SIGNUP: '100000',
      HOLON_REGISTRY: FIXTURE_AGENTS,
      HOLON_EXCLUDE: '',
      HOLON_LOG_LEVEL: 'silent',
      NODE_ENV: 'development',
    },
    stdio: 'ignore',
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = `http://127.0.0.1:${PORT}`;
  await waitFor(async () => (await fetch(`${url}/healthz`).catch(() => null))?.ok, 120_000);
  const handle = uniqueAccount('crash');
  const signup = await (await fetch(`${url}/v0/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ handle, email: `${handle}@example.test` }) })).json();
  const body = (i: number) => ({ mandate: signup.mandate, agent: 'gt/run', input: { do: 'ok', sleep_ms: (i * 37) % 1500, marker: `m${i}` } });
  const send = (i: number) =>
    fetch(`${url}/v0/calls`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${signup.agent_key.key}`, 'idempotency-key': `crash-${i}` },
      body: JSON.stringify(body(i)),
    }).catch(() => null);
  const inflight = Array.from({ length: CALLS }, (_, i) => send(i));
  // Killed while calls run: soon after the first answer, with runs of up to 1.5 s still going.
  await Promise.race(inflight);
  await sleep(300);
  child.kill('SIGKILL');
  await exited;
  await Promise.all(inflight);

  const hosted = await startTestHosted({ store });
  try {
    const db = hosted.running.db.knex;
    assert.deepEqual(await inconsistentClaims(db), []);
    const claims = await db('hosted_idempotency').select('idempotency_key', 'status', 'receipt', 'http');
    assert.ok(claims.length > 0, 'some calls were claimed before the kill');
    let interrupted = 0;
    for (const claim of claims) {
      const i = Number(claim.idempotency_key.slice('crash-'.length));
      const again = await hosted.http.post('/v0/calls').set('authorization', `Bearer ${signup.agent_key.key}`).set('idempotency-key', claim.idempotency_key).send(body(i));
      const receipt = (await hosted.http.get(`/v0/receipts/${claim.receipt}`).set('authorization', `Bearer ${signup.human_key.key}`).expect(200)).body;
      if (claim.status === 'interrupted') {
        interrupted++;
        assert.deepEqual([again.status, again.body.code, receipt.status, receipt.error?.code, receipt.billed], [409, 'idempotent_call_interrupted', 'failed', 'gateway_restarted', false], claim.idempotency_key);
      } else {
        assert.equal(claim.status, 'done');
        assert.deepEqual([again.status, again.body.replayed, again.body.receipt.id, again.body.receipt.billed], [claim.http, true, claim.receipt, receipt.billed], claim.idempotency_key);
      }
    }
    // The balance is what the receipts billed: nothing paid for a call whose key says it did not finish.
    await hosted.running.outbox.drain();
    const billed = await db('gateway_receipts').where({ root_mandate: signup.mandate }).select('document');
    const spent_micros = billed.map((row) => (typeof row.document === 'string' ? JSON.parse(row.document) : row.document)).filter((r) => r.billed).length * 100_000;
    const me = (await hosted.http.get('/v0/me').set('authorization', `Bearer ${signup.human_key.key}`).expect(200)).body;
    assert.equal(me.balance.balance, ((5_000_000 - spent_micros) / 1_000_000).toFixed(2));
    assert.equal(me.balance.reserved, '0.00');
    assert.ok(interrupted > 0 && interrupted < claims.length, `${interrupted} of ${claims.length} claims interrupted: the kill fell among the calls`);
  } finally {
    await hosted.close();
  }
});
