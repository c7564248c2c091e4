/**
 * Gateway §1 "Reserve": parallel calls see each other's reservations, so together they cannot
 * overrun a budget. 50 calls at once against a budget that admits exactly 10.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deltas, useTestGateway } from '../helpers/gateway.ts';

const gw = useTestGateway();

test('50 parallel calls of a 0.10 agent under a 1.00 budget: exactly 10 run and are billed, 40 are denied over_budget', async () => {
  const mandate = await gw.mandate({ budget: { total: '1.00', currency: 'EUR' } });
  const before = await gw.balances([mandate.payer, 'gt', 'platform:fees']);
  const responses = await Promise.all(Array.from({ length: 50 }, () => gw.call({ mandate: mandate.id, agent: 'gt/run', input: {} }).then((r) => r)));

  const succeeded = responses.filter((r) => r.status === 200);
  const denied = responses.filter((r) => r.status === 403);
  assert.equal(succeeded.length, 10);
  assert.equal(denied.length, 40);
  for (const r of succeeded) {
    assert.equal(r.body.receipt.billed, true);
    assert.equal(r.body.receipt.cost.total, '0.10');
  }
  for (const r of denied) {
    assert.equal(r.body.code, 'over_budget');
    assert.equal(r.body.receipt.billed, false);
  }

  const after = await gw.balances([mandate.payer, 'gt', 'platform:fees']);
  assert.deepEqual(deltas(before, after), { [mandate.payer]: -1_000_000, gt: 900_000, 'platform:fees': 100_000 });
  assert.equal(await gw.reserved(mandate.payer), 0);
  const budget = (await gw.http.get(`/v0/mandates/${mandate.id}`).expect(200)).body.budget;
  assert.deepEqual(budget, { currency: 'EUR', total: '1.00', spent: '1.00', reserved: '0.00', remaining: '0.00' });
});
