/**
 * Settlement keeps pace (issue 12 §3, clearing-contract §13): a call's settlement is posted right
 * after its receipt, not on the next poll and not behind other intents; two outboxes on one
 * database post each intent exactly once, each call's settlement before its hold's release; and
 * the backlog is bounded: above `max_pending` pending intents, a call that would reserve money is
 * refused 503 `settlement_backlog` with `Retry-After`, and nothing is reserved. The posted marks
 * of many receipts share one statement (issue 21 §1), and a post does not wait for its mark.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rm } from 'node:fs/promises';
import { after, test } from 'node:test';
import type { Knex } from 'knex';
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
  // A call over its budget is refused for that, as admission answers first (gateway §1), not told to come back in 2 s (issue 21: its budget is read only for a refusal).
  const small = await gw.mandate({ budget: { total: '0.20', currency: 'EUR' } });
  const over = await gw.call({ mandate: small.id, agent: 'gt/quote', input: { quote: '0.01' } });
  assert.deepEqual([over.status, over.body.code, over.headers['retry-after'], over.body.receipt.status], [403, 'over_budget', undefined, 'denied']);
  assert.equal(over.body.error, `worst case 0.50 EUR exceeds the remaining budget 0.20 EUR of mandate ${small.id}; its issuer can grant a larger budget (GET /v0/mandates/{id} shows what is spent and reserved)`);
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

  const receipts = receiptIds(1, RECEIPTS);
  await writeReceipts(first.knex, outboxes[0], receipts);
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
  assert.deepEqual(await statusCounts(first.knex), [['posted', 2 * RECEIPTS]]);
});

/** The intents counted by status: `[[status, n], …]`, in no set order. */
async function statusCounts(knex: Knex): Promise<Array<[string, number]>> {
  const rows: Array<{ status: string; n: unknown }> = await knex('gateway_settlement_intents').select('status').count({ n: '*' }).groupBy('status');
  return rows.map((row) => [row.status, Number(row.n)]);
}

/** Receipt ids `r<from>` … `r<to>`. */
const receiptIds = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, n) => `r${from + n}`);

/** Writes each receipt of `ids` with its two intents (its settle, then its release), all in one transaction. */
async function writeReceipts(knex: Knex, outbox: Outbox, ids: readonly string[]): Promise<void> {
  await knex.transaction(async (trx) => {
    for (const id of ids) {
      await trx('gateway_receipts').insert({ id, root_mandate: 'p/m', status: 'succeeded', document: '{}' });
      const intents: Intent[] = [
        { operation: 'settle', receipt: id, body: { txnId: `settle:${id}`, caller: 'p', owner: 'a', rate: 1, retail: 1, ref: id } },
        { operation: 'release-hold', receipt: id, body: { holdId: `hold:${id}`, reason: 'call settled' } },
      ];
      await outbox.write(trx, intents);
    }
  });
}

/** A fresh database in front of a stand-in binding, both closed after the tests, and an outbox on them (polling hourly unless `settings` say otherwise, so only what a test does posts). */
async function outboxOnStandIn(settings: Partial<OutboxSettings> = {}) {
  const standIn = await startStandIn();
  const store = await freshStore();
  const database = await openDatabase(storeTarget(store, 'gateway'));
  cleanup.push(async () => {
    standIn.server.close();
    await database.close();
    await rm(store.db, { recursive: true, force: true });
  });
  const outbox = new Outbox(database.knex, new HttpClearingPort(standIn.url), pino({ level: 'silent' }), { poll_ms: HOUR_MS, ...settings });
  return { standIn, database, outbox };
}

/**
 * An outbox in front of a stand-in binding ({@link outboxOnStandIn}), with the two intents of
 * receipt `r1` (its settle, then its release) claimed by a poster that crashed: their lease runs
 * for another hour.
 */
async function intentsOfACrashedPoster() {
  const { standIn, database, outbox } = await outboxOnStandIn();
  await writeReceipts(database.knex, outbox, ['r1']);
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

/**
 * Counts the posted-mark statements `knex` runs on its raw connections (the outbox's
 * `holon_gateway_mark_posted`: a pg prepared statement's text, or a PGlite query's), by wrapping
 * each connection's `query` as the pool hands it out.
 */
function countMarkStatements(knex: Knex): { marks: number } {
  const counted = { marks: 0 };
  const wrapped = new WeakSet<object>();
  const client = knex.client as { acquireConnection(): Promise<{ query(...args: unknown[]): unknown }> };
  const acquire = client.acquireConnection.bind(client);
  client.acquireConnection = async () => {
    const connection = await acquire();
    if (!wrapped.has(connection)) {
      wrapped.add(connection);
      const query = connection.query.bind(connection);
      connection.query = (...args: unknown[]) => {
        const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | null)?.text;
        if (text?.includes("SET status = 'posted'")) counted.marks++;
        return query(...args);
      };
    }
    return connection;
  };
  return counted;
}

test('the posted marks of 40 receipts share statements: one for all when they fit a batch, full batches of mark_batch intents when not; every intent ends posted', async () => {
  // The linger never ends within the test: only a full batch or drain() sends marks.
  const { standIn, database, outbox } = await outboxOnStandIn({ mark_linger_ms: HOUR_MS, concurrency: 40 });
  const statements = countMarkStatements(database.knex);
  // 40 receipts, each posted right after its receipt (40 places: none is left to the retry path).
  const immediate = receiptIds(1, 40);
  await writeReceipts(database.knex, outbox, immediate);
  for (const id of immediate) outbox.postReceipt(id);
  await outbox.drain();
  assert.equal(standIn.posts.length, 80);
  assert.deepEqual(await statusCounts(database.knex), [['posted', 80]]);
  assert.equal(statements.marks, 1, '80 intents, one mark statement');

  // 40 more through the retry path, with batches of 10 intents (5 receipts): 8 statements.
  const batched = new Outbox(database.knex, new HttpClearingPort(standIn.url), pino({ level: 'silent' }), { poll_ms: HOUR_MS, mark_linger_ms: HOUR_MS, mark_batch: 10 });
  await writeReceipts(database.knex, batched, receiptIds(41, 80));
  await batched.drain();
  assert.equal(standIn.posts.length, 160);
  assert.deepEqual(await statusCounts(database.knex), [['posted', 160]]);
  assert.equal(statements.marks, 1 + 8);
});

test("a post gives back its place while its mark lingers; drain() and stop() send a lingering mark at once and wait for it", { timeout: 60_000 }, async () => {
  const { standIn, database, outbox } = await outboxOnStandIn({ mark_linger_ms: HOUR_MS, concurrency: 1 });
  await writeReceipts(database.knex, outbox, ['r1']);
  const intents = (receipt: string) => database.knex('gateway_settlement_intents').where({ receipt }).orderBy('seq').select('status', database.knex.raw('claimed_until IS NOT NULL AS claimed'));
  /** Posts `receipt` right after its receipt and waits until its post has given its one place back. */
  const postAndFreePlace = async (receipt: string) => {
    outbox.postReceipt(receipt);
    const place = await waitFor(async () => outbox.claimForPosting());
    place.cancel();
  };

  await postAndFreePlace('r1');
  assert.deepEqual(standIn.posts, ['settle settle:r1', 'release hold:r1']);
  // The binding took both; their mark lingers (an hour here), and their claim keeps every poster off them.
  assert.deepEqual(await intents('r1'), [
    { status: 'pending', claimed: true },
    { status: 'pending', claimed: true },
  ]);
  await outbox.drain();
  assert.deepEqual(await intents('r1'), [
    { status: 'posted', claimed: false },
    { status: 'posted', claimed: false },
  ]);

  // Written after the drain, which would have posted it.
  await writeReceipts(database.knex, outbox, ['r2']);
  await postAndFreePlace('r2');
  assert.deepEqual((await intents('r2')).map((row) => row.status), ['pending', 'pending']);
  await outbox.stop();
  assert.deepEqual(await intents('r2'), [
    { status: 'posted', claimed: false },
    { status: 'posted', claimed: false },
  ]);
  assert.equal(standIn.posts.length, 4, 'each posted once');
});

test('a mark statement carries whole receipts up to mark_batch intents, at most 2 at the database; past a full waiting batch a post waits for its own statement; a failed one is logged, never thrown', async () => {
  const { statements, db } = heldStatements();
  const logged: string[] = [];
  const logger = { error: (_fields: unknown, message: string) => logged.push(message), warn: () => {} };
  const outbox = new Outbox(db, null as never, logger as never, { poll_ms: HOUR_MS, mark_linger_ms: HOUR_MS, mark_batch: 3 });
  const internals = outbox as unknown as { markPosted(rows: Array<{ txn_id: string }>): Promise<void>; flushMarks(): Promise<void> };
  /** Marks `ids` posted; answers whether the post may go on at once (its promise resolved within a turn of the event loop). */
  const markPosted = async (ids: string[]) => {
    let ended = false;
    const marked = internals.markPosted(ids.map((txn_id) => ({ txn_id }))).then(() => (ended = true));
    await new Promise((resolve) => setImmediate(resolve));
    return { at_once: ended, marked };
  };
  // MARK_POSTED's values, in the order its parameters first appear: the error, then the ids.
  const marked = (n: number) => statements[n].values as [string | null, string[]];

  assert.equal((await markPosted(['settle:a'])).at_once, true);
  assert.equal(statements.length, 0, 'one intent waits for its linger');
  assert.equal((await markPosted(['settle:b', 'release:b'])).at_once, true);
  assert.deepEqual(marked(0), [null, ['settle:a', 'settle:b', 'release:b']]);
  assert.equal((await markPosted(['settle:c', 'release:c'])).at_once, true);
  assert.equal((await markPosted(['settle:d'])).at_once, true);
  assert.deepEqual(marked(1), [null, ['settle:c', 'release:c', 'settle:d']]);
  // Two statements at the database: a full batch waits, and the post that filled it waits for its statement.
  assert.equal((await markPosted(['settle:e'])).at_once, true);
  const f = await markPosted(['settle:f', 'release:f']);
  assert.equal(f.at_once, false);
  const g = await markPosted(['settle:g']);
  assert.equal(g.at_once, false);
  assert.equal(statements.length, 2);

  // The first fails: logged, and the next batch goes (whole receipts, up to 3 intents).
  statements[0].answer(new Error('connection lost'));
  await waitFor(async () => statements.length === 3);
  assert.deepEqual(logged, ['marking posted intents failed: they stay claimed and are posted again once their lease has passed']);
  assert.deepEqual(marked(2), [null, ['settle:e', 'settle:f', 'release:f']]);
  // Statement 1 hangs: the other place still serves.
  statements[2].answer();
  await f.marked;
  assert.equal(statements.length, 3, 'one intent waits for its linger');
  // A flush sends it at once and waits for every statement at the database, the hung one too.
  let flushed = false;
  const flushing = internals.flushMarks().then(() => (flushed = true));
  await waitFor(async () => statements.length === 4);
  assert.deepEqual(marked(3), [null, ['settle:g']]);
  statements[3].answer();
  await g.marked;
  assert.equal(flushed, false);
  statements[1].answer();
  await flushing;
  assert.equal(flushed, true);
});
