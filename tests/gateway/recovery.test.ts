/**
 * What survives a failure: a gateway restarted on the data of one that stopped mid-call (gateway
 * §7 "Restarts"), and settlement through the outbox when the binding cannot be reached or
 * refuses (clearing-contract §13: written with the receipt, retried, abandoned on a refusal and
 * listed by `GET /v0/settlements?status=abandoned`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { deltas, startTestGateway, useSwitchableGateway, waitFor, type TestGateway } from '../helpers/gateway.ts';

const NOTHING = { own: '0.00', downstream: '0.00', total: '0.00' };

/** Sends a call that will not answer before the gateway stops; resolves (to nothing) once its connection is cut. */
function callInFlight(gw: TestGateway, body: Record<string, unknown>): Promise<unknown> {
  return fetch(`${gw.running.url}/v0/calls`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).catch(() => null);
}

/** The receipt row of `mandate` (or of its sub-mandates) with `status`, once there is one. */
function receiptRow(gw: TestGateway, mandate: string, status: string, agent: string) {
  return waitFor(async () => {
    const rows = await gw.running.db.knex('gateway_receipts').where({ root_mandate: mandate, status }).select('id', 'document', 'hold_id');
    return rows.find((row) => (typeof row.document === 'string' ? JSON.parse(row.document) : row.document).agent === agent);
  });
}

describe('§7 restarts', () => {
  // One gateway stops with two calls in flight; the next one starts on its data.
  let second: TestGateway;
  const leaf = { mandate: '', payer: '', receipt: '', before: {} as Record<string, number> };
  const tree = { mandate: '', payer: '', receipt: '', child: '', before: {} as Record<string, number> };
  before(async () => {
    const first = await startTestGateway();
    const leafMandate = await first.mandate();
    const treeMandate = await first.mandate();
    Object.assign(leaf, { mandate: leafMandate.id, payer: leafMandate.payer, before: await first.balances([leafMandate.payer]) });
    Object.assign(tree, { mandate: treeMandate.id, payer: treeMandate.payer, before: await first.balances([treeMandate.payer, 'gt']) });
    // gt/sleeper never answers; gto/pass has its child gt/run finished and paid, then never answers.
    const inflight = [
      callInFlight(first, { mandate: leaf.mandate, agent: 'gt/sleeper', input: { do: 'hang' } }),
      callInFlight(first, { mandate: tree.mandate, agent: 'gto/pass', input: { calls: [{ agent: 'gt/run' }], do: 'hang' } }),
    ];
    const row = await receiptRow(first, leaf.mandate, 'running', 'gt/sleeper@1.0.0');
    assert.equal(row.hold_id, `hold:${first.running.gateway.work(row.id)}`);
    leaf.receipt = row.id;
    await waitFor(async () => (await first.reserved(leaf.payer)) === 100_000);
    tree.child = (await receiptRow(first, tree.mandate, 'succeeded', 'gt/run@1.0.0')).id;
    tree.receipt = (await receiptRow(first, tree.mandate, 'running', 'gto/pass@1.0.0')).id;
    await first.close({ keep: true });
    await Promise.all(inflight);
    second = await startTestGateway({ store: first.store });
    await second.settle();
  });
  after(() => second?.close());

  test('a call left running with a hold is closed failed/gateway_restarted, never billed, its hold and reservation released', async () => {
    const receipt = await second.receipt(leaf.receipt);
    assert.equal(receipt.status, 'failed');
    assert.equal(receipt.error?.code, 'gateway_restarted');
    assert.equal(receipt.billed, false);
    assert.deepEqual(receipt.cost, NOTHING);
    assert.equal(await second.reserved(leaf.payer), 0);
    assert.deepEqual(await second.balances([leaf.payer]), leaf.before);
    const budget = (await second.http.get(`/v0/mandates/${leaf.mandate}`).expect(200)).body.budget;
    assert.deepEqual(budget, { currency: 'EUR', total: '10.00', spent: '0.00', reserved: '0.00', remaining: '10.00' });
    const release = (await second.http.get('/v0/settlements?status=posted').expect(200)).body.settlements.find((s: { receipt: string }) => s.receipt === leaf.receipt);
    assert.equal(release.txn_id, `release:hold:${second.running.gateway.work(leaf.receipt)}`);
  });

  test('downstream calls that had finished stay paid and count against the mandate', async () => {
    const receipt = await second.receipt(tree.receipt);
    assert.equal(receipt.status, 'failed');
    assert.equal(receipt.error?.code, 'gateway_restarted');
    assert.equal(receipt.billed, false);
    assert.deepEqual(receipt.children, [tree.child]);
    assert.deepEqual(receipt.cost, { own: '0.00', downstream: '0.10', total: '0.10' });
    assert.equal(receipt.calls[0].status, 'succeeded');
    assert.equal(receipt.calls[0].billed, true);
    const after = await second.balances([tree.payer, 'gt']);
    assert.deepEqual(deltas(tree.before, after), { [tree.payer]: -100_000, gt: 90_000 });
    assert.equal(await second.reserved(tree.payer), 0);
    const budget = (await second.http.get(`/v0/mandates/${tree.mandate}`).expect(200)).body.budget;
    assert.deepEqual(budget, { currency: 'EUR', total: '10.00', spent: '0.10', reserved: '0.00', remaining: '9.90' });
  });
});

describe('outbox (clearing-contract §13)', () => {
  const { gateway: gw, binding } = useSwitchableGateway();
  before(async () => {
    await gw.clearing.createAccount('gt');
  });

  /** A receipt's work identity at the binding (`<gateway>:<receipt>`). */
  const work = (receipt: string) => gw.running.gateway.work(receipt);

  /** The intents of one receipt in `status`, by transaction id. */
  async function intents(receipt: string, status: string) {
    const listed = (await gw.http.get(`/v0/settlements?status=${status}`).expect(200)).body.settlements as Array<{ txn_id: string; receipt: string; attempts: number; last_error: string | null }>;
    return Object.fromEntries(listed.filter((s) => s.receipt === receipt).map((s) => [s.txn_id, s]));
  }

  test('with the binding unreachable at settlement, the intent stays pending and is retried until posted', async () => {
    const mandate = await gw.mandate();
    const before = await gw.balances([mandate.payer, 'gt', 'platform:fees']);
    const running = gw.call({ mandate: mandate.id, agent: 'gt/sleeper', input: { sleep_ms: 1500 } }).then((r) => r);
    await waitFor(async () => (await gw.reserved(mandate.payer)) === 100_000);
    binding.down();
    const response = await running;
    assert.equal(response.status, 200);
    assert.equal(response.body.receipt.billed, true, 'the receipt is final: the money follows');
    const id = response.body.receipt.id;
    await gw.settle();

    const pending = await intents(id, 'pending');
    assert.deepEqual(Object.keys(pending).sort(), [`release:hold:${work(id)}`, `settle:${work(id)}`]);
    const settle = pending[`settle:${work(id)}`];
    assert.ok(settle.attempts >= 1);
    assert.match(settle.last_error!, /could not be reached/);
    // The release waits for the settlement: the binding must not free money about to be charged.
    assert.equal(pending[`release:hold:${work(id)}`].attempts, 0);

    binding.up();
    // The retry falls due (1 s after the first attempt, then wider): let that time pass.
    await gw.running.db.knex('gateway_settlement_intents').where({ receipt: id }).update({ next_attempt_at: new Date(Date.now() - 1) });
    await gw.settle();
    const posted = await intents(id, 'posted');
    assert.deepEqual(Object.keys(posted).sort(), [`release:hold:${work(id)}`, `settle:${work(id)}`]);
    assert.ok(posted[`settle:${work(id)}`].attempts >= 2, 'posted on a retry');
    const after = await gw.balances([mandate.payer, 'gt', 'platform:fees']);
    assert.deepEqual(deltas(before, after), { [mandate.payer]: -100_000, gt: 90_000, 'platform:fees': 10_000 });
    assert.equal(await gw.reserved(mandate.payer), 0);
  });

  test('with the binding unreachable when the hold is opened, the call answers 503: nothing reserved or billed', async () => {
    const mandate = await gw.mandate();
    binding.down();
    try {
      const response = await gw.call({ mandate: mandate.id, agent: 'gt/run', input: {} });
      assert.equal(response.status, 503);
      assert.equal(response.body.code, 'clearing_unavailable');
      assert.equal(response.body.receipt.status, 'failed');
      assert.equal(response.body.receipt.billed, false);
      const budget = (await gw.http.get(`/v0/mandates/${mandate.id}`).expect(200)).body.budget;
      assert.deepEqual(budget, { currency: 'EUR', total: '10.00', spent: '0.00', reserved: '0.00', remaining: '10.00' });
    } finally {
      binding.up();
    }
    assert.equal(await gw.reserved(mandate.payer), 0);
  });

  test('a refusal is not retried: the intent is abandoned and listed for the operator; the hold is still released', async () => {
    // This binding refuses to hold an account for gtbase (REFUSED_ACCOUNT): the settlement of gtbase/base is refused (404).
    const mandate = await gw.mandate();
    const before = await gw.balances([mandate.payer]);
    const response = await gw.call({ mandate: mandate.id, agent: 'gtbase/base', input: {} });
    assert.equal(response.status, 200);
    const id = response.body.receipt.id;
    await gw.settle();
    const abandoned = await intents(id, 'abandoned');
    assert.deepEqual(Object.keys(abandoned), [`settle:${work(id)}`]);
    assert.equal(abandoned[`settle:${work(id)}`].attempts, 1);
    assert.match(abandoned[`settle:${work(id)}`].last_error!, /refused settle settle:[0-9a-f]{12}:r\d+: there is no account gtbase/);
    assert.deepEqual(Object.keys(await intents(id, 'posted')), [`release:hold:${work(id)}`]);
    assert.deepEqual(await gw.balances([mandate.payer]), before);
    assert.equal(await gw.reserved(mandate.payer), 0);
  });
});
