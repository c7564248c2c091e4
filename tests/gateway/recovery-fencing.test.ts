/**
 * Fencing (issue 12 §4, gateway §7 "Restarts"): restart recovery closes the calls of dead
 * processes only, and a call that finishes after recovery closed it (its process was taken for
 * dead) is never billed: its receipt stays as recovery closed it, and nothing is settled.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { useTestGateway, waitFor } from '../helpers/gateway.ts';
import { setUp } from '../helpers/hooks.ts';

// A short lease: the heartbeat, and with it recovery, runs every second.
setUp(() => {
  process.env.HOLON_PROCESS_LEASE_S = '5';
});
after(() => {
  delete process.env.HOLON_PROCESS_LEASE_S;
});
const gw = useTestGateway();

test('a call whose process is taken for dead is closed by recovery; its late finish is not billed and answers 502 gateway_restarted', async () => {
  const knex = gw.running.db.knex;
  const mandate = await gw.mandate();
  const before = await gw.balances([mandate.payer]);
  const answer = gw.call({ mandate: mandate.id, agent: 'gt/sleeper', input: { sleep_ms: 3000 } }).then((r) => r);
  const row: { id: string; process: number } = await waitFor(() => knex('gateway_receipts').where({ root_mandate: mandate.id, status: 'running' }).first('id', 'process'));
  assert.equal(Number(row.process), gw.running.lease.id, 'the running call names this process');
  // Another process, dead (its lease expired), is recorded as the call's owner.
  await knex('gateway_processes').insert({ id: 999_999, host: 'gone', pid: 1, expires_at: knex.raw(`clock_timestamp() - interval '1 minute'`) });
  await knex('gateway_receipts').where({ id: row.id }).update({ process: 999_999 });
  await waitFor(async () => (await knex('gateway_receipts').where({ id: row.id }).first('status')).status === 'failed');
  const response = await answer;
  assert.equal(response.status, 502);
  assert.equal(response.body.code, 'gateway_restarted');
  const receipt = await gw.receipt(row.id);
  assert.equal(receipt.status, 'failed');
  assert.equal(receipt.billed, false);
  assert.deepEqual(receipt.cost, { own: '0.00', downstream: '0.00', total: '0.00' });
  assert.deepEqual(await knex('gateway_settlement_intents').where({ receipt: row.id, operation: 'settle' }).select('txn_id'), []);
  assert.deepEqual(await gw.balances([mandate.payer]), before);
  await waitFor(async () => (await gw.reserved(mandate.payer)) === 0);
  const budget = (await gw.http.get(`/v0/mandates/${mandate.id}`).expect(200)).body.budget;
  assert.deepEqual(budget, { currency: 'EUR', total: '10.00', spent: '0.00', reserved: '0.00', remaining: '10.00' });
  // The dead process's lease is forgotten once it owns nothing.
  await waitFor(async () => (await knex('gateway_processes').where({ id: 999_999 }).first()) === undefined);
});

test("recovery leaves a live process's running call alone", async () => {
  const knex = gw.running.db.knex;
  const mandate = await gw.mandate();
  const answer = gw.call({ mandate: mandate.id, agent: 'gt/sleeper', input: { sleep_ms: 2000 } }).then((r) => r);
  await waitFor(() => knex('gateway_receipts').where({ root_mandate: mandate.id, status: 'running' }).first('id'));
  const response = await answer;
  assert.equal(response.status, 200);
  assert.equal(response.body.receipt.billed, true);
});
