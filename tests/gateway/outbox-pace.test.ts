/**
 * Settlement keeps pace (issue 12 §3, clearing-contract §13): a call's settlement is posted right
 * after its receipt, not on the next poll and not behind other intents; two outboxes on one
 * database post each intent exactly once, each call's settlement before its hold's release; and
 * the backlog is bounded: above `max_pending` pending intents, a call that would reserve money is
 * refused 503 `settlement_backlog` with `Retry-After`, and nothing is reserved.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rm } from 'node:fs/promises';
import { after, test } from 'node:test';
import pino from 'pino';
import { openDatabase, type Database } from '../../src/db/index.ts';
import { HttpClearingPort } from '../../src/gateway/clearing.ts';
import { Outbox, type Intent, type OutboxSettings } from '../../src/gateway/outbox.ts';
import { freshStore, micros, startSwitchableGateway, storeTarget, waitFor, type SwitchableBinding, type TestGateway } from '../helpers/gateway.ts';

/** The settle path of the clearing API (clearing-contract §6.8). */
const SETTLE_PATH = '/internal/ledger/charge';
/** An hour: in these tests, the retry path's poll never comes. */
const HOUR_MS = 3_600_000;

const cleanup: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const step of cleanup.reverse()) await step();
});

/** Starts a test gateway settling through a switchable binding, with the outbox settings given. */
async function gatewayBehindSwitch(outbox: Partial<OutboxSettings>): Promise<{ gw: TestGateway; binding: SwitchableBinding }> {
  // A hung settle must outlast the test's wait (an old outbox would sit behind it), not end it.
  const { gateway, binding, close } = await startSwitchableGateway({ clearing_timeouts: { connect_s: 5, request_s: 120 }, outbox });
  cleanup.push(close);
  return { gw: gateway, binding };
}

test("a call's settlement is applied right after its receipt, without a poll and while another call's settlement hangs", async () => {
  const { gw, binding } = await gatewayBehindSwitch({ poll_ms: HOUR_MS });
  // The settlement of every gt/run call reaches the binding and is applied, but its answer never comes back.
  binding.loseAnswers({ path: SETTLE_PATH, answer: 'hang', matching: '"memo":"gt/run@' });
  const hung = await gw.mandate();
  const first = await gw.call({ mandate: hung.id, agent: 'gt/run', input: {} });
  assert.equal(first.status, 200);

  const mandate = await gw.mandate();
  const before = await gw.balance(mandate.payer);
  const second = await gw.call({ mandate: mandate.id, agent: 'gt/attempt', input: {} });
  assert.equal(second.status, 200);
  assert.equal(second.body.receipt.cost.total, '0.10');
  const settle = await waitFor(async () => {
    const { body } = await gw.http.get('/v0/settlements?status=posted');
    return body.settlements.find((s: { receipt: string; operation: string }) => s.receipt === second.body.receipt.id && s.operation === 'settle');
  });
  assert.equal(settle.attempts, 1);
  assert.equal(await gw.balance(mandate.payer), before - micros('0.10'));
  // The hung one is still in flight: it was not what let the second through.
  const pending = (await gw.http.get('/v0/settlements?status=pending')).body.settlements;
  assert.ok(pending.some((s: { receipt: string; operation: string }) => s.receipt === first.body.receipt.id && s.operation === 'settle'));
});

test('with every place for immediate posts taken, a call writes its intents unclaimed and leaves them to the retry path', async () => {
  const { gw, binding } = await gatewayBehindSwitch({ poll_ms: HOUR_MS, concurrency: 1 });
  binding.loseAnswers({ path: SETTLE_PATH, answer: 'hang', matching: '"memo":"gt/run@' });
  const hung = await gw.mandate();
  const first = await gw.call({ mandate: hung.id, agent: 'gt/run', input: {} }).expect(200);
  const intents = (receipt: string) => gw.running.db.knex('gateway_settlement_intents').where({ receipt }).orderBy('seq').select('operation', 'status', 'claimed_until');
  // The first call's own statement claimed its intents, and its post (hanging at the binding) holds the one place.
  await waitFor(async () => (await intents(first.body.receipt.id)).every((row) => row.claimed_until !== null));
  const mandate = await gw.mandate();
  const second = await gw.call({ mandate: mandate.id, agent: 'gt/attempt', input: {} }).expect(200);
  assert.deepEqual(
    (await intents(second.body.receipt.id)).map((row) => [row.operation, row.status, row.claimed_until]),
    [
      ['settle', 'pending', null],
      ['release-hold', 'pending', null],
    ],
  );
});

test('over max_pending pending intents, a call that would reserve money is refused 503 settlement_backlog with Retry-After; nothing is reserved', async () => {
  const { gw, binding } = await gatewayBehindSwitch({ poll_ms: HOUR_MS, max_pending: 3, count_ttl_ms: 0 });
  // Settlements fail (a 502 from a proxy): they stay pending, and each call's release waits behind its settlement.
  binding.loseAnswers({ path: SETTLE_PATH, answer: '502' });
  const mandate = await gw.mandate();
  for (let n = 0; n < 2; n++) assert.equal((await gw.call({ mandate: mandate.id, agent: 'gt/run', input: {} })).status, 200);
  await waitFor(async () => (await gw.http.get('/v0/settlements?status=pending')).body.settlements.length === 4 && (await gw.reserved(mandate.payer)) === 2 * micros('0.10'));

  const refused = await gw.call({ mandate: mandate.id, agent: 'gt/run', input: {} });
  assert.equal(refused.status, 503);
  assert.equal(refused.headers['retry-after'], '2');
  assert.equal(refused.body.code, 'settlement_backlog');
  assert.equal(refused.body.error, '4 settlements are waiting to be posted, more than the bound of 3 (HOLON_OUTBOX_MAX_PENDING); nothing was reserved or billed, try again in 2 s');
  assert.equal(refused.body.receipt.billed, false);
  assert.equal(await gw.reserved(mandate.payer), 2 * micros('0.10'), 'no hold was opened');
  // A free call adds no settlement: it is not refused.
  assert.equal((await gw.call({ mandate: mandate.id, agent: 'gt/free', input: {} })).status, 200);
});

/** A stand-in binding that answers every settle and release, slowly, and records what it was sent. */
async function startStandIn(): Promise<{ url: string; posts: string[]; server: Server }> {
  const posts: string[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString() || '{}');
    posts.push(req.url === SETTLE_PATH ? `settle ${body.txnId}` : `release ${body.holdId}`);
    // Slow enough that two posters overlap.
    await new Promise((resolve) => setTimeout(resolve, 2));
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ applied: true }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, posts, server };
}

test('two outboxes on one database post each of 120 intents exactly once, each settlement before its release', async () => {
  const RECEIPTS = 60;
  const standIn = await startStandIn();
  const store = await freshStore();
  const target = storeTarget(store, 'gateway');
  const first: Database = await openDatabase(target);
  // PGlite is one process's: both outboxes share its one connection there; on Postgres each has its own pool.
  const second: Database = store.database_url ? await openDatabase(target) : first;
  cleanup.push(async () => {
    standIn.server.close();
    if (second !== first) await second.close();
    await first.close();
    await rm(store.db, { recursive: true, force: true });
  });
  const logger = pino({ level: 'silent' });
  const settings = { poll_ms: HOUR_MS, batch: 7, concurrency: 4 };
  const outboxes = [new Outbox(first.knex, new HttpClearingPort(standIn.url), logger, settings), new Outbox(second.knex, new HttpClearingPort(standIn.url), logger, settings)];

  const receipts = Array.from({ length: RECEIPTS }, (_, n) => `r${n + 1}`);
  await first.knex.transaction(async (trx) => {
    for (const id of receipts) {
      await trx('gateway_receipts').insert({ id, root_mandate: 'p/m', status: 'succeeded', document: '{}' });
      const intents: Intent[] = [
        { operation: 'settle', receipt: id, body: { txnId: `settle:${id}`, caller: 'p', owner: 'a', rate: 1, retail: 1, ref: id } },
        { operation: 'release-hold', receipt: id, body: { holdId: `hold:${id}`, reason: 'call settled' } },
      ];
      await outboxes[0].write(trx, intents);
    }
  });
  // Both post right after "their" receipts and drain at the same time, over the same rows.
  for (const id of receipts) for (const outbox of outboxes) outbox.postReceipt(id);
  await Promise.all([outboxes[0].drain(), outboxes[1].drain(), outboxes[0].drain(), outboxes[1].drain()]);
  await Promise.all(outboxes.map((outbox) => outbox.drain()));

  const counts = new Map<string, number>();
  for (const post of standIn.posts) counts.set(post, (counts.get(post) ?? 0) + 1);
  assert.equal(standIn.posts.length, 2 * RECEIPTS, `posted more than once: ${[...counts].filter(([, n]) => n > 1).map(([p]) => p).slice(0, 5)}`);
  for (const id of receipts) {
    assert.equal(counts.get(`settle settle:${id}`), 1, id);
    assert.equal(counts.get(`release hold:${id}`), 1, id);
    assert.ok(standIn.posts.indexOf(`settle settle:${id}`) < standIn.posts.indexOf(`release hold:${id}`), `${id}: released before settled`);
  }
  const statuses: Array<{ status: string; n: unknown }> = await first.knex('gateway_settlement_intents').select('status').count({ n: '*' }).groupBy('status');
  assert.deepEqual(statuses.map((row) => [row.status, Number(row.n)]), [['posted', 2 * RECEIPTS]]);
});

/**
 * An outbox (polling hourly, so only what a test does posts) in front of a stand-in binding, with
 * the two intents of receipt `r1` (its settle, then its release) claimed by a poster that crashed:
 * their lease runs for another hour.
 */
async function intentsOfACrashedPoster() {
  const standIn = await startStandIn();
  const store = await freshStore();
  const database = await openDatabase(storeTarget(store, 'gateway'));
  cleanup.push(async () => {
    standIn.server.close();
    await database.close();
    await rm(store.db, { recursive: true, force: true });
  });
  const outbox = new Outbox(database.knex, new HttpClearingPort(standIn.url), pino({ level: 'silent' }), { poll_ms: HOUR_MS });
  await database.knex.transaction(async (trx) => {
    await trx('gateway_receipts').insert({ id: 'r1', root_mandate: 'p/m', status: 'succeeded', document: '{}' });
    await outbox.write(trx, [
      { operation: 'settle', receipt: 'r1', body: { txnId: 'settle:r1', caller: 'p', owner: 'a', rate: 1, retail: 1, ref: 'r1' } },
      { operation: 'release-hold', receipt: 'r1', body: { holdId: 'hold:r1', reason: 'call settled' } },
    ]);
  });
  const intents = () => database.knex('gateway_settlement_intents').where({ receipt: 'r1' });
  await intents().update({ claimed_until: database.knex.raw(`clock_timestamp() + interval '1 hour'`) });
  return { standIn, database, outbox, intents };
}

test("intents claimed by another poster are left alone until the claim's lease passes, then posted (a crashed claimer's rows come back)", async () => {
  const { standIn, database, outbox, intents } = await intentsOfACrashedPoster();
  outbox.postReceipt('r1');
  await outbox.drain();
  assert.deepEqual(standIn.posts, []);
  // The lease has passed.
  await intents().update({ claimed_until: database.knex.raw(`clock_timestamp() - interval '1 second'`) });
  await outbox.drain();
  assert.deepEqual(standIn.posts, ['settle settle:r1', 'release hold:r1']);
  assert.deepEqual((await intents().orderBy('seq').select('status', 'claimed_until')).map((row) => [row.status, row.claimed_until]), [['posted', null], ['posted', null]]);
});

test('at start-up a restarted gateway frees the claims its crashed predecessor held, so their intents are posted at once', async () => {
  const { standIn, outbox } = await intentsOfACrashedPoster();
  assert.equal(await outbox.freeClaims(), 2);
  await outbox.drain();
  assert.deepEqual(standIn.posts, ['settle settle:r1', 'release hold:r1']);
});

/**
 * A database double for an outbox: records each statement (its text and values) and holds it
 * until the test answers it.
 */
function heldStatements() {
  const statements: Array<{ text: string; values: unknown[]; answer: (error?: Error) => void }> = [];
  const connection = {
    query: (text: string, values: unknown[]) =>
      new Promise<{ rows: [] }>((resolve, reject) => {
        statements.push({ text, values, answer: (error) => (error ? reject(error) : resolve({ rows: [] })) });
      }),
  };
  const db = { client: { acquireConnection: async () => connection, releaseConnection: async () => {} } };
  return { statements, db: db as never };
}

test('immediate posts are bounded from the claim on: with concurrency 2 a third claim is refused until a place is given back or posted; a claim is used once', async () => {
  const { statements, db } = heldStatements();
  const outbox = new Outbox(db, null as never, pino({ level: 'silent' }), { poll_ms: HOUR_MS, concurrency: 2, lease_ms: 45_000 });
  const first = outbox.claimForPosting();
  const second = outbox.claimForPosting();
  assert.ok(first && second);
  assert.equal(first.lease_ms, 45_000);
  assert.equal(outbox.claimForPosting(), null);
  first.cancel();
  const third = outbox.claimForPosting();
  assert.ok(third);
  // A second use of a claim is ignored: it gives back no place it no longer holds.
  first.cancel();
  first.post([], 0);
  assert.equal(outbox.claimForPosting(), null);
  second.post([], 1);
  const fourth = outbox.claimForPosting();
  assert.ok(fourth);
  // A statement that failed may have committed: the claim it may have taken on the receipt's intents is freed at once.
  fourth.unknown('r42');
  await waitFor(async () => statements.length === 1);
  assert.match(statements[0].text, /UPDATE gateway_settlement_intents SET claimed_until = NULL WHERE receipt = \$1::text AND status = 'pending'/);
  assert.deepEqual(statements[0].values, ['r42']);
  assert.ok(outbox.claimForPosting());
});

test('posted marks go at once while fewer than 4 mark statements are at the database, and together past that; each resolves once its statement commits, or fails with it', async () => {
  const { statements, db } = heldStatements();
  const outbox = new Outbox(db, null as never, pino({ level: 'silent' }), { poll_ms: HOUR_MS });
  const markPosted = (ids: string[], last_error?: string) => (outbox as unknown as { markPosted(rows: Array<{ txn_id: string }>, e?: string): Promise<void> }).markPosted(ids.map((txn_id) => ({ txn_id })), last_error);
  const settledAs = (promise: Promise<void>) => promise.then(() => 'committed', (error: Error) => error.message);
  // MARK_POSTED's values, in the order its parameters first appear: the error, then the ids.
  const marked = (n: number) => statements[n].values as [string | null, string[]];

  const early = ['a', 'b', 'c', 'd'].map((id) => settledAs(markPosted([`settle:${id}`])));
  await waitFor(async () => statements.length === 4);
  const waiting = [settledAs(markPosted(['settle:e'])), settledAs(markPosted(['settle:f', 'release:f']))];
  const withError = settledAs(markPosted(['settle:g'], 'nothing to release'));
  await waitFor(async () => statements.length === 5);
  // The mark with a reason goes at once, alone; the two plain ones wait for one of the four.
  assert.deepEqual(marked(4), ['nothing to release', ['settle:g']]);
  statements[4].answer();
  assert.equal(await withError, 'committed');
  assert.equal(statements.length, 5);
  statements[0].answer();
  assert.equal(await early[0], 'committed');
  await waitFor(async () => statements.length === 6);
  assert.deepEqual(marked(5), [null, ['settle:e', 'settle:f', 'release:f']]);
  statements[5].answer(new Error('connection lost'));
  assert.deepEqual(await Promise.all(waiting), ['connection lost', 'connection lost']);
  // Statement 2 hangs for good: the others end, and a new mark still goes at once.
  statements[2].answer();
  statements[3].answer();
  const later = settledAs(markPosted(['settle:h']));
  await waitFor(async () => statements.length === 7);
  assert.deepEqual(marked(6), [null, ['settle:h']]);
  statements[6].answer();
  assert.equal(await later, 'committed');
  assert.deepEqual(await Promise.all([early[2], early[3]]), ['committed', 'committed']);
});
