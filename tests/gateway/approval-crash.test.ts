/**
 * A crash while approved calls start (issue 8 §1.5, gateway §4, §7 "Restarts"): 200 held calls
 * approved in parallel, `kill -9` of the gateway 1 s in. The held input is deleted only once the
 * run's outcome is recorded; at restart, an approved call that never started is closed like any
 * interrupted call (`failed`, `gateway_restarted`, never billed); no receipt is left
 * `pending_approval` under an approval that is no longer pending.
 */
import assert from 'node:assert/strict';
import { writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { EXAMPLE_AGENTS, FIXTURE_AGENTS, freshStore, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { spawnGateway } from '../helpers/gateway-child.ts';

const HELD = 200;

let gw: TestGateway;
const held: Array<{ approval: string; receipt: string }> = [];
before(async () => {
  const store = await freshStore();
  const mandate_dir = path.join(store.db, 'mandates');
  await mkdir(mandate_dir, { recursive: true });
  // Issued by the dev account, which the gateway funds; every call of gt/run needs a human.
  await writeFile(
    path.join(mandate_dir, 'held.yaml'),
    'id: dev/held\nissuer: dev\ngrantee: dev/tester\nallow: { agents: ["*"] }\napproval: { agents: [gt/run] }\nbudget: { total: "50.00", currency: EUR }\n',
  );
  const options = { port: 0, ...store, agent_dirs: [FIXTURE_AGENTS, EXAMPLE_AGENTS], mandate_dir, exclude: [], agents_host_port: null };
  const child = await spawnGateway(options);
  const post = (url: string, body: unknown) => fetch(`${child.url}${url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  for (let i = 0; i < HELD; i++) {
    const answer = await post('/v0/calls', { mandate: 'dev/held', agent: 'gt/run', input: { marker: `m${i}` } });
    assert.equal(answer.status, 202);
    const body = await answer.json();
    held.push({ approval: body.approval.id, receipt: body.receipt.id });
  }
  const decisions = held.map(({ approval }) => post(`/v0/approvals/${approval}`, {}).catch(() => null));
  await sleep(1000);
  await child.kill();
  await Promise.all(decisions);
  gw = await startTestGateway({ store });
  await gw.settle();
});
after(() => gw?.close());

test(`after kill -9 among ${HELD} approved calls, no receipt is left pending_approval and every approved call either ran or is closed gateway_restarted`, async () => {
  const knex = gw.running.db.knex;
  let ran = 0;
  let decided = 0;
  for (const { approval, receipt: id } of held) {
    const receipt = await gw.receipt(id);
    const row = await knex('gateway_approvals').where({ id: approval }).first('status', 'input');
    if (row.status === 'pending') {
      // Its decision never reached the gateway: it still waits for one, input and all.
      assert.equal(receipt.status, 'pending_approval', id);
      continue;
    }
    decided++;
    assert.notEqual(receipt.status, 'pending_approval', `${id} under ${approval} (${row.status})`);
    assert.equal(row.input, null, `${approval}: the input is deleted once the outcome is recorded`);
    if (receipt.status === 'succeeded') {
      ran++;
      assert.equal(receipt.billed, true);
    } else {
      assert.equal(receipt.status, 'failed', id);
      assert.equal(receipt.error?.code, 'gateway_restarted', id);
      assert.equal(receipt.billed, false, id);
      // Its approval says so too (issue 8 §1.5), from the receipt: no answer survived in memory.
      const read = (await gw.http.get(`/v0/approvals/${approval}`).expect(200)).body;
      assert.deepEqual([read.approval.status, read.result, read.outcome], ['approved', undefined, { receipt: id, status: 'failed', billed: false, error: receipt.error }], approval);
    }
  }
  assert.ok(decided > 0, 'some decisions reached the gateway before the kill');
  const budget = (await gw.http.get('/v0/mandates/dev/held').expect(200)).body.budget;
  assert.equal(budget.reserved, '0.00');
  assert.equal(budget.spent, (ran * 0.1).toFixed(2));
});

test('a pending approval keeps its input; only a decided one whose run is recorded forgets it', async () => {
  const rows = await gw.running.db.knex('gateway_approvals').whereIn('id', held.map((h) => h.approval)).select('status', 'input');
  for (const row of rows) assert.equal(row.input === null, row.status !== 'pending', JSON.stringify(row));
});
