/**
 * The durable reads of a failover (issue 27 §2): the receipt a call reads back after its closing
 * commit's answer was lost (`readReceiptDurably`, which decides whether the caller gets 200) and a
 * block of receipt ids (`ReceiptIds`) come back only once what they read is on the synchronous
 * standby. On a lone server whose synchronous standby never comes (as on an old primary its
 * failover engine restarted while the standby was being promoted), a write waits, and so do they,
 * while a plain read answers; once no standby is required, they answer. The receipt read used to
 * take a bare `txid_current()`, which writes no WAL, so PostgreSQL did not wait: it came back at
 * once, and in the failover test 8 calls were answered 200 from such a server and then lost.
 *
 * Postgres leg only (DATABASE_URL set): it starts its own server (`tests/helpers/pg-server.ts`);
 * PGlite has no replication.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/db/index.ts';
import { ReceiptIds } from '../../src/gateway/receipt-ids.ts';
import { readReceipt, readReceiptDurably } from '../../src/gateway/receipts.ts';
import { onPostgres } from '../helpers/gateway.ts';
import { startLonePostgres, type LonePostgres } from '../helpers/pg-server.ts';

/** How long a read that must wait for the standby is watched before it is said to wait. */
const WATCH_MS = 1_000;

/** Whether `promise` is still pending after `ms`. */
async function pendingAfter(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const settled = promise.then(
    () => true,
    () => true,
  );
  return !(await Promise.race([settled, sleep(ms).then(() => false)]));
}

describe('durable reads wait for the synchronous standby (a lone server whose standby never comes)', { skip: !onPostgres() && 'Postgres leg only (DATABASE_URL): it starts its own server' }, () => {
  let server: LonePostgres | null = null;
  let db: Database | null = null;
  let probe: pg.Client | null = null;
  const document = { id: 'r1', status: 'succeeded', billed: true, cost: { total: '0.02' } };
  before(async () => {
    server = await startLonePostgres();
    db = await openDatabase({ url: server.url() });
    await db.knex('gateway_receipts').insert({ id: 'r1', root_mandate: 'dev/exact-1', status: 'succeeded', document: JSON.stringify(document) });
    probe = new pg.Client({ connectionString: server.url() });
    await probe.connect();
    await probe.query('CREATE TABLE probe (n int)');
  });
  after(async () => {
    await server?.set('synchronous_standby_names', null).catch(() => {});
    await probe?.end().catch(() => {});
    await db?.close();
    await server?.stop();
  });

  test('a receipt read back after a lost answer, and a block of receipt ids, answer only once the standby has what they read', { timeout: 120_000 }, async () => {
    await server!.set('synchronous_standby_names', 'nobody');
    // The server takes the setting in its own time: until a write waits, nothing below means anything.
    let write: Promise<unknown> | null = null;
    for (let i = 0; i < 50 && write === null; i++) {
      const attempt = probe!.query('INSERT INTO probe VALUES (1)');
      if (await pendingAfter(attempt, 200)) write = attempt;
    }
    assert.ok(write, 'a write waits for the standby that never comes');

    const durable = readReceiptDurably(db!.knex, 'r1', 60_000);
    const ids = new ReceiptIds(db!.knex).next(1);
    assert.deepEqual(await readReceipt(db!.knex, 'r1'), document, 'a plain read answers at once');
    assert.deepEqual([await pendingAfter(durable, WATCH_MS), await pendingAfter(ids, 0)], [true, true], 'the durable read and the id block wait, as the write does');

    await server!.set('synchronous_standby_names', null);
    assert.deepEqual(await durable, document);
    assert.equal(await ids, 'r1');
    await write;
    assert.equal(await readReceiptDurably(db!.knex, 'r404', 5_000), null, 'a receipt that does not exist answers null');
  });
});
