/**
 * A binding whose answers get lost (issue 8 §1.3, §1.4): the gateway does not know whether
 * open-hold took effect, so the call fails closed (503 `clearing_unavailable`, nothing billed)
 * and the hold's release is queued through the outbox, so no hold outlives its call. A binding
 * that never answers is given up on after the clearing request timeout (here 2 s).
 * A proxy in front of the reference binding forwards each open-hold, then loses the answer.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { useSwitchableGateway, type LostAnswer } from '../helpers/gateway.ts';
import { setUp } from '../helpers/hooks.ts';

const HOLD_PATH = '/internal/ledger/hold';

const { gateway: gw, binding } = useSwitchableGateway({ clearing_timeouts: { connect_s: 2, request_s: 2 } });
setUp(async () => {
  await gw.clearing.createAccount('gt');
});

/** A call of gt/run (0.10) while the proxy loses open-hold's answer `answer`, on a payer holding exactly 0.10. */
async function callLosingTheHold(answer: LostAnswer) {
  const mandate = await gw.mandate({}, 100_000);
  binding.loseAnswers({ path: HOLD_PATH, answer });
  try {
    const response = await gw.call({ mandate: mandate.id, agent: 'gt/run', input: {} });
    return { mandate, response };
  } finally {
    binding.loseAnswers(null);
  }
}

describe('a lost answer to open-hold', () => {
  for (const answer of ['reset', '502'] as const) {
    test(`(${answer}): 503 clearing_unavailable, nothing billed, the hold released, so the next call runs`, async () => {
      const { mandate, response } = await callLosingTheHold(answer);
      assert.equal(response.status, 503);
      assert.equal(response.body.code, 'clearing_unavailable');
      assert.equal(response.body.receipt.billed, false);
      await gw.settle();
      assert.equal(await gw.reserved(mandate.payer), 0, 'the hold the binding opened is released');
      const next = await gw.call({ mandate: mandate.id, agent: 'gt/run', input: {} });
      assert.equal(next.status, 200, JSON.stringify(next.body.error));
      assert.deepEqual(await gw.balances([mandate.payer]), { [mandate.payer]: 0 });
      const budget = (await gw.http.get(`/v0/mandates/${mandate.id}`).expect(200)).body.budget;
      assert.deepEqual(budget, { currency: 'EUR', total: '10.00', spent: '0.10', reserved: '0.00', remaining: '9.90' });
    });
  }
});

describe('a binding that never answers', () => {
  test('the call ends after the 2 s request timeout with 503 clearing_unavailable, nothing billed, and the hold is released afterwards', { timeout: 30_000 }, async () => {
    const { mandate, response } = await callLosingTheHold('hang');
    assert.equal(response.status, 503);
    assert.equal(response.body.code, 'clearing_unavailable');
    assert.match(response.body.error, /no answer within 2 s \(the clearing request timeout, HOLON_CLEARING_TIMEOUT_S\)/);
    assert.equal(response.body.receipt.status, 'failed');
    assert.equal(response.body.receipt.billed, false);
    await gw.settle();
    assert.equal(await gw.reserved(mandate.payer), 0);
    assert.deepEqual(await gw.balances([mandate.payer]), { [mandate.payer]: 100_000 });
    const budget = (await gw.http.get(`/v0/mandates/${mandate.id}`).expect(200)).body.budget;
    assert.deepEqual(budget, { currency: 'EUR', total: '10.00', spent: '0.00', reserved: '0.00', remaining: '10.00' });
  });
});
