/**
 * `GET /v0/receipts` in pages (issue 12 §4, gateway §5): `limit` root receipt trees per page
 * (default 50, at most 500), `next_cursor` continuing after the page, null on the last; the pages
 * together are the listing, newest first, nothing twice; a foreign cursor or a limit out of its
 * bounds answers 422 and lists nothing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { useTestGateway, type TestMandate } from '../helpers/gateway.ts';
import { setUp } from '../helpers/hooks.ts';

const gw = useTestGateway();
let mandate: TestMandate;
const made: string[] = [];
setUp(async () => {
  mandate = await gw.mandate();
  for (let i = 0; i < 7; i++) made.push((await gw.call({ mandate: mandate.id, agent: 'gt/run', input: {} }).expect(200)).body.receipt.id);
});

test('pages of 3 list the 7 receipts newest first, each once, and the last page has no next cursor', async () => {
  const seen: string[] = [];
  const sizes: number[] = [];
  let cursor: string | null = null;
  do {
    const query: string = `/v0/receipts?mandate=${mandate.id}&limit=3${cursor ? `&cursor=${cursor}` : ''}`;
    const body: { receipts: Array<{ id: string }>; next_cursor: string | null } = (await gw.http.get(query).expect(200)).body;
    sizes.push(body.receipts.length);
    seen.push(...body.receipts.map((r) => r.id));
    cursor = body.next_cursor;
  } while (cursor !== null);
  assert.deepEqual(sizes, [3, 3, 1]);
  assert.deepEqual(seen, [...made].reverse());
  const whole = (await gw.http.get(`/v0/receipts?mandate=${mandate.id}`).expect(200)).body;
  assert.deepEqual(whole.receipts.map((r: { id: string }) => r.id), [...made].reverse());
  assert.equal(whole.next_cursor, null);
});

test('a cursor the gateway did not give, and a limit outside 1 to 500, answer 422 invalid_request', async () => {
  for (const cursor of ['bm90LWEtY3Vyc29y', 'WyJ4IiwiciJd', 'x'.repeat(201), 'a%20b']) {
    const response = await gw.http.get(`/v0/receipts?mandate=${mandate.id}&cursor=${cursor}`).expect(422);
    assert.equal(response.body.code, 'invalid_request', cursor);
  }
  for (const limit of ['0', '501', '-1', '2.5', 'ten']) {
    const response = await gw.http.get(`/v0/receipts?limit=${limit}`).expect(422);
    assert.equal(response.body.code, 'invalid_request', limit);
  }
});
