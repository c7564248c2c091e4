/**
 * `GET /v0/approvals/{id}` (gateway §5, issue 13 §4 `holon call --wait`): the approval in any
 * state; with `wait_s` a pending one is answered once it is decided, with the approved call's
 * answer as its approver got it; `wait_s` is bounded at 60; the answers are kept in an unlogged
 * table for `ANSWER_TTL_MS`, at most `MAX_ANSWERS`, and wake a waiter on another process.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ANSWER_TTL_MS, ApprovalAnswers, MAX_ANSWERS, MAX_WAIT_MS } from '../../src/gateway/approval-answers.ts';
import { useTestGateway, type TestMandate } from '../helpers/gateway.ts';
import { setUp } from '../helpers/hooks.ts';

const gw = useTestGateway();
let careful: TestMandate;

setUp(async () => {
  careful = await gw.mandate({ approval: { above: '0.05' } });
});

/** Holds a call for approval; returns the approval id and the receipt id. */
async function held(): Promise<{ id: string; receipt: string }> {
  const response = await gw.call({ mandate: careful.id, agent: 'gt/run', input: {} });
  assert.equal(response.status, 202, JSON.stringify(response.body));
  return { id: response.body.approval.id, receipt: response.body.receipt.id };
}

test('an unknown approval is 404 no_such_approval; wait_s above 60 is refused naming the bound', async () => {
  const missing = await gw.http.get('/v0/approvals/a999999');
  assert.equal(missing.status, 404);
  assert.deepEqual(missing.body, { error: 'there is no approval a999999', code: 'no_such_approval' });
  const { id } = await held();
  const tooLong = await gw.http.get(`/v0/approvals/${id}?wait_s=61`);
  assert.equal(tooLong.status, 422);
  assert.equal(tooLong.body.code, 'invalid_request');
  assert.match(tooLong.body.error, /wait_s must be <= 60/);
});

test('without wait_s a pending approval answers at once, with no result', async () => {
  const { id, receipt } = await held();
  const now = await gw.http.get(`/v0/approvals/${id}`);
  assert.equal(now.status, 200);
  assert.equal(now.body.approval.status, 'pending');
  assert.equal(now.body.approval.receipt, receipt);
  assert.equal('result' in now.body, false);
});

test('a waiting request is answered by the approval with the answer its approver got', async () => {
  const { id, receipt } = await held();
  const waiting = gw.http.get(`/v0/approvals/${id}?wait_s=60`).then((response) => response);
  const approved = await gw.http.post(`/v0/approvals/${id}`).send({});
  assert.equal(approved.status, 200);
  const answer = await waiting;
  assert.equal(answer.status, 200);
  assert.equal(answer.body.approval.status, 'approved');
  assert.deepEqual(answer.body.result, approved.body);
  assert.equal(answer.body.result.receipt.id, receipt);
  // Read again later: still there (kept ANSWER_TTL_MS).
  assert.deepEqual((await gw.http.get(`/v0/approvals/${id}`)).body.result, approved.body);
});

test('a waiting request is answered by a rejection, with no result', async () => {
  const { id } = await held();
  const waiting = gw.http.get(`/v0/approvals/${id}?wait_s=60`).then((response) => response);
  await gw.http.post(`/v0/approvals/${id}`).send({ decision: 'reject' }).expect(200);
  const answer = await waiting;
  assert.equal(answer.body.approval.status, 'rejected');
  assert.equal('result' in answer.body, false);
});

test(`at most ${MAX_ANSWERS} answers are kept: the oldest goes first`, async () => {
  const db = gw.running.db.knex;
  await db('gateway_approval_answers').del();
  const answers = new ApprovalAnswers<{ n: number }>(db);
  // The first MAX_ANSWERS - 1 written at once; the last two through publish, which prunes.
  await db('gateway_approval_answers').insert(Array.from({ length: MAX_ANSWERS - 1 }, (_, i) => ({ approval: `a${i}`, body: JSON.stringify({ n: i }), decided_at: new Date(Date.now() - 60_000 + i) })));
  await answers.publish(`a${MAX_ANSWERS - 1}`, { n: MAX_ANSWERS - 1 });
  assert.deepEqual(await answers.get('a0'), { body: { n: 0 } });
  await answers.publish(`a${MAX_ANSWERS}`, { n: MAX_ANSWERS });
  assert.equal(await answers.get('a0'), null);
  assert.deepEqual(await answers.get('a1'), { body: { n: 1 } });
  assert.deepEqual(await answers.get(`a${MAX_ANSWERS}`), { body: { n: MAX_ANSWERS } });
  assert.equal(Number((await db('gateway_approval_answers').count('* as n'))[0].n), MAX_ANSWERS);
});

test(`an answer is readable ${ANSWER_TTL_MS / 60_000} minutes, then deleted at the next decision`, async () => {
  const db = gw.running.db.knex;
  const answers = new ApprovalAnswers<{ n: number }>(db);
  await db('gateway_approval_answers').insert({ approval: 'old', body: '{"n":1}', decided_at: new Date(Date.now() - ANSWER_TTL_MS - 1000) });
  assert.equal(await answers.get('old'), null);
  await answers.publish('new', { n: 2 });
  assert.equal(await db('gateway_approval_answers').where({ approval: 'old' }).first(), undefined);
});

// The waiter waits up to 60 s; the test's 30 s timeout fails it unless the poll wakes it.
test('an answer published by another process wakes a waiter here within one poll, with its body', { timeout: 30_000 }, async () => {
  const db = gw.running.db.knex;
  // Two instances on one database are two processes: neither sees the other's waiters.
  const here = new ApprovalAnswers<{ n: number }>(db, 20);
  const there = new ApprovalAnswers<{ n: number }>(db, 20);
  let woken = false;
  const waiting = here.wait('elsewhere', MAX_WAIT_MS).then(() => (woken = true));
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(woken, false);
  assert.equal(here.waited, 1);
  await there.publish('elsewhere', { n: 7 });
  await waiting;
  assert.equal(here.waited, 0);
  assert.deepEqual(await here.get('elsewhere'), { body: { n: 7 } });
});
