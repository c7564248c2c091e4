/**
 * Idempotent calls and restarts of the hosted gateway (gateway §7 "Idempotent calls",
 * "Restarts"): a key already used replays the original receipt and runs nothing; a different
 * body under it is refused; a key whose call runs answers 409; two racing requests with one key
 * run once; a key a restart interrupted answers 409, its call closed `failed` with
 * `gateway_restarted`, never billed.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { failOnce } from '../helpers/faults.ts';
import { waitFor } from '../helpers/gateway.ts';
import { bearer, inconsistentClaims, startTestHosted, useHostedAccount, useTestHosted } from '../helpers/hosted.ts';


describe('Idempotency-Key', () => {
  const hosted = useTestHosted();
  const account = useHostedAccount(hosted);
  const call = (key: string, input: Record<string, unknown>, agent = 'gt/run') =>
    hosted.http.post('/v0/calls').set(bearer(account.agent)).set('idempotency-key', key).send({ mandate: account.mandate, agent, input });
  const balance = async () => {
    await hosted.running.outbox.drain();
    return (await hosted.http.get('/v0/me').set(bearer(account.human)).expect(200)).body.balance.balance;
  };

  test('a key already used replays the original receipt with output null and bills once', async () => {
    const first = await call('once-1', { do: 'ok' }).expect(200);
    assert.equal(first.body.replayed, undefined);
    const after_first = await balance();
    const replay = await call('once-1', { do: 'ok' }).expect(200);
    assert.deepEqual([replay.body.replayed, replay.body.output, replay.body.receipt.id], [true, null, first.body.receipt.id]);
    assert.equal(await balance(), after_first);
    const receipts = await hosted.running.db.knex('gateway_receipts').where({ root_mandate: account.mandate }).count('* as n');
    assert.equal(Number(receipts[0].n), 1);
  });

  test('a failed call replays with its status and code', async () => {
    const first = await call('fail-1', { do: 'unbilled_error' });
    const replay = await call('fail-1', { do: 'unbilled_error' });
    assert.deepEqual([replay.status, replay.body.code, replay.body.replayed, replay.body.receipt.id], [first.status, first.body.code, true, first.body.receipt.id]);
  });

  test('the same key with a different body is refused 422 and runs nothing', async () => {
    await call('body-1', { do: 'ok' }).expect(200);
    const refused = await call('body-1', { do: 'ok', marker: 'other' });
    assert.deepEqual([refused.status, refused.body.code], [422, 'idempotency_key_reused']);
  });

  test('keys are per API key: another key of the same account runs its own call', async () => {
    await call('per-key', { do: 'ok' }).expect(200);
    const other = await hosted.http.post('/v0/calls').set(bearer(account.human)).set('idempotency-key', 'per-key').send({ mandate: account.mandate, agent: 'gt/run', input: { do: 'ok' } });
    assert.deepEqual([other.status, other.body.replayed], [200, undefined]);
  });

  test('a key whose call is still running answers 409 idempotent_call_running (a retry after the caller\'s own timeout)', async () => {
    const hanging = call('running-1', { do: 'hang' }, 'gt/sleeper').then(() => null, () => null);
    const claim = await waitFor(async () => hosted.running.db.knex('hosted_idempotency').where({ idempotency_key: 'running-1', status: 'running' }).first());
    await waitFor(async () => hosted.running.db.knex('gateway_receipts').where({ id: claim.receipt, status: 'running' }).first());
    const retry = await call('running-1', { do: 'hang' }, 'gt/sleeper');
    assert.deepEqual([retry.status, retry.body.code], [409, 'idempotent_call_running']);
    void hanging;
  });

  test('two requests racing with one key run it once', async () => {
    const count = async () => Number((await hosted.running.db.knex('gateway_receipts').where({ root_mandate: account.mandate }).count('* as n'))[0].n);
    const before_race = await count();
    const racing = await Promise.all([call('race-1', { do: 'ok', marker: 'race' }), call('race-1', { do: 'ok', marker: 'race' })]);
    // Whichever lost the claim saw the call running (409) or finished (a replay); never a second run.
    assert.equal(racing.filter((r) => r.status === 200 && r.body.replayed === undefined).length, 1);
    for (const r of racing) assert.ok(r.status === 409 ? r.body.code === 'idempotent_call_running' : r.status === 200);
    const runs = await hosted.running.db.knex('hosted_idempotency').where({ idempotency_key: 'race-1' }).count('* as n');
    assert.equal(Number(runs[0].n), 1);
    assert.equal(await count(), before_race + 1);
  });

  test('the claim is created with the receipt: a receipt write that fails leaves no claim, so the key runs when retried', async () => {
    await failOnce(hosted.running.db.knex, 'open_receipt', 'INSERT', 'gateway_receipts', `NEW.status = 'running' AND NEW.root_mandate = '${account.mandate}'`);
    const failed = await call('open-1', { do: 'ok', marker: 'open' });
    assert.equal(failed.status, 500);
    assert.deepEqual(await hosted.running.db.knex('hosted_idempotency').where({ idempotency_key: 'open-1' }).select('status'), []);
    const retry = await call('open-1', { do: 'ok', marker: 'open' });
    assert.deepEqual([retry.status, retry.body.replayed, retry.body.receipt?.status], [200, undefined, 'succeeded']);
    assert.deepEqual(await inconsistentClaims(hosted.running.db.knex), []);
  });

  test('the outcome is recorded in the receipt\'s closing transaction: a closing write that fails leaves claim and receipt agreeing', async () => {
    await failOnce(hosted.running.db.knex, 'close_claim', 'UPDATE', 'hosted_idempotency', `NEW.status = 'done' AND NEW.idempotency_key = 'close-1'`);
    const first = await call('close-1', { do: 'ok', marker: 'close' });
    // The run's closing transaction failed as a whole, so the call ended as a gateway error, unbilled, and its claim says so.
    assert.deepEqual([first.status, first.body.code, first.body.receipt.billed], [502, 'gateway_error', false]);
    assert.deepEqual(await inconsistentClaims(hosted.running.db.knex), []);
    const replay = await call('close-1', { do: 'ok', marker: 'close' });
    assert.deepEqual([replay.status, replay.body.replayed, replay.body.receipt.id, replay.body.receipt.status], [502, true, first.body.receipt.id, 'failed']);
  });

  test('a malformed key is refused 422', async () => {
    const refused = await call('x'.repeat(256), { do: 'ok' });
    assert.deepEqual([refused.status, refused.body.code], [422, 'invalid_request']);
  });
});

describe('§7 restarts under an Idempotency-Key', () => {
  test('the interrupted call closes failed gateway_restarted, unbilled, and its key answers 409', async () => {
    const first = await startTestHosted();
    const account = await first.signup();
    const inflight = fetch(`${first.running.url}/v0/calls`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${account.agent}`, 'idempotency-key': 'restart-1' },
      body: JSON.stringify({ mandate: account.mandate, agent: 'gt/sleeper', input: { do: 'hang' } }),
    }).catch(() => null);
    const claim = await waitFor(async () => first.running.db.knex('hosted_idempotency').where({ idempotency_key: 'restart-1' }).first());
    await waitFor(async () => first.running.db.knex('gateway_receipts').where({ id: claim.receipt, status: 'running' }).first());
    await first.close({ keep: true });
    await inflight;
    const second = await startTestHosted({ store: first.store });
    try {
      const again = await second.http.post('/v0/calls').set(bearer(account.agent)).set('idempotency-key', 'restart-1').send({ mandate: account.mandate, agent: 'gt/sleeper', input: { do: 'hang' } });
      assert.deepEqual([again.status, again.body.code], [409, 'idempotent_call_interrupted']);
      assert.match(again.body.error, /GET \/v0\/receipts/);
      const receipt = (await second.http.get(`/v0/receipts/${claim.receipt}`).set(bearer(account.human)).expect(200)).body;
      assert.deepEqual([receipt.status, receipt.billed, receipt.error.code, receipt.cost.total], ['failed', false, 'gateway_restarted', '0.00']);
      await second.running.outbox.drain();
      const me = (await second.http.get('/v0/me').set(bearer(account.human)).expect(200)).body;
      assert.deepEqual([me.balance.balance, me.balance.reserved], ['5.00', '0.00']);
    } finally {
      await second.close();
    }
  });
});

describe('§7 restarts of an approved call', () => {
  test('an approved call that restart recovery closes says so on its approval: outcome failed gateway_restarted, unbilled', async () => {
    const first = await startTestHosted();
    const account = await first.signup();
    await first.http.post('/v0/mandates').set(bearer(account.human)).send({ id: 'careful', grantee: `${account.handle}/bot`, allow: { agents: ['*'] }, approval: { above: '0.05' }, budget: { total: '3.00' } }).expect(201);
    const mandate = `${account.handle}/careful`;
    const held = await first.http.post('/v0/calls').set(bearer(account.human)).send({ mandate, agent: 'gt/run', input: { do: 'ok' } }).expect(202);
    const id = held.body.approval.id;
    // The decision committed, then the process died before the run started (the window issue 8 §1.5 names).
    await first.running.db.knex('gateway_approvals').where({ id }).update({ status: 'approved', decided_at: new Date() });
    await first.close({ keep: true });
    const second = await startTestHosted({ store: first.store });
    try {
      const read = (await second.http.get(`/v0/approvals/${id}`).set(bearer(account.human)).expect(200)).body;
      assert.equal(read.approval.status, 'approved');
      assert.deepEqual([read.outcome.receipt, read.outcome.status, read.outcome.billed, read.outcome.error.code], [held.body.receipt.id, 'failed', false, 'gateway_restarted']);
    } finally {
      await second.close();
    }
  });
});
