/**
 * `POST /v0/calls` on the hosted gateway, as gateway §7 words it: "with an agent key, the mandate
 * is the key's" (`mandate` may be left out, also through the typed client and under an
 * `Idempotency-Key`; another mandate is out of the key's scope; a human key must name one), and a
 * call re-submitted under a `{"run": false}` grant runs only when it is the call the approval
 * holds (§1 "Admit": bound to the mandate, the exact version, the input's hash and `max_cost`):
 * any other call is refused 409 `approval_mismatch` and leaves the grant for the exact call.
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHolonClient } from '../../clients/src/index.ts';
import { inputHash } from '../../src/gateway/approvals.ts';
import { bearer, carefulMandate, useHostedAccount, useTestHosted } from '../helpers/hosted.ts';

const hosted = useTestHosted();
const account = useHostedAccount(hosted);
const other = useHostedAccount(hosted);

describe('the mandate of an agent key', () => {
  test('left out, the call runs under the key\'s mandate; naming it is the same; another mandate is 404 no_such_mandate', async () => {
    const unnamed = await hosted.http.post('/v0/calls').set(bearer(account.agent)).send({ agent: 'gt/run', input: { marker: 'unnamed' } }).expect(200);
    assert.deepEqual([unnamed.body.output.said, unnamed.body.receipt.mandate, unnamed.body.receipt.status], ['UNNAMED', account.mandate, 'succeeded']);
    const named = await hosted.http.post('/v0/calls').set(bearer(account.agent)).send({ mandate: account.mandate, agent: 'gt/run', input: { marker: 'named' } }).expect(200);
    assert.equal(named.body.receipt.mandate, account.mandate);
    const theirs = await hosted.http.post('/v0/calls').set(bearer(account.agent)).send({ mandate: other.mandate, agent: 'gt/run', input: { marker: 'theirs' } });
    assert.deepEqual([theirs.status, theirs.body.code, theirs.body.error], [404, 'no_such_mandate', `there is no mandate ${other.mandate}`]);
  });

  test('a human key has no mandate of its own: left out, 422 body.mandate is required, and no receipt', async () => {
    const refused = await hosted.http.post('/v0/calls').set(bearer(account.human)).send({ agent: 'gt/run', input: { marker: 'human' } });
    assert.deepEqual([refused.status, refused.body.code], [422, 'invalid_request']);
    assert.equal(refused.body.error, 'invalid request: body.mandate is required: name the mandate the call runs under (only an agent key may leave it out, its calls run under its mandate)');
    assert.equal(refused.body.receipt, undefined);
  });

  test('under an Idempotency-Key, the call without mandate is replayed: the same receipt, output null, run once', async () => {
    const receipts = async () => Number((await hosted.running.db.knex('gateway_receipts').where({ root_mandate: account.mandate }).count('* as n'))[0].n);
    const before = await receipts();
    const first = await hosted.http.post('/v0/calls').set(bearer(account.agent)).set('idempotency-key', 'unnamed-1').send({ agent: 'gt/run', input: { marker: 'once' } }).expect(200);
    const again = await hosted.http.post('/v0/calls').set(bearer(account.agent)).set('idempotency-key', 'unnamed-1').send({ agent: 'gt/run', input: { marker: 'once' } }).expect(200);
    assert.deepEqual([again.body.replayed, again.body.output, again.body.receipt.id, again.body.receipt.mandate], [true, null, first.body.receipt.id, account.mandate]);
    assert.equal(await receipts(), before + 1, 'run once');
  });

  test('the typed client (@holon/client) calls without a mandate', async () => {
    const holon = createHolonClient({ baseUrl: hosted.running.url, key: account.agent });
    const answer = await holon.call({ agent: 'gt/run', input: { marker: 'typed' } });
    assert.ok('output' in answer);
    assert.deepEqual([answer.output, answer.receipt.mandate], [{ done: true, said: 'TYPED', max_cost: null, children: [] }, account.mandate]);
  });
});

describe('a call re-submitted under a granted approval', () => {
  let mandate: string;
  let agentKey: string;
  before(async () => {
    mandate = await carefulMandate(hosted, account);
    agentKey = (await hosted.http.post('/v0/keys').set(bearer(account.human)).send({ mandate }).expect(201)).body.key;
  });

  test('with another input, agent or max_cost is refused 409 approval_mismatch and leaves the grant; the exact call then runs once, under the held receipt', async () => {
    // Keys in an order the database does not keep (jsonb puts shorter keys first): the approval binds the input, not its text.
    const input = { sleep_ms: 0, marker: 'grant-me' };
    const held = await hosted.http.post('/v0/calls').set(bearer(agentKey)).send({ agent: 'gt/run', input }).expect(202);
    const id = held.body.approval.id as string;
    assert.equal(held.body.approval.input_sha256, inputHash(input));
    await hosted.http.post(`/v0/approvals/${id}`).set(bearer(account.human)).send({ run: false }).expect(200);

    const otherInput = { sleep_ms: 0, marker: 'not-me' };
    const refused = await hosted.http.post('/v0/calls').set(bearer(agentKey)).send({ agent: 'gt/run', input: otherInput, approval: id });
    assert.deepEqual([refused.status, refused.body.code], [409, 'approval_mismatch']);
    assert.equal(
      refused.body.error,
      `approval ${id} was given for another call: it is for the input with SHA-256 ${inputHash(input)}, this input's is ${inputHash(otherInput)}. Nothing ran and the approval is unchanged: send the call it holds with approval ${id}, or this call without approval to ask again`,
    );
    for (const body of [{ agent: 'gt/free', input }, { agent: 'gt/run@^2', input }, { agent: 'gt/run', input, max_cost: '0.10' }, { mandate: account.mandate, agent: 'gt/run', input }]) {
      const mismatch = await hosted.http.post('/v0/calls').set(bearer(account.human)).send({ mandate, ...body, approval: id });
      assert.deepEqual([mismatch.status, mismatch.body.code], [409, 'approval_mismatch'], JSON.stringify(body));
    }
    // Nothing was touched: no new approval, the grant unused, the held receipt still held.
    assert.deepEqual((await hosted.http.get('/v0/approvals').set(bearer(agentKey)).expect(200)).body.approvals, []);
    assert.equal((await hosted.running.db.knex('hosted_approval_grants').where({ approval: id }).first()).used_at, null);
    assert.equal((await hosted.http.get(`/v0/receipts/${held.body.receipt.id}`).set(bearer(agentKey)).expect(200)).body.status, 'pending_approval');

    // The exact call, its keys in another order, without naming the key's mandate.
    const ran = await hosted.http.post('/v0/calls').set(bearer(agentKey)).send({ agent: 'gt/run', input: { marker: 'grant-me', sleep_ms: 0 }, approval: id }).expect(200);
    assert.deepEqual([ran.body.output.said, ran.body.receipt.id, ran.body.receipt.status, ran.body.receipt.approval, ran.body.receipt.billed], ['GRANT-ME', held.body.receipt.id, 'succeeded', id, true]);
    const again = await hosted.http.post('/v0/calls').set(bearer(agentKey)).send({ agent: 'gt/run', input, approval: id });
    assert.deepEqual([again.status, again.body.code], [409, 'approval_not_granted']);
  });
});
