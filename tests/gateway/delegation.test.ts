/**
 * Gateway §3 through `POST /v0/calls`: the derived sub-mandate, the declared `calls` a
 * downstream call must match and fit, capability resolution (ranking, ties, slots), who pays
 * (passthrough and included), approvals and depth inside delegation, and a run that waits for its
 * downstream calls. The orchestrators (`gto/*`, `gtinc/incl`) call what their input plans.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deltas, useTestGateway, waitFor } from '../helpers/gateway.ts';

const gw = useTestGateway();

/** What each downstream call of a behave agent answered: `ok` or its error code. */
const outcomes = (output: { children: Array<{ ok: boolean; code?: string }> }) => output.children.map((child) => child.code ?? 'ok');

test('the sub-mandate: issuer → grantee, allow = declared calls, budget = cap, inherited fields, depth − 1', async () => {
  const expires_at = new Date(Date.now() + 86_400_000).toISOString();
  const mandate = await gw.mandate({
    deny: { agents: ['acme/*'], capabilities: ['gt.never'] },
    require: { open_source: true },
    data: { remote: false },
    approval: { above: '5.00' },
    budget: { total: '10.00', currency: 'EUR', fx: { USD: '0.9' } },
    delegation: { max_depth: 3 },
    expires_at,
  });
  const response = await gw.call({ mandate: mandate.id, agent: 'gto/pass', input: { calls: [{ agent: 'gt/free' }] } });
  assert.equal(response.status, 200);
  const receipt = response.body.receipt;
  assert.equal(receipt.sub_mandate, `${mandate.id}.${receipt.id}`);
  const sub = await gw.derivedMandate(receipt.sub_mandate);
  assert.deepEqual(sub.mandate, {
    id: `${mandate.id}.${receipt.id}`,
    issuer: `${mandate.payer}/tester`,
    grantee: 'gto/pass@1.0.0',
    allow: { agents: ['gt/run', 'gt/unit', 'gt/free', 'gto/sub'], capabilities: ['gt.slot', 'gt.tie'], published: false },
    deny: { agents: ['acme/*'], capabilities: ['gt.never'] },
    require: { open_source: true },
    data: { remote: false },
    approval: { above: '5.00' },
    expires_at,
    budget: { total: '0.30', currency: 'EUR', fx: { USD: '0.9' } },
    delegation: { max_depth: 2 },
  });
  assert.deepEqual(sub.budget, { currency: 'EUR', total: '0.30', spent: '0.00', reserved: '0.00', remaining: '0.30' });
  assert.equal(receipt.calls[0].mandate, receipt.sub_mandate);
  assert.equal(receipt.calls[0].caller, 'gto/pass@1.0.0');
});

test('a downstream call outside the declared calls is refused', async () => {
  const mandate = await gw.mandate();
  const response = await gw.call({
    mandate: mandate.id,
    agent: 'gto/pass',
    // gt/quote: nothing declares it. gt/tie-a by name: only its capability gt.tie is declared.
    input: { calls: [{ agent: 'gt/quote', input: { quote: '0.01' } }, { agent: 'gt/tie-a' }] },
  });
  assert.equal(response.status, 200);
  assert.deepEqual(outcomes(response.body.output), ['not_allowed', 'outside_declared_calls']);
  const [quote, tie] = response.body.receipt.calls;
  assert.equal(quote.status, 'denied');
  assert.equal(tie.status, 'denied');
  assert.match(tie.error.message, /declares no call to gt\/tie-a@1\.0\.0/);
  assert.deepEqual(response.body.receipt.cost, { own: '0.10', downstream: '0.00', total: '0.10' });
});

test("a downstream call whose worst case exceeds its entry's max_cost is refused; within it, allowed", async () => {
  const mandate = await gw.mandate();
  // gt/unit is declared with max_cost 0.03; its listed worst case is 0.05.
  const response = await gw.call({
    mandate: mandate.id,
    agent: 'gto/pass',
    input: { calls: [{ agent: 'gt/unit', input: { units: 2 } }, { agent: 'gt/unit', input: { units: 2 }, max_cost: '0.03' }] },
  });
  assert.deepEqual(outcomes(response.body.output), ['outside_declared_calls', 'ok']);
  const [refused, allowed] = response.body.receipt.calls;
  assert.match(refused.error.message, /worst case 0\.05 of gt\/unit@1\.0\.0 exceeds the declared max_cost 0\.03/);
  assert.equal(allowed.worst_case, '0.03');
  assert.equal(allowed.cost.own, '0.02');
});

/** The ranking score of an agent: its worst case × (runs + 1) / (successes + 1) (gateway §1 "Resolve"). */
async function score(id: string, worst_micros: number): Promise<number> {
  const { runs, successes } = (await gw.http.get(`/v0/agents/${id}`).expect(200)).body.measured;
  return (worst_micros * (runs + 1)) / (successes + 1);
}

test('capability resolution ranks by cost per successful run and skips candidates that do not fit the slot', async () => {
  const mandate = await gw.mandate();
  // Make gt/slot-narrow (0.04) fail until gt/slot-wide (0.06) ranks first.
  for (let i = 0; i < 10 && (await score('gt/slot-narrow', 40_000)) <= (await score('gt/slot-wide', 60_000)); i++) {
    assert.equal((await gw.call({ mandate: mandate.id, agent: 'gt/slot-narrow', input: { do: 'crash' } })).status, 502);
  }
  const top = await gw.call({ mandate: mandate.id, capability: 'gt.slot', input: {} });
  assert.equal(top.body.receipt.agent, 'gt/slot-wide@1.0.0');
  assert.equal(top.body.receipt.capability, 'gt.slot');

  // Under gto/pass, the gt.slot entry allows 0.05: gt/slot-wide is skipped, gt/slot-narrow taken.
  const delegated = await gw.call({ mandate: mandate.id, agent: 'gto/pass', input: { calls: [{ capability: 'gt.slot' }] } });
  assert.equal(delegated.body.receipt.calls[0].agent, 'gt/slot-narrow@1.0.0');
  assert.equal(delegated.body.receipt.calls[0].status, 'succeeded');
});

test('capability ties go to the lower id', async () => {
  const mandate = await gw.mandate();
  assert.equal(await score('gt/tie-a', 10_000), await score('gt/tie-b', 10_000));
  const response = await gw.call({ mandate: mandate.id, capability: 'gt.tie', input: {} });
  assert.equal(response.body.receipt.agent, 'gt/tie-a@1.0.0');
});

test('passthrough: the original payer pays downstream calls, out of the orchestrator hold (no hold of their own)', async () => {
  const mandate = await gw.mandate();
  const before = await gw.balances([mandate.payer, 'gto', 'gt', 'platform:fees']);
  const running = gw.call({ mandate: mandate.id, agent: 'gto/pass', input: { calls: [{ agent: 'gt/run', input: { sleep_ms: 1500 } }] } }).then((r) => r);
  // While the child runs: the payer holds the orchestrator's worst case, its cap included, and nothing more.
  const runningChild = await waitFor<{ id: string; hold_id: string | null }>(() =>
    gw.running.db.knex('gateway_receipts').where({ root_mandate: mandate.id, status: 'running' }).whereNotNull('parent').first('id', 'hold_id'),
  );
  assert.equal(runningChild.hold_id, null, 'the child opened no hold of its own');
  assert.equal(await gw.reserved(mandate.payer), 400_000);
  const response = await running;
  assert.equal(response.status, 200);
  const child = response.body.receipt.calls[0];
  assert.equal(child.payer, mandate.payer);
  assert.deepEqual(response.body.receipt.cost, { own: '0.10', downstream: '0.10', total: '0.20' });
  const after = await gw.balances([mandate.payer, 'gto', 'gt', 'platform:fees']);
  assert.deepEqual(deltas(before, after), { [mandate.payer]: -200_000, gto: 90_000, gt: 90_000, 'platform:fees': 20_000 });
});

test("included: the orchestrator's own account pays its downstream calls; its receipt shows downstream 0", async () => {
  const mandate = await gw.mandate();
  await gw.fund('gtinc', 1_000_000);
  const before = await gw.balances([mandate.payer, 'gtinc', 'gt', 'platform:fees']);
  const response = await gw.call({ mandate: mandate.id, agent: 'gtinc/incl', input: { calls: [{ agent: 'gt/run' }] } });
  assert.equal(response.status, 200);
  const receipt = response.body.receipt;
  assert.equal(receipt.payer, mandate.payer);
  assert.deepEqual(receipt.cost, { own: '0.30', downstream: '0.00', total: '0.30' });
  assert.equal(receipt.calls[0].payer, 'gtinc');
  assert.deepEqual(receipt.calls[0].cost, { own: '0.10', downstream: '0.00', total: '0.10' });
  const sub = await gw.derivedMandate(receipt.sub_mandate);
  assert.deepEqual(sub.budget, { currency: 'EUR', total: '0.30', spent: '0.10', reserved: '0.00', remaining: '0.20' });
  const after = await gw.balances([mandate.payer, 'gtinc', 'gt', 'platform:fees']);
  // gtinc earns 0.27 and pays 0.10; the platform takes 0.03 + 0.01.
  assert.deepEqual(deltas(before, after), { [mandate.payer]: -300_000, gtinc: 170_000, gt: 90_000, 'platform:fees': 40_000 });
  assert.equal(await gw.reserved('gtinc'), 0);
});

test('inside a delegated run nobody can approve: a call that needs approval is denied', async () => {
  const mandate = await gw.mandate({ approval: { agents: ['gt/run'] } });
  const response = await gw.call({ mandate: mandate.id, agent: 'gto/pass', input: { calls: [{ agent: 'gt/run' }] } });
  assert.equal(response.status, 200);
  assert.deepEqual(outcomes(response.body.output), ['approval_listed']);
  assert.equal(response.body.receipt.calls[0].status, 'denied');
  assert.match(response.body.receipt.calls[0].error.message, /nobody can approve inside a delegated run/);
  const pending = (await gw.http.get('/v0/approvals').expect(200)).body.approvals;
  assert.equal(pending.filter((a: { mandate: string }) => a.mandate.startsWith(mandate.id)).length, 0);
});

test('delegation.max_depth 0 denies an agent that delegates; one level deeper, the sub-mandate is at 0', async () => {
  const flat = await gw.mandate({ delegation: { max_depth: 0 } });
  const denied = await gw.call({ mandate: flat.id, agent: 'gto/pass', input: {} });
  assert.equal(denied.status, 403);
  assert.equal(denied.body.code, 'delegation_depth');
  assert.equal((await gw.call({ mandate: flat.id, agent: 'gt/free', input: {} })).status, 200);

  const one = await gw.mandate({ delegation: { max_depth: 1 } });
  const response = await gw.call({ mandate: one.id, agent: 'gto/pass', input: { calls: [{ agent: 'gto/sub' }, { agent: 'gt/free' }] } });
  assert.equal(response.status, 200);
  assert.deepEqual(outcomes(response.body.output), ['delegation_depth', 'ok']);
});

test("a run is not settled until its downstream calls have: a child outliving the parent's timeout is awaited", async () => {
  const mandate = await gw.mandate();
  const before = await gw.balances([mandate.payer]);
  // gto/impatient times out after 1 s; gt/sleeper answers after 1.8 s.
  const response = await gw.call({ mandate: mandate.id, agent: 'gto/impatient', input: { calls: [{ agent: 'gt/sleeper', input: { sleep_ms: 1800 } }] } });
  assert.equal(response.status, 502);
  const parent = response.body.receipt;
  assert.equal(parent.error.code, 'timeout');
  assert.equal(parent.billed, false);
  const [child] = parent.calls;
  assert.equal(child.status, 'succeeded');
  assert.equal(child.billed, true);
  assert.ok(parent.duration_ms >= 1800, `the parent waited for its child (${parent.duration_ms} ms)`);
  const end = (r: { created_at: string; duration_ms: number }) => Date.parse(r.created_at) + r.duration_ms;
  assert.ok(end(child) <= end(parent), 'the child finished before the parent was settled');
  // The finished child stays paid, and is the parent's downstream cost.
  assert.deepEqual(parent.cost, { own: '0.00', downstream: '0.10', total: '0.10' });
  const after = await gw.balances([mandate.payer]);
  assert.equal(after[mandate.payer] - before[mandate.payer], -100_000);
  const budget = await gw.http.get(`/v0/mandates/${mandate.id}`).expect(200);
  assert.equal(budget.body.budget.spent, '0.10');
});
