/**
 * Several gateway processes on one Postgres (issue 12 §4): two `holon serve` processes and one
 * binding process share a database. A live process's calls are never closed by another's
 * recovery (start-up or heartbeat); a killed one's are closed by a live one at once; a budget for
 * exactly N calls bills exactly N of 5N sent across both; and the bank test's load across both,
 * with `kill -9` of one process at seeded moments, leaves the books balanced (`checkBooks`).
 * Postgres only: PGlite is one process's directory.
 */
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { freshStore, onPostgres, waitFor } from '../helpers/gateway.ts';
import type { GatewayChild } from '../helpers/gateway-child.ts';
import { openDatabase, type Database } from '../../src/db/index.ts';
import { BANK_MANDATE, bankMandates, bankSettings, checkBooks, drained, fundDev, seeded, startBankGateway, startBinding, startLoad, type BindingProcess, type Store } from '../helpers/bank.ts';

/** How many calls the exact budget pays for (0.02 each: acme/table-extract). */
const EXACT_N = 20;

const post = (url: string, body: Record<string, unknown>) =>
  fetch(`${url}/v0/calls`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('several gateway processes on one Postgres', { skip: onPostgres() ? false : 'Postgres only (DATABASE_URL): PGlite is one process\'s directory' }, () => {
  let store: Store;
  let binding: BindingProcess;
  let mandate_dir: string;
  const gateways: Array<GatewayChild | null> = [null, null];
  let ports: number[] = [];
  let books: Database;

  before(async () => {
    store = await freshStore();
    mandate_dir = await bankMandates(store);
    binding = await startBinding(store);
    gateways[0] = await startBankGateway(store, binding, mandate_dir);
    gateways[1] = await startBankGateway(store, binding, mandate_dir);
    ports = gateways.map((gateway) => Number(new URL(gateway!.url).port));
    await fundDev(binding, store);
    books = await openDatabase({ url: store.database_url! });
  });
  after(async () => {
    await books?.close();
    for (const gateway of gateways) await gateway?.stop();
    await binding?.stop();
    await rm(store.db, { recursive: true, force: true });
  });

  const receiptOf = async (id: string) => {
    const row = await books.knex('gateway_receipts').where({ id }).first('status', 'document');
    return { status: row.status as string, error: (typeof row.document === 'string' ? JSON.parse(row.document) : row.document).error as { code: string } | null };
  };

  test("a call in flight is never closed by another process's start-up or heartbeat recovery; once its process is killed, a live one closes it at once", async () => {
    const first = gateways[0]!;
    void post(first.url, { mandate: BANK_MANDATE, agent: 'gt/sleeper', input: { do: 'hang' } }).catch(() => null);
    const row: { id: string; process: number } = await waitFor(
      () => books.knex('gateway_receipts').where({ status: 'running' }).whereRaw(`document->>'agent' = 'gt/sleeper@1.0.0'`).first('id', 'process'),
      30_000,
    );
    // A third process starts (recovery at start-up), and all beat their heartbeat (every 6 s) with recovery.
    const third = await startBankGateway(store, binding, mandate_dir);
    await sleep(13_000);
    assert.deepEqual(await receiptOf(row.id), { status: 'running', error: null }, 'the call of the live process is still running');
    const lease = await books.knex('gateway_processes').where({ id: row.process }).first('pid');
    assert.equal(lease.pid, first.process.pid, 'the receipt names the process that runs it');
    await first.kill();
    gateways[0] = null;
    // The advisory lock went with the killed process's connection: no waiting for its lease to expire.
    await waitFor(async () => (await receiptOf(row.id)).status !== 'running' || null, 10_000);
    const closed = await receiptOf(row.id);
    assert.equal(closed.status, 'failed');
    assert.equal(closed.error?.code, 'gateway_restarted');
    await third.stop();
    gateways[0] = await startBankGateway(store, binding, mandate_dir, ports[0]);
  });

  test(`a budget for exactly ${EXACT_N} calls, ${5 * EXACT_N} sent at once across both processes: exactly ${EXACT_N} billed, the rest over_budget`, async () => {
    const mandate = 'dev/exact';
    await books.knex('gateway_mandates').insert({
      id: mandate,
      document: JSON.stringify({ id: mandate, issuer: 'dev', grantee: 'dev/exact', allow: { agents: ['*'] }, budget: { total: (EXACT_N * 0.02).toFixed(2), currency: 'EUR' } }),
      parent: null,
      payer: 'dev',
      currency: 'EUR',
      total_micros: EXACT_N * 20_000,
    });
    const answers = await Promise.all(
      Array.from({ length: 5 * EXACT_N }, (_, i) => post(gateways[i % 2]!.url, { mandate, agent: 'acme/table-extract', input: { text: 'a;b' } }).then(async (r) => ({ status: r.status, body: await r.json() }))),
    );
    const statuses = answers.map((a) => a.status);
    assert.equal(statuses.filter((s) => s === 200).length, EXACT_N);
    assert.equal(statuses.filter((s) => s === 403).length, 4 * EXACT_N);
    assert.ok(answers.filter((a) => a.status === 403).every((a) => a.body.code === 'over_budget'));
    const budget = (await (await fetch(`${gateways[1]!.url}/v0/mandates/${mandate}`)).json()).budget;
    assert.deepEqual(budget, { currency: 'EUR', total: '0.40', spent: '0.40', reserved: '0.00', remaining: '0.00' });
  });

  test('mixed callers across both processes, kill -9 of one at random moments and restart: nothing lost or doubled, the books balance', { timeout: 600_000 }, async () => {
    const { seed, rounds, callers } = bankSettings();
    console.log(`multiprocess: HOLON_BANK_SEED=${seed} HOLON_BANK_ROUNDS=${rounds} HOLON_BANK_CALLERS=${callers}`);
    const random = seeded(seed);
    const load = startLoad(() => gateways.filter((g): g is GatewayChild => g !== null).map((g) => g.url), callers, random);
    try {
      for (let round = 0; round < rounds; round++) {
        await sleep(1_000 + random() * 3_000);
        const victim = random() < 0.5 ? 0 : 1;
        const killed = gateways[victim]!;
        gateways[victim] = null;
        await killed.kill();
        await sleep(random() * 1_000);
        gateways[victim] = await startBankGateway(store, binding, mandate_dir, ports[victim]);
      }
      await sleep(1_000);
    } finally {
      await load.stop();
    }
    for (const gateway of gateways) await drained(gateway!.url, binding);
    const figures = await checkBooks(books.knex, books.knex, load.tally);
    console.log(`multiprocess: seed ${seed}, sent ${load.tally.sent}, answers ${JSON.stringify(load.tally.by_status)}, books ${JSON.stringify(figures)}`);
    assert.ok(load.tally.succeeded.size > 0, 'calls succeeded between the kills');
  });
});
