/**
 * Outbox ordering (clearing-contract §13, issue 8 §1.2): a call's settlement reaches the binding
 * before its hold is released, so no other call is admitted against money about to be charged.
 * The race: a payer holding exactly 0.10, 25 concurrent calls of worst case and price 0.02
 * (`gt/unit`, 2 units under a 0.02 `max_cost`): exactly 5 are billed and the balance ends at
 * zero, never below. 20 rounds on one gateway, a fresh payer and mandate each round.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { useTestGateway } from '../helpers/gateway.ts';
import { setUp } from '../helpers/hooks.ts';

const ROUNDS = 20;
const CALLS = 25;

const gw = useTestGateway();
setUp(async () => {
  // The agent's module is imported by its first run: a cold import under load can outlast the
  // 1 s hard timeout, and a timed-out run's released hold would admit one more caller.
  const warm = await gw.mandate({}, 100_000);
  assert.equal((await gw.call({ mandate: warm.id, agent: 'gt/unit', input: { units: 2 }, max_cost: '0.02' })).status, 200);
});

test(`${ROUNDS} rounds of ${CALLS} concurrent 0.02 calls on a payer holding 0.10: exactly 5 billed, the balance ends at 0`, async () => {
  for (let round = 1; round <= ROUNDS; round++) {
    const mandate = await gw.mandate({}, 100_000);
    const responses = await Promise.all(
      Array.from({ length: CALLS }, () => gw.call({ mandate: mandate.id, agent: 'gt/unit', input: { units: 2 }, max_cost: '0.02' }).then((r) => r)),
    );
    const billed = responses.filter((r) => r.body.receipt.billed);
    const refused = responses.filter((r) => r.status === 403);
    assert.equal(billed.length, 5, `round ${round}: billed ${billed.length}`);
    assert.ok(billed.every((r) => r.status === 200 && r.body.receipt.cost.total === '0.02'), `round ${round}`);
    assert.equal(refused.length, CALLS - 5, `round ${round}`);
    assert.ok(refused.every((r) => r.body.code === 'insufficient_funds'), `round ${round}: ${refused.map((r) => r.body.code)}`);
    assert.deepEqual(await gw.balances([mandate.payer]), { [mandate.payer]: 0 }, `round ${round}`);
    assert.equal(await gw.reserved(mandate.payer), 0, `round ${round}`);
  }
});
