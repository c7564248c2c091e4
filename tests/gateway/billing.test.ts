/**
 * Gateway §2 through `POST /v0/calls`: one test per row of "What gets billed" (the receipt's
 * `billed` and `cost`, then the clearing balances after the outbox has posted), the price
 * actually charged (per_run, per_unit, quote, fx, the split with royalties) and every rule of
 * "Caller cap: max_cost". Amounts are micro-units; agents are in `tests/fixtures/agents/`.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type supertest from 'supertest';
import type { Micros } from '../../src/contracts/money.ts';
import { deltas, micros, splitsTotal, useTestGateway, waitFor, type TestMandate } from '../helpers/gateway.ts';

const gw = useTestGateway();

const NOTHING = { own: '0.00', downstream: '0.00', total: '0.00' };

/** Calls under `mandate` and answers the response and how the balances of `accounts` (and the payer's) moved once settled. */
async function measured(mandate: TestMandate, body: Record<string, unknown>, accounts: string[] = []) {
  const watched = [mandate.payer, 'platform:fees', ...accounts];
  const before = await gw.balances(watched);
  const response = await gw.call({ mandate: mandate.id, ...body });
  const after = await gw.balances(watched);
  assert.equal(await gw.reserved(mandate.payer), 0, 'no hold is left open on the payer');
  return { response, moved: deltas(before, after) };
}

/** Asserts a receipt billed nothing and no money moved. */
function assertNotBilled(response: supertest.Response, moved: Record<string, Micros>) {
  assert.equal(response.body.receipt.billed, false);
  assert.deepEqual(response.body.receipt.cost, NOTHING);
  assert.deepEqual(response.body.receipt.splits, []);
  for (const [account, delta] of Object.entries(moved)) assert.equal(delta, 0, `${account} did not move`);
}

describe('§2 what gets billed: one test per row', () => {
  test('output valid: billed, the price moves from the payer to the author and the platform', async () => {
    const mandate = await gw.mandate();
    const { response, moved } = await measured(mandate, { agent: 'gt/run', input: {} }, ['gt']);
    assert.equal(response.status, 200);
    assert.equal(response.body.receipt.status, 'succeeded');
    assert.equal(response.body.receipt.billed, true);
    assert.deepEqual(response.body.receipt.cost, { own: '0.10', downstream: '0.00', total: '0.10' });
    assert.deepEqual(response.body.receipt.splits, [{ to: 'holon', amount: '0.01' }, { to: 'gt', amount: '0.09' }]);
    assert.deepEqual(moved, { [mandate.payer]: -100_000, 'platform:fees': 10_000, gt: 90_000 });
  });

  test('declared error with billed: true under charge_on attempt: billed, answered 502', async () => {
    const mandate = await gw.mandate();
    const { response, moved } = await measured(mandate, { agent: 'gt/attempt', input: { do: 'billed_error' } }, ['gt']);
    assert.equal(response.status, 502);
    assert.equal(response.body.code, 'billed_failure');
    assert.equal(response.body.receipt.status, 'failed');
    assert.equal(response.body.receipt.billed, true);
    assert.deepEqual(response.body.receipt.cost, { own: '0.10', downstream: '0.00', total: '0.10' });
    assert.deepEqual(moved, { [mandate.payer]: -100_000, 'platform:fees': 10_000, gt: 90_000 });
  });

  test('declared error, any other case: billed: false under attempt, or any code under charge_on success', async () => {
    const mandate = await gw.mandate();
    for (const agent of ['gt/attempt', 'gt/run']) {
      const { response, moved } = await measured(mandate, { agent, input: { do: 'unbilled_error' } }, ['gt']);
      assert.equal(response.status, 502, agent);
      assert.equal(response.body.code, 'unbilled_failure', agent);
      assert.equal(response.body.receipt.status, 'failed', agent);
      assertNotBilled(response, moved);
    }
  });

  test('undeclared error, crash, timeout, invalid output: never billed, even under charge_on attempt', async () => {
    const mandate = await gw.mandate();
    const cases = [
      ['undeclared', 'surprise'],
      // An agent reporting the gateway's own `timeout` is an agent error: the receipt must not blame the clock.
      ['gateway_code', 'agent_error'],
      ['crash', 'agent_error'],
      ['hang', 'timeout'],
      ['invalid', 'invalid_output'],
    ];
    for (const [behaviour, code] of cases) {
      const { response, moved } = await measured(mandate, { agent: 'gt/attempt', input: { do: behaviour } }, ['gt']);
      assert.equal(response.status, 502, behaviour);
      assert.equal(response.body.code, code, behaviour);
      assert.equal(response.body.receipt.status, 'failed', behaviour);
      assert.equal(response.body.receipt.error.code, code, behaviour);
      assertNotBilled(response, moved);
    }
  });

  test('denied, pending approval, rejected input: never billed, nothing ran', async () => {
    const denied = await gw.mandate({ deny: { agents: ['gt/run'] } });
    let { response, moved } = await measured(denied, { agent: 'gt/run', input: {} }, ['gt']);
    assert.equal(response.status, 403);
    assert.equal(response.body.code, 'denied_agent');
    assert.equal(response.body.receipt.status, 'denied');
    assertNotBilled(response, moved);

    const careful = await gw.mandate({ approval: { above: '0.05' } });
    ({ response, moved } = await measured(careful, { agent: 'gt/run', input: {} }, ['gt']));
    assert.equal(response.status, 202);
    assert.equal(response.body.receipt.status, 'pending_approval');
    assertNotBilled(response, moved);

    ({ response, moved } = await measured(careful, { agent: 'gt/run', input: { do: 'no such behaviour' } }, ['gt']));
    assert.equal(response.status, 422);
    assert.equal(response.body.code, 'rejected_input');
    assert.equal(response.body.receipt.status, 'rejected_input');
    assertNotBilled(response, moved);
  });
});

describe('§2 price actually charged', () => {
  test('per_run: the amount', async () => {
    const mandate = await gw.mandate();
    const { response } = await measured(mandate, { agent: 'gt/attempt', input: { units: 9, quote: '3.00' } });
    assert.equal(response.body.receipt.cost.own, '0.10');
  });

  test('per_unit: amount × units, capped at max; 0 units is not billed', async () => {
    const mandate = await gw.mandate();
    for (const [units, own, billed] of [
      [3, '0.03', true],
      [5, '0.05', true],
      [7, '0.05', true],
      [0, '0.00', false],
    ] as const) {
      const { response, moved } = await measured(mandate, { agent: 'gt/unit', input: { units } }, ['gt']);
      assert.equal(response.status, 200);
      assert.equal(response.body.receipt.worst_case, '0.05');
      assert.equal(response.body.receipt.cost.own, own, `${units} units`);
      assert.equal(response.body.receipt.billed, billed, `${units} units`);
      assert.equal(moved[mandate.payer], 0 - micros(own), `${units} units`);
    }
  });

  test('quote: the quote rounded up to the micro-unit, capped at max; no quote is not billed', async () => {
    const mandate = await gw.mandate();
    for (const [quote, own] of [
      ['0.123', '0.123'],
      ['0.0000011', '0.000002'],
      ['0.75', '0.50'],
      [undefined, '0.00'],
    ] as const) {
      const { response, moved } = await measured(mandate, { agent: 'gt/quote', input: quote === undefined ? {} : { quote } });
      assert.equal(response.status, 200);
      assert.equal(response.body.receipt.cost.own, own, `quote ${quote}`);
      assert.equal(moved[mandate.payer], 0 - micros(own), `quote ${quote}`);
    }
  });

  test('fx: computed and capped in the agent currency, converted once at the mandate rate, rounded up', async () => {
    const mandate = await gw.mandate({ budget: { total: '10.00', currency: 'EUR', fx: { USD: '0.9' } } });
    // 7 × 0.000333 USD = 0.002331 USD × 0.9 = 0.0020979 EUR → 0.002098.
    const { response, moved } = await measured(mandate, { agent: 'gtusd/usd', input: { units: 7 } }, ['gtusd']);
    assert.equal(response.status, 200);
    assert.equal(response.body.receipt.currency, 'EUR');
    assert.equal(response.body.receipt.worst_case, '0.90');
    assert.deepEqual(response.body.receipt.cost, { own: '0.002098', downstream: '0.00', total: '0.002098' });
    // Fee 10% rounded down: 209; the author 1889.
    assert.deepEqual(moved, { [mandate.payer]: -2098, 'platform:fees': 209, gtusd: 1889 });

    const without = await gw.mandate();
    const refused = await gw.call({ mandate: without.id, agent: 'gtusd/usd', input: { units: 7 } });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'no_fx_rate');
  });

  test('split: 10% fee rounded down, then each royalty on its level revenue (gateway §7 example)', async () => {
    const mandate = await gw.mandate();
    const accounts = ['gtfork2', 'gtfork', 'gtbase'];
    let { response, moved } = await measured(mandate, { agent: 'gtfork/fork', input: {} }, accounts);
    assert.deepEqual(response.body.receipt.splits, [
      { to: 'holon', amount: '0.0035' },
      { to: 'gtfork', amount: '0.026775' },
      { to: 'gtbase', amount: '0.004725' },
    ]);
    assert.deepEqual(moved, { [mandate.payer]: -35_000, 'platform:fees': 3_500, gtfork2: 0, gtfork: 26_775, gtbase: 4_725 });

    // Two levels: 0.50 → fee 0.05; 0.45 → 10% (0.045) to gtfork, which pays 15% of it (0.00675) on.
    ({ response, moved } = await measured(mandate, { agent: 'gtfork2/refork', input: {} }, accounts));
    assert.deepEqual(response.body.receipt.splits, [
      { to: 'holon', amount: '0.05' },
      { to: 'gtfork2', amount: '0.405' },
      { to: 'gtfork', amount: '0.03825' },
      { to: 'gtbase', amount: '0.00675' },
    ]);
    assert.equal(splitsTotal(response.body.receipt), 500_000);
    assert.deepEqual(moved, { [mandate.payer]: -500_000, 'platform:fees': 50_000, gtfork2: 405_000, gtfork: 38_250, gtbase: 6_750 });
  });
});

describe('§2 caller cap: max_cost', () => {
  test('the budget check uses max_cost when it is lower than the listed worst case', async () => {
    const mandate = await gw.mandate({ budget: { total: '0.20', currency: 'EUR' } });
    const refused = await gw.call({ mandate: mandate.id, agent: 'gt/quote', input: { quote: '0.01' } });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'over_budget');
    assert.equal(refused.body.receipt.worst_case, '0.50');

    // A worst case exactly equal to what remains fits.
    const { response } = await measured(mandate, { agent: 'gt/quote', input: { quote: '0.01' }, max_cost: '0.20' });
    assert.equal(response.status, 200);
    assert.equal(response.body.receipt.worst_case, '0.20');
    const budget = await gw.http.get(`/v0/mandates/${mandate.id}`).expect(200);
    assert.deepEqual(budget.body.budget, { currency: 'EUR', total: '0.20', spent: '0.01', reserved: '0.00', remaining: '0.19' });
  });

  test('over budget: refused 403 with the figures, whether the call would be allowed or held for approval (issue 21 §1: an allowed one is checked where it is reserved)', async () => {
    const mandate = await gw.mandate({ budget: { total: '0.50', currency: 'EUR' }, approval: { above: '0.30' } });
    const { response: first } = await measured(mandate, { agent: 'gt/quote', input: { quote: '0.25' }, max_cost: '0.30' });
    assert.equal(first.status, 200);
    const refusal = (worst: string) => `worst case ${worst} EUR exceeds the remaining budget 0.25 EUR of mandate ${mandate.id}; its issuer can grant a larger budget (GET /v0/mandates/{id} shows what is spent and reserved)`;
    // Worst case 0.30, no approval needed: allowed at admission, refused by the reservation.
    const { response: allowed, moved } = await measured(mandate, { agent: 'gt/quote', input: { quote: '0.01' }, max_cost: '0.30' });
    assert.deepEqual([allowed.status, allowed.body.code, allowed.body.receipt.error.message, allowed.body.receipt.status], [403, 'over_budget', refusal('0.30'), 'denied']);
    assertNotBilled(allowed, moved);
    // Worst case 0.50, above the approval threshold: refused, not held.
    const held = await gw.call({ mandate: mandate.id, agent: 'gt/quote', input: { quote: '0.01' } });
    assert.deepEqual([held.status, held.body.code, held.body.receipt.error.message, held.body.receipt.approval], [403, 'over_budget', refusal('0.50'), null]);
    const budget = await gw.http.get(`/v0/mandates/${mandate.id}`).expect(200);
    assert.deepEqual(budget.body.budget, { currency: 'EUR', total: '0.50', spent: '0.25', reserved: '0.00', remaining: '0.25' });
  });

  test('the approval check uses max_cost: a 0.50 agent called for at most 0.10 needs no approval', async () => {
    const mandate = await gw.mandate({ approval: { above: '0.10' } });
    const held = await gw.call({ mandate: mandate.id, agent: 'gt/quote', input: { quote: '0.01' } });
    assert.equal(held.status, 202);
    const { response } = await measured(mandate, { agent: 'gt/quote', input: { quote: '0.01' }, max_cost: '0.10' });
    assert.equal(response.status, 200);
    assert.equal(response.body.receipt.approval, null);
  });

  test('the hold uses max_cost: the payer has exactly max_cost reserved while the agent runs', async () => {
    const mandate = await gw.mandate();
    const running = gw.call({ mandate: mandate.id, agent: 'gt/quote', input: { quote: '0.02', sleep_ms: 1500 }, max_cost: '0.20' }).then((r) => r);
    assert.equal(await waitFor(async () => (await gw.reserved(mandate.payer)) || null), 200_000);
    assert.equal((await running).status, 200);
  });

  test('the charge is capped at max_cost: the agent absorbs the overrun', async () => {
    const mandate = await gw.mandate();
    let { response, moved } = await measured(mandate, { agent: 'gt/unit', input: { units: 4 }, max_cost: '0.03' }, ['gt']);
    assert.equal(response.body.receipt.worst_case, '0.03');
    assert.deepEqual(response.body.receipt.cost, { own: '0.03', downstream: '0.00', total: '0.03' });
    assert.deepEqual(moved, { [mandate.payer]: -30_000, 'platform:fees': 3_000, gt: 27_000 });

    ({ response, moved } = await measured(mandate, { agent: 'gt/quote', input: { quote: '0.45' }, max_cost: '0.20' }, ['gt']));
    assert.equal(response.body.receipt.cost.own, '0.20');
    assert.deepEqual(moved, { [mandate.payer]: -200_000, 'platform:fees': 20_000, gt: 180_000 });
  });

  test('the agent receives the cap in its own currency (rounded down, never above its listed worst case)', async () => {
    const mandate = await gw.mandate({ budget: { total: '10.00', currency: 'EUR', fx: { USD: '0.9' } } });
    const cap = async (agent: string, max_cost?: string) => {
      const response = await gw.call({ mandate: mandate.id, agent, input: {}, ...(max_cost ? { max_cost } : {}) });
      assert.equal(response.status, 200);
      return response.body.output.max_cost;
    };
    assert.equal(await cap('gt/unit'), null);
    assert.deepEqual(await cap('gt/unit', '0.03'), { amount: '0.03', currency: 'EUR' });
    assert.deepEqual(await cap('gt/unit', '1.00'), { amount: '0.05', currency: 'EUR' });
    // 0.20 EUR at 0.9 = 0.2222… USD, rounded down.
    assert.deepEqual(await cap('gtusd/usd', '0.20'), { amount: '0.222222', currency: 'USD' });
  });

  test('an agent refusing a cap below its estimate up front (over_budget, declared, not billed)', async () => {
    const mandate = await gw.mandate();
    const { response, moved } = await measured(mandate, { agent: 'gt/unit', input: { do: 'refuse_over_cap', units: 5 }, max_cost: '0.03' }, ['gt']);
    assert.equal(response.status, 502);
    assert.equal(response.body.code, 'over_budget');
    assertNotBilled(response, moved);
  });

  test("an orchestrator's delegated calls get what the cap leaves after its own price", async () => {
    const mandate = await gw.mandate();
    // gto/pass: 0.10 own + 0.30 cap = 0.40 listed; max_cost 0.25 leaves 0.15 for downstream calls.
    const { response, moved } = await measured(
      mandate,
      { agent: 'gto/pass', input: { calls: [{ agent: 'gt/run' }, { agent: 'gt/run' }] }, max_cost: '0.25' },
      ['gto', 'gt'],
    );
    assert.equal(response.status, 200);
    const receipt = response.body.receipt;
    assert.equal(receipt.worst_case, '0.25');
    assert.deepEqual(response.body.output.max_cost, { amount: '0.25', currency: 'EUR' });
    const sub = await gw.derivedMandate(receipt.sub_mandate);
    assert.deepEqual(sub.budget, { currency: 'EUR', total: '0.15', spent: '0.10', reserved: '0.00', remaining: '0.05' });
    assert.deepEqual(
      response.body.output.children.map((child: { ok: boolean; code?: string }) => child.code ?? 'ok'),
      ['ok', 'over_budget'],
    );
    assert.deepEqual(receipt.cost, { own: '0.10', downstream: '0.10', total: '0.20' });
    assert.deepEqual(moved, { [mandate.payer]: -200_000, 'platform:fees': 20_000, gto: 90_000, gt: 90_000 });
  });

  test('an approval is bound to the max_cost it was requested with', async () => {
    const mandate = await gw.mandate({ approval: { above: '0.10' } });
    const held = await gw.call({ mandate: mandate.id, agent: 'gt/quote', input: { quote: '0.45' }, max_cost: '0.30' });
    assert.equal(held.status, 202);
    assert.equal(held.body.approval.max_cost, '0.30');
    assert.equal(held.body.approval.worst_case, '0.30');
    const before = await gw.balances([mandate.payer]);
    const ran = await gw.http.post(`/v0/approvals/${held.body.approval.id}`).send({}).expect(200);
    assert.equal(ran.body.receipt.id, held.body.receipt.id);
    assert.equal(ran.body.receipt.worst_case, '0.30');
    assert.deepEqual(ran.body.output.max_cost, { amount: '0.30', currency: 'EUR' });
    assert.equal(ran.body.receipt.cost.own, '0.30');
    const after = await gw.balances([mandate.payer]);
    assert.equal(after[mandate.payer] - before[mandate.payer], -300_000);
  });

  test('a per_run price is fixed: a max_cost below it is denied, never buys the run for less', async () => {
    const mandate = await gw.mandate();
    const { response, moved } = await measured(mandate, { agent: 'gt/run', input: {}, max_cost: '0.09' }, ['gt']);
    assert.equal(response.status, 403);
    assert.equal(response.body.code, 'below_fixed_price');
    assertNotBilled(response, moved);
    const exact = await gw.call({ mandate: mandate.id, agent: 'gt/run', input: {}, max_cost: '0.10' });
    assert.equal(exact.status, 200);
    assert.equal(exact.body.receipt.cost.own, '0.10');
  });
});
