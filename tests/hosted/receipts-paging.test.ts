/**
 * Receipts a page at a time on the hosted gateway (issue 11, the console's receipts view; issue
 * 12 §4): `GET /v0/receipts` with `limit` and the previous page's `next_cursor` walks the
 * caller's root receipts newest first, under a mandate filter and an agent key's scope too; a
 * cursor is only a position, so one made in another account's walk shows nothing of it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useHostedAccount, useTestHosted } from '../helpers/hosted.ts';
import { setUp } from '../helpers/hooks.ts';

const hosted = useTestHosted();
const alice = useHostedAccount(hosted);
const bob = useHostedAccount(hosted);
/** Alice's root receipts in the order they were made, and the child of the first. */
const made: string[] = [];
let other: string;

setUp(async () => {
  const call = async (key: string, mandate: string, agent: string, input: object) => {
    const response = await hosted.http.post('/v0/calls').set('authorization', `Bearer ${key}`).send({ mandate, agent, input });
    assert.equal(response.status, 200, JSON.stringify(response.body));
    return response.body.receipt;
  };
  const first = await call(alice.human, alice.mandate, 'gto/pass', { calls: [{ agent: 'gt/free', input: {} }] });
  made.push(first.id);
  for (let i = 0; i < 3; i++) made.push((await call(alice.human, alice.mandate, 'gt/free', {})).id);
  await hosted.http
    .post('/v0/mandates')
    .set('authorization', `Bearer ${alice.human}`)
    .send({ id: 'other', grantee: `${alice.handle}/bot`, allow: { agents: ['*'] }, budget: { total: '1.00' } })
    .expect(201);
  other = (await call(alice.human, `${alice.handle}/other`, 'gt/free', {})).id;
  await call(bob.human, bob.mandate, 'gt/free', {});
});

const page = (key: string, query: Record<string, string>) => hosted.http.get('/v0/receipts').query(query).set('authorization', `Bearer ${key}`);
const ids = (response: { body: { receipts: Array<{ id: string }> } }) => response.body.receipts.map((receipt) => receipt.id);

/** Every page of `query` with `limit`, walked through `next_cursor`: the ids of each page. */
async function walk(key: string, query: Record<string, string>): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | null = null;
  do {
    const response: { body: { receipts: Array<{ id: string }>; next_cursor: string | null } } = await page(key, cursor === null ? query : { ...query, cursor }).expect(200);
    pages.push(ids(response));
    cursor = response.body.next_cursor;
  } while (cursor !== null);
  return pages;
}

test('limit and next_cursor walk the root receipts newest first, each once, under a mandate filter and an agent key too', async () => {
  const all = [other, ...[...made].reverse()];
  assert.deepEqual(await walk(alice.human, { limit: '2' }), [all.slice(0, 2), all.slice(2, 4), all.slice(4, 5)]);
  const sandbox = [...made].reverse();
  assert.deepEqual(await walk(alice.human, { mandate: alice.mandate, limit: '3' }), [sandbox.slice(0, 3), sandbox.slice(3)]);
  // An agent key sees its own mandate's receipts only, paged the same way.
  assert.deepEqual(await walk(alice.agent, { limit: '2' }), [sandbox.slice(0, 2), sandbox.slice(2, 4)]);
});

test("a cursor from another account's walk shows only the caller's own receipts", async () => {
  const first = await page(alice.human, { limit: '1' }).expect(200);
  const bobs = await page(bob.human, { cursor: first.body.next_cursor }).expect(200);
  assert.equal(ids(bobs).filter((id) => [other, ...made].includes(id)).length, 0);
  assert.equal(bobs.body.receipts.every((receipt: { mandate: string }) => receipt.mandate === bob.mandate), true);
});
