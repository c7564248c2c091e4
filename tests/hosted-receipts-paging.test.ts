/**
 * Receipts a page at a time (issue 11, the console's receipts view): `GET /v0/receipts` with
 * `limit` and `before` (the last id of the previous page) walks the caller's root receipts
 * newest first, under a mandate filter too; a cursor that is not a root receipt under the same
 * filter and scope (another account's, a child, another mandate's, an unknown id) answers 404
 * `no_such_receipt` and reveals nothing.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestHosted, type TestAccount, type TestHosted } from './helpers/hosted.ts';

let hosted: TestHosted;
let alice: TestAccount;
let bob: TestAccount;
/** Alice's root receipts in the order they were made, and the child of the first. */
const made: string[] = [];
let child: string;
let other: string;

before(async () => {
  hosted = await startTestHosted();
  alice = await hosted.signup();
  bob = await hosted.signup();
  const call = async (key: string, mandate: string, agent: string, input: object) => {
    const response = await hosted.http.post('/v0/calls').set('authorization', `Bearer ${key}`).send({ mandate, agent, input });
    assert.equal(response.status, 200, JSON.stringify(response.body));
    return response.body.receipt;
  };
  const first = await call(alice.human, alice.mandate, 'gto/pass', { calls: [{ agent: 'gt/free', input: {} }] });
  made.push(first.id);
  child = first.calls[0].id;
  for (let i = 0; i < 3; i++) made.push((await call(alice.human, alice.mandate, 'gt/free', {})).id);
  await hosted.http
    .post('/v0/mandates')
    .set('authorization', `Bearer ${alice.human}`)
    .send({ id: 'other', grantee: `${alice.handle}/bot`, allow: { agents: ['*'] }, budget: { total: '1.00' } })
    .expect(201);
  other = (await call(alice.human, `${alice.handle}/other`, 'gt/free', {})).id;
  await call(bob.human, bob.mandate, 'gt/free', {});
});
after(async () => {
  await hosted?.close();
});

const page = (key: string, query: Record<string, string>) => hosted.http.get('/v0/receipts').query(query).set('authorization', `Bearer ${key}`);
const ids = (response: { body: { receipts: Array<{ id: string }> } }) => response.body.receipts.map((receipt) => receipt.id);

test('limit and before walk the root receipts newest first, each once, under a mandate filter too', async () => {
  const all = [other, ...[...made].reverse()];
  assert.deepEqual(ids(await page(alice.human, { limit: '2' }).expect(200)), all.slice(0, 2));
  assert.deepEqual(ids(await page(alice.human, { limit: '2', before: all[1] }).expect(200)), all.slice(2, 4));
  assert.deepEqual(ids(await page(alice.human, { limit: '2', before: all[3] }).expect(200)), all.slice(4, 6));
  assert.deepEqual(ids(await page(alice.human, { limit: '2', before: all[4] }).expect(200)), []);
  const sandbox = [...made].reverse();
  assert.deepEqual(ids(await page(alice.human, { mandate: alice.mandate, limit: '3', before: sandbox[0] }).expect(200)), sandbox.slice(1, 4));
  // An agent key sees its own mandate's receipts, paged the same way.
  assert.deepEqual(ids(await page(alice.agent, { limit: '1', before: sandbox[1] }).expect(200)), [sandbox[2]]);
});

test('a cursor outside the same filter and scope answers 404 no_such_receipt', async () => {
  const bobs = ids(await page(bob.human, {}).expect(200));
  for (const [key, query] of [
    [alice.human, { before: bobs[0] }],
    [alice.human, { before: child }],
    [alice.human, { before: 'r999999' }],
    [alice.human, { mandate: alice.mandate, before: other }],
    [alice.agent, { before: other }],
  ] as const) {
    const response = await page(key, query);
    assert.deepEqual([response.status, response.body.code], [404, 'no_such_receipt'], JSON.stringify(query));
    assert.equal(response.body.error, `there is no root receipt ${query.before} to page from: pass the id of the last receipt of the previous page`);
  }
});
