/**
 * The `/v0` API of gateway §5: every status of `POST /v0/calls`, the approvals (list, approve and
 * run, reject, a second decision, expiry after 7 days), receipts (§4: one for every request, the
 * same shape, never an input or an output, a tree), mandates and accounts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createHash } from 'node:crypto';
import { APPROVAL_TTL_MS, inputHash } from '../../src/gateway/approvals.ts';
import { up as rehashHeldInputs } from '../../migrations/016_approval_input_hash.ts';
import { storeMandate } from '../../src/gateway/mandates.ts';
import { flatten, uniqueHandle, useTestGateway } from '../helpers/gateway.ts';

const gw = useTestGateway();

/** The fields of a §4 receipt, as `openapi/gateway.yaml` lists them (trees add `calls`). */
const RECEIPT_FIELDS = [
  'id',
  'parent',
  'mandate',
  'caller',
  'agent',
  'capability',
  'status',
  'approval',
  'worst_case',
  'currency',
  'payer',
  'sub_mandate',
  'billed',
  'cost',
  'splits',
  'children',
  'duration_ms',
  'error',
  'created_at',
].sort();

/** `tree` without its signatures (`jws`, `sub_mandate_jws`, made as it is answered), at every level. */
function unsigned(tree: Record<string, any>): Record<string, any> {
  const { jws: _jws, sub_mandate_jws: _sub, ...rest } = tree;
  return { ...rest, ...(Array.isArray(rest.calls) ? { calls: rest.calls.map(unsigned) } : {}) };
}

/** Asserts `receipt` has exactly the §4 fields (and `calls`), with their types. */
function assertReceiptShape(receipt: Record<string, any>, label: string) {
  // Every answer signs the tree beside its fields (issue 23 §2): `jws`, and `sub_mandate_jws` with a sub-mandate.
  assert.deepEqual(Object.keys(receipt).filter((key) => !['calls', 'jws', 'sub_mandate_jws'].includes(key)).sort(), RECEIPT_FIELDS, label);
  assert.match(receipt.id, /^r\d+$/, label);
  assert.equal(typeof receipt.mandate, 'string', label);
  assert.equal(typeof receipt.caller, 'string', label);
  assert.equal(typeof receipt.billed, 'boolean', label);
  assert.equal(receipt.currency, 'EUR', label);
  assert.deepEqual(Object.keys(receipt.cost).sort(), ['downstream', 'own', 'total'], label);
  assert.ok(Array.isArray(receipt.splits) && Array.isArray(receipt.children), label);
  assert.ok(Number.isInteger(receipt.duration_ms) && receipt.duration_ms >= 0, label);
  assert.ok(!Number.isNaN(Date.parse(receipt.created_at)), label);
  assert.ok(receipt.error === null || (typeof receipt.error.code === 'string' && typeof receipt.error.message === 'string'), label);
}

describe('POST /v0/calls: every status', () => {
  test('200 succeeded, with the output and the receipt', async () => {
    const mandate = await gw.mandate();
    const response = await gw.call({ mandate: mandate.id, agent: 'gt/free', input: { marker: 'hello' } });
    assert.equal(response.status, 200);
    assert.equal(response.body.output.said, 'HELLO');
    assert.equal(response.body.receipt.status, 'succeeded');
    assertReceiptShape(response.body.receipt, '200');
  });

  test('202 pending approval, with the approval and the receipt', async () => {
    const mandate = await gw.mandate({ approval: { above: '0.05' } });
    const response = await gw.call({ mandate: mandate.id, agent: 'gt/run', input: {} });
    assert.equal(response.status, 202);
    assert.equal(response.body.approval.status, 'pending');
    assert.equal(response.body.receipt.status, 'pending_approval');
    assert.equal(response.body.receipt.approval, response.body.approval.id);
    assertReceiptShape(response.body.receipt, '202');
  });

  test('403 denied, with the code of the rule and a receipt', async () => {
    const mandate = await gw.mandate({ allow: { agents: ['gt/free'] } });
    const response = await gw.call({ mandate: mandate.id, agent: 'gt/run', input: {} });
    assert.equal(response.status, 403);
    assert.equal(response.body.code, 'not_allowed');
    assert.equal(response.body.receipt.status, 'denied');
    assert.equal(response.body.receipt.error.code, 'not_allowed');
    assertReceiptShape(response.body.receipt, '403');
  });

  test('404: an unknown agent, a range nothing matches, a capability nobody implements (with receipts); an unknown mandate', async () => {
    const mandate = await gw.mandate();
    for (const body of [{ agent: 'gt/nobody' }, { agent: 'gt/run@^2' }, { capability: 'gt.nothing' }]) {
      const response = await gw.call({ mandate: mandate.id, input: {}, ...body });
      assert.equal(response.status, 404, JSON.stringify(body));
      assert.equal(response.body.code, 'no_such_agent');
      assert.equal(response.body.receipt.status, 'denied');
      assert.equal(response.body.receipt.agent, null);
      assertReceiptShape(response.body.receipt, JSON.stringify(body));
    }
    const response = await gw.call({ mandate: `${mandate.payer}/nothing-here`, agent: 'gt/run', input: {} });
    assert.equal(response.status, 404);
    assert.equal(response.body.code, 'no_such_mandate');
    assert.equal(response.body.receipt, undefined);
  });

  test('422 invalid_request without a mandate: the dev gateway has no key to take one from; no receipt', async () => {
    const response = await gw.call({ agent: 'gt/free', input: { marker: 'nowhere' } });
    assert.deepEqual([response.status, response.body.code], [422, 'invalid_request']);
    assert.equal(response.body.error, 'invalid request: body.mandate is required: name the mandate the call runs under (only an agent key may leave it out, its calls run under its mandate)');
    assert.equal(response.body.receipt, undefined);
  });

  test('422 rejected input, checked before admission: an input both invalid and unadmitted answers 422', async () => {
    const mandate = await gw.mandate({ deny: { agents: ['gt/run'] } });
    const response = await gw.call({ mandate: mandate.id, agent: 'gt/run', input: { unexpected: true } });
    assert.equal(response.status, 422);
    assert.equal(response.body.code, 'rejected_input');
    assert.equal(response.body.receipt.status, 'rejected_input');
    assert.equal(response.body.receipt.worst_case, null, 'nothing was priced or reserved');
    assertReceiptShape(response.body.receipt, '422');

    const both = await gw.call({ mandate: mandate.id, agent: 'gt/free', capability: 'gt.free', input: {} });
    assert.equal(both.status, 422);
    assert.equal(both.body.code, 'invalid_request');
    assert.equal(both.body.receipt.status, 'rejected_input');

    const badCap = await gw.call({ mandate: mandate.id, agent: 'gt/free', input: {}, max_cost: 'abc' });
    assert.equal(badCap.status, 422);
    assert.equal(badCap.body.code, 'invalid_request');
    assert.match(badCap.body.error, /max_cost/);
    assert.equal(badCap.body.receipt.status, 'rejected_input', 'a malformed max_cost still gets its receipt (§4)');
    assertReceiptShape(badCap.body.receipt, '422 max_cost');
  });

  test('502 the agent failed', async () => {
    const mandate = await gw.mandate();
    const response = await gw.call({ mandate: mandate.id, agent: 'gt/run', input: { do: 'crash' } });
    assert.equal(response.status, 502);
    assert.equal(response.body.code, 'agent_error');
    assert.equal(response.body.receipt.status, 'failed');
    assertReceiptShape(response.body.receipt, '502');
  });
});

describe('approvals', () => {
  /** The stored row of an approval. */
  const row = (id: string) => gw.running.db.knex('gateway_approvals').where({ id }).first();

  test('GET /v0/approvals lists pending approvals, bound to the agent version, the input hash and the cap; never the input', async () => {
    const mandate = await gw.mandate({ approval: { above: '0.05' } });
    const held = await gw.call({ mandate: mandate.id, agent: 'gt/quote', input: { quote: '0.02', marker: 'held-input-9c1' }, max_cost: '0.40' });
    assert.equal(held.status, 202);
    const listed = (await gw.http.get('/v0/approvals').expect(200)).body.approvals;
    const approval = listed.find((a: { id: string }) => a.id === held.body.approval.id);
    assert.deepEqual(Object.keys(approval).sort(), ['agent', 'created_at', 'currency', 'expires_at', 'id', 'input_sha256', 'mandate', 'max_cost', 'reason', 'receipt', 'status', 'worst_case']);
    assert.equal(approval.status, 'pending');
    assert.equal(approval.mandate, mandate.id);
    assert.equal(approval.agent, 'gt/quote@1.0.0');
    assert.equal(approval.max_cost, '0.40');
    assert.equal(approval.worst_case, '0.40');
    assert.equal(approval.receipt, held.body.receipt.id);
    assert.match(approval.input_sha256, /^[0-9a-f]{64}$/);
    assert.match(approval.reason, /above the approval threshold 0\.05/);
    assert.ok(Math.abs(Date.parse(approval.expires_at) - Date.parse(approval.created_at) - APPROVAL_TTL_MS) < 60_000, 'expires after 7 days');
    assert.ok(!JSON.stringify(listed).includes('held-input-9c1'));
    assert.deepEqual((await row(approval.id)).input, { quote: '0.02', marker: 'held-input-9c1' });
  });

  test('approve and run (200): the held receipt is reused, the input deleted; a second decision is 409', async () => {
    const mandate = await gw.mandate({ approval: { above: '0.05' } });
    const held = await gw.call({ mandate: mandate.id, agent: 'gt/run', input: { marker: 'approve-me' } });
    const id = held.body.approval.id;
    const ran = await gw.http.post(`/v0/approvals/${id}`).send({}).expect(200);
    assert.equal(ran.body.output.said, 'APPROVE-ME');
    assert.equal(ran.body.receipt.id, held.body.receipt.id);
    assert.equal(ran.body.receipt.status, 'succeeded');
    assert.equal(ran.body.receipt.approval, id);
    assert.equal(ran.body.receipt.billed, true);
    const stored = await row(id);
    assert.equal(stored.status, 'approved');
    assert.equal(stored.input, null);
    assert.equal((await gw.receipt(held.body.receipt.id)).status, 'succeeded');

    for (const decision of [{}, { decision: 'reject' }]) {
      const again = await gw.http.post(`/v0/approvals/${id}`).send(decision).expect(409);
      assert.equal(again.body.code, 'approval_decided');
    }
    await gw.http.post('/v0/approvals/a999999999').send({}).expect(404);
  });

  test('approve and run an input whose keys the database reorders: the approval binds the input, not its text', async () => {
    const mandate = await gw.mandate({ approval: { above: '0.05' } });
    // jsonb keeps shorter keys first: the held input comes back as { marker, sleep_ms }.
    const held = await gw.call({ mandate: mandate.id, agent: 'gt/run', input: { sleep_ms: 0, marker: 'reordered' } });
    assert.equal(held.status, 202);
    const ran = await gw.http.post(`/v0/approvals/${held.body.approval.id}`).send({}).expect(200);
    assert.deepEqual([ran.body.output.said, ran.body.receipt.id, ran.body.receipt.status], ['REORDERED', held.body.receipt.id, 'succeeded']);
    assert.deepEqual((await gw.http.get('/v0/approvals').expect(200)).body.approvals.filter((a: { mandate: string }) => a.mandate === mandate.id), []);
  });

  test('migration 016 hashes every input still held again, canonically: an approval hashed from the text as sent then runs', async () => {
    const mandate = await gw.mandate({ approval: { above: '0.05' } });
    const held = await gw.call({ mandate: mandate.id, agent: 'gt/run', input: { sleep_ms: 0, marker: 'legacy' } });
    const id = held.body.approval.id;
    const knex = gw.running.db.knex;
    await knex('gateway_approvals').where({ id }).update({ input_sha256: createHash('sha256').update('{"sleep_ms":0,"marker":"legacy"}').digest('hex') });
    await rehashHeldInputs(knex);
    assert.equal((await row(id)).input_sha256, inputHash({ marker: 'legacy', sleep_ms: 0 }));
    assert.equal((await gw.http.post(`/v0/approvals/${id}`).send({}).expect(200)).body.output.said, 'LEGACY');
  });

  test('reject: nothing runs, the input is deleted, the receipt ends rejected; a second decision is 409', async () => {
    const mandate = await gw.mandate({ approval: { above: '0.05' } });
    const before = await gw.balances([mandate.payer]);
    const held = await gw.call({ mandate: mandate.id, agent: 'gt/run', input: { marker: 'reject-me' } });
    const id = held.body.approval.id;
    const rejected = await gw.http.post(`/v0/approvals/${id}`).send({ decision: 'reject' }).expect(200);
    assert.equal(rejected.body.approval.status, 'rejected');
    const stored = await row(id);
    assert.equal(stored.status, 'rejected');
    assert.equal(stored.input, null);
    const receipt = await gw.receipt(held.body.receipt.id);
    assert.equal(receipt.status, 'rejected');
    assert.equal(receipt.error?.code, 'approval_rejected');
    assert.equal(receipt.billed, false);
    assert.deepEqual(await gw.balances([mandate.payer]), before);
    const again = await gw.http.post(`/v0/approvals/${id}`).send({}).expect(409);
    assert.equal(again.body.code, 'approval_decided');
  });

  test('a pending approval expires after 7 days: unlisted, its input forgotten, its receipt rejected, no decision', async () => {
    const mandate = await gw.mandate({ approval: { above: '0.05' } });
    const held = await gw.call({ mandate: mandate.id, agent: 'gt/run', input: { marker: 'too-late' } });
    const id = held.body.approval.id;
    // Seven days pass.
    await gw.running.db.knex('gateway_approvals').where({ id }).update({ expires_at: new Date(Date.now() - 1000) });
    const listed = (await gw.http.get('/v0/approvals').expect(200)).body.approvals;
    assert.equal(listed.some((a: { id: string }) => a.id === id), false);
    const stored = await row(id);
    assert.equal(stored.status, 'expired');
    assert.equal(stored.input, null);
    const receipt = await gw.receipt(held.body.receipt.id);
    assert.equal(receipt.status, 'rejected');
    assert.equal(receipt.error?.code, 'approval_expired');
    const late = await gw.http.post(`/v0/approvals/${id}`).send({}).expect(409);
    assert.equal(late.body.code, 'approval_decided');
  });
});

describe('receipts', () => {
  test('never an input or an output: not in answers, lists, trees, approvals or stored rows', async () => {
    const mandate = await gw.mandate({ approval: { agents: ['gt/quote'] } });
    const secrets = ['secret-in-root', 'secret-in-child', 'secret-held'];
    const call = await gw.call({
      mandate: mandate.id,
      agent: 'gto/pass',
      input: { marker: 'secret-in-root', calls: [{ agent: 'gt/free', input: { marker: 'secret-in-child' } }] },
    });
    assert.equal(call.status, 200);
    assert.equal(call.body.output.said, 'SECRET-IN-ROOT', 'the output does carry it');
    const held = await gw.call({ mandate: mandate.id, agent: 'gt/quote', input: { marker: 'secret-held' } });
    assert.equal(held.status, 202);
    const texts = [
      JSON.stringify(call.body.receipt),
      JSON.stringify(held.body),
      JSON.stringify((await gw.http.get(`/v0/receipts/${call.body.receipt.id}`).expect(200)).body),
      JSON.stringify((await gw.http.get(`/v0/receipts?mandate=${mandate.id}`).expect(200)).body),
      JSON.stringify(await gw.running.db.knex('gateway_receipts').where({ root_mandate: mandate.id }).select('document')),
    ];
    for (const text of texts) {
      for (const secret of secrets) {
        assert.ok(!text.includes(secret) && !text.includes(secret.toUpperCase()), `${secret} in ${text.slice(0, 80)}…`);
      }
    }
  });

  test('a tree through parent and children; GET /v0/receipts lists root trees of a mandate, newest first', async () => {
    const mandate = await gw.mandate();
    const first = await gw.call({ mandate: mandate.id, agent: 'gt/free', input: {} });
    const second = await gw.call({
      mandate: mandate.id,
      agent: 'gto/pass',
      input: { calls: [{ agent: 'gto/sub', input: { calls: [{ agent: 'gt/free' }] } }, { agent: 'gt/run' }] },
    });
    assert.equal(second.status, 200);
    const tree = (await gw.http.get(`/v0/receipts/${second.body.receipt.id}`).expect(200)).body;
    assert.deepEqual(
      flatten(tree).map((r) => [r.agent, r.parent]),
      [
        ['gto/pass@1.0.0', null],
        ['gto/sub@1.0.0', tree.id],
        ['gt/free@1.0.0', tree.calls[0].id],
        ['gt/run@1.0.0', tree.id],
      ],
    );
    for (const receipt of flatten(tree)) {
      assertReceiptShape(receipt, receipt.id);
      assert.deepEqual(receipt.children, receipt.calls.map((child) => child.id));
    }
    // The sub-orchestrator's downstream is its child's; the root's, both children's totals.
    assert.deepEqual(tree.calls[0].cost, { own: '0.02', downstream: '0.00', total: '0.02' });
    assert.deepEqual(tree.cost, { own: '0.10', downstream: '0.12', total: '0.22' });

    const child = (await gw.http.get(`/v0/receipts/${tree.calls[1].id}`).expect(200)).body;
    assert.equal(child.parent, tree.id);
    assert.deepEqual(child.calls, []);

    const listed = (await gw.http.get(`/v0/receipts?mandate=${mandate.id}`).expect(200)).body.receipts;
    assert.deepEqual(listed.map((r: { id: string }) => r.id), [second.body.receipt.id, first.body.receipt.id]);
    // The list carries the same tree, signed as it is listed (issue 23 §2: every receipt answered is signed).
    assert.deepEqual(unsigned(listed[0]), unsigned(tree));
    assert.deepEqual(flatten(listed[0]).map((receipt) => typeof (receipt as { jws?: unknown }).jws), ['string', 'string', 'string', 'string']);
    await gw.http.get('/v0/receipts/r999999999').expect(404);
  });
});

test('GET /v0/mandates/{issuer}/{name}: the mandate and its spent, reserved and remaining budget; 404 otherwise', async () => {
  const mandate = await gw.mandate({ budget: { total: '1.00', currency: 'EUR' } });
  await gw.call({ mandate: mandate.id, agent: 'gt/unit', input: { units: 3 } }).expect(200);
  const read = await gw.http.get(`/v0/mandates/${mandate.id}`).expect(200);
  assert.equal(read.body.mandate.id, mandate.id);
  assert.deepEqual(read.body.budget, { currency: 'EUR', total: '1.00', spent: '0.03', reserved: '0.00', remaining: '0.97' });
  await gw.http.get(`/v0/mandates/${mandate.payer}/nothing`).expect(404);
});

test('GET /v0/accounts: balances of payers, authors and the platform', async () => {
  const mandate = await gw.mandate({}, 2_000_000);
  await gw.call({ mandate: mandate.id, agent: 'gt/run', input: {} }).expect(200);
  await gw.settle();
  const { currency, accounts } = (await gw.http.get('/v0/accounts').expect(200)).body;
  assert.equal(currency, 'EUR');
  const payer = accounts.find((a: { account: string }) => a.account === mandate.payer);
  assert.deepEqual(payer, { account: mandate.payer, balance: '1.90', available: '1.90', reserved: '0.00' });
  assert.ok(accounts.some((a: { account: string }) => a.account === 'gt'));
  assert.ok(accounts.some((a: { account: string }) => a.account === 'holon'));
});

test('GET /v0/agents: ranked search; with a mandate, costs in its currency and denied agents listed with a reason', async () => {
  const mandate = await gw.mandate({ deny: { agents: ['gt/tie-b'] }, budget: { total: '10.00', currency: 'EUR', fx: { USD: '0.9' } } });
  const ties = (await gw.http.get(`/v0/agents?capability=gt.tie&mandate=${mandate.id}`).expect(200)).body.agents;
  assert.deepEqual(
    ties.map((a: Record<string, unknown>) => [a.id, a.worst_case, a.currency, a.allowed]),
    [
      ['gt/tie-a', '0.01', 'EUR', 'allow'],
      ['gt/tie-b', '0.01', 'EUR', 'deny'],
    ],
  );
  assert.match(ties[1].reason, /deny\.agents "gt\/tie-b"/);
  assert.equal(ties[0].reason, null);

  const converted = (await gw.http.get(`/v0/agents?capability=gt.usd&mandate=${mandate.id}`).expect(200)).body.agents;
  assert.deepEqual([converted[0].worst_case, converted[0].currency], ['0.90', 'EUR']);
  const listed = (await gw.http.get('/v0/agents?capability=gt.usd').expect(200)).body.agents;
  assert.deepEqual([listed[0].worst_case, listed[0].currency, listed[0].allowed], ['1.00', 'USD', null]);

  const words = (await gw.http.get('/v0/agents?q=gtfork%2015%25').expect(200)).body.agents;
  assert.deepEqual(words.map((a: { id: string }) => a.id), ['gtfork/fork']);
  await gw.http.get(`/v0/agents?mandate=${mandate.payer}/nothing`).expect(404);
});

test('GET /v0/agents/{ns}/{name}: the manifest, the listed versions and the measured record', async () => {
  const mandate = await gw.mandate();
  const before = (await gw.http.get('/v0/agents/gt/attempt').expect(200)).body.measured;
  await gw.call({ mandate: mandate.id, agent: 'gt/attempt', input: {} }).expect(200);
  await gw.call({ mandate: mandate.id, agent: 'gt/attempt', input: { do: 'crash' } }).expect(502);
  const read = (await gw.http.get('/v0/agents/gt/attempt').expect(200)).body;
  assert.equal(read.manifest.id, 'gt/attempt');
  assert.deepEqual(read.versions, ['1.0.0']);
  assert.equal(read.measured.runs, before.runs + 2);
  assert.equal(read.measured.successes, before.successes + 1);
  await gw.http.get('/v0/agents/gt/nobody').expect(404);
});

test('GET /v0/accounts leaves out a payer the binding has no account for (no 500); a call it would pay for is denied', async () => {
  const issuer = uniqueHandle();
  await storeMandate(
    gw.running.db.knex,
    { id: `${issuer}/tests`, issuer, grantee: `${issuer}/tester`, allow: { agents: ['*'] }, budget: { total: '1.00', currency: 'EUR' } },
    { parent: null, payer: issuer },
  );
  const { accounts } = (await gw.http.get('/v0/accounts').expect(200)).body;
  assert.equal(accounts.some((a: { account: string }) => a.account === issuer), false);
  const response = await gw.call({ mandate: `${issuer}/tests`, agent: 'gt/run', input: {} });
  assert.equal(response.status, 403);
  assert.equal(response.body.code, 'hold_refused');
  assert.equal(response.body.receipt.billed, false);
});
