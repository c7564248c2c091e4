/**
 * `GET /v0/approvals/{id}` (gateway §5, issue 13 §4 `holon call --wait`): the approval in any
 * state; with `wait_s` a pending one is answered once it is decided, with the approved call's
 * answer as its approver got it; `wait_s` is bounded at 60; the answers are kept in memory only,
 * at most `MAX_ANSWERS`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApprovalAnswers, MAX_ANSWERS } from '../../src/gateway/approval-answers.ts';
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
  // Read again later: still there, from memory.
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

test(`at most ${MAX_ANSWERS} answers are kept: the oldest goes first`, () => {
  const answers = new ApprovalAnswers();
  for (let i = 0; i <= MAX_ANSWERS; i++) answers.publish(`a${i}`, { n: i });
  assert.equal(answers.get('a0'), null);
  assert.deepEqual(answers.get('a1'), { body: { n: 1 } });
  assert.deepEqual(answers.get(`a${MAX_ANSWERS}`), { body: { n: MAX_ANSWERS } });
});
