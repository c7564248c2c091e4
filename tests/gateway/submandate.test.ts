/**
 * Derived sub-mandates (gateway §3, issue 8 §1.1): a sub-mandate exists for the run it was derived
 * for, and only while that run is open. From any door (`/v0` calls, mandate and receipt reads,
 * search) it answers like a mandate that does not exist, and what runs under it counts against
 * its root mandate's budget.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { before, describe, test } from 'node:test';
import { deltas, useTestGateway } from '../helpers/gateway.ts';

const gw = useTestGateway();

describe('a derived sub-mandate is not a door', () => {
  let mandate: { id: string; payer: string };
  let sub: string;
  let spent: string;
  before(async () => {
    mandate = await gw.mandate({ budget: { total: '0.15', currency: 'EUR' } });
    // The repro: an orchestrator fails; its receipt names the sub-mandate derived for it.
    const failed = await gw.call({ mandate: mandate.id, agent: 'holon-labs/invoice-pipeline', input: { invoice: 'no table here' } });
    assert.equal(failed.status, 502);
    sub = failed.body.receipt.sub_mandate;
    assert.equal(sub, `${mandate.id}.${failed.body.receipt.id}`);
    spent = failed.body.receipt.cost.total;
  });

  test('POST /v0/calls under it answers 404 no_such_mandate and bills nothing', async () => {
    const before = await gw.balances([mandate.payer, 'acme']);
    const response = await gw.call({ mandate: sub, agent: 'acme/table-extract', input: { text: 'a;b' } });
    assert.equal(response.status, 404);
    assert.equal(response.body.code, 'no_such_mandate');
    assert.equal(response.body.error, `there is no mandate ${sub}: check its id (issuer/name) against the mandates you were given`);
    assert.deepEqual(await gw.balances([mandate.payer, 'acme']), before);
    const budget = (await gw.http.get(`/v0/mandates/${mandate.id}`).expect(200)).body.budget;
    assert.equal(budget.reserved, '0.00');
    assert.equal(budget.spent, spent, 'only what the failed pipeline spent');
  });

  test('GET /v0/mandates/{sub} answers 404 no_such_mandate', async () => {
    const response = await gw.http.get(`/v0/mandates/${sub}`).expect(404);
    assert.equal(response.body.code, 'no_such_mandate');
  });

  test('GET /v0/receipts?mandate= and GET /v0/agents?mandate= answer 404 for it, as for a mandate that does not exist', async () => {
    for (const id of [sub, 'nobody/nothing']) {
      for (const path of [`/v0/receipts?mandate=${id}`, `/v0/agents?mandate=${id}`]) {
        const response = await gw.http.get(path);
        assert.equal(response.status, 404, path);
        assert.equal(response.body.code, 'no_such_mandate', path);
      }
    }
    const listed = (await gw.http.get(`/v0/receipts?mandate=${mandate.id}`).expect(200)).body.receipts;
    assert.equal(listed.length, 1);
  });
});

test("a downstream call made after the orchestrator's run ended is refused: it neither runs nor bills", async () => {
  const mandate = await gw.mandate();
  const before = await gw.balances([mandate.payer, 'gt']);
  // gto/impatient times out after 1 s while its first child sleeps 1.3 s; when that child answers,
  // the agent goes on to a second call, after its run ended.
  const response = await gw.call({
    mandate: mandate.id,
    agent: 'gto/impatient',
    input: { calls: [{ agent: 'gt/sleeper', input: { sleep_ms: 1300 } }, { agent: 'gt/sleeper', input: {} }] },
  });
  assert.equal(response.status, 502);
  const parent = response.body.receipt;
  assert.equal(parent.error.code, 'timeout');
  assert.equal(parent.children.length, 1);
  // Let a late call, were it accepted, run and settle.
  await sleep(500);
  const children = await gw.running.db.knex('gateway_receipts').where({ parent: parent.id }).pluck('id');
  assert.deepEqual(children, parent.children);
  const after = await gw.balances([mandate.payer, 'gt']);
  assert.deepEqual(deltas(before, after), { [mandate.payer]: -100_000, gt: 90_000 });
  const budget = (await gw.http.get(`/v0/mandates/${mandate.id}`).expect(200)).body.budget;
  assert.equal(budget.spent, '0.10');
});
