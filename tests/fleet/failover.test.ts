/**
 * Postgres fails over with nothing lost (issue 27 §2). A pg_auto_failover cluster (monitor,
 * primary, standby; `tests/helpers/pg-cluster.ts`), the reference binding and two gateway
 * processes on its multi-host URL, kept for every run: in each, 32 callers spend a budget of its
 * own for exactly N calls with 5N sent across both processes, and the primary's postmaster is
 * killed (`kill -9`) at a random moment while the budget is being spent. The engine promotes the
 * standby; the processes reach it with no human step and no restart (their pools drop broken and
 * read-only connections, their leases are taken anew: `src/db/primary.ts`,
 * `src/gateway/processes.ts`). Then, with synchronous replication, in each of 3 runs: every call
 * answered 200 is on the books, succeeded and billed, with exactly one settlement (lost 0,
 * doubled 0); exactly N are billed and the budget is spent to the micro-unit; the postings sum to
 * zero and, once no hold waits for its expiry, the books balance (`checkBooks`); calls in flight
 * at the failover ended `failed` (`gateway_restarted` or `gateway_error`) unbilled or completed
 * once; nothing answered 500; and the service answered again within {@link SERVE_AGAIN_BOUND_MS}
 * (a call sent after the kill decided by the database: 200, or 403 once the budget is spent or
 * held by calls the failover cut off, until recovery releases them). One more run with asynchronous replication records what that
 * loses (no assertion on it: it is the measurement behind the docs' advice). Each run prints its
 * figures (`failover: {...}`).
 *
 * Postgres leg only (DATABASE_URL set); there it fails, never skips, when pg_autoctl is missing.
 * It found three defects, all fixed: receipt ids drawn on an old primary the engine had restarted
 * (`receipt-ids.ts`), a call whose closing commit's answer was lost (`lifecycle.ts`), and the
 * receipt such a call read back from a restarted old primary without waiting for the standby
 * (8 calls answered 200, then lost; `receipts.ts`, `durable-read.test.ts`). When a call is lost,
 * the run prints the engine's events from a second before the kill on.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { openDatabase, type Database } from '../../src/db/index.ts';
import { PrimaryConnector } from '../../src/db/primary.ts';
import { bankMandates, BANK_MANDATE, checkBooks, drained, fundDev, startBinding, type BindingProcess, type LoadTally, type Store } from '../helpers/bank.ts';
import { spawnGateway, type GatewayChild } from '../helpers/gateway-child.ts';
import { EXAMPLE_AGENTS, FIXTURE_AGENTS, freshDataDir, onPostgres, waitFor } from '../helpers/gateway.ts';
import { missingPgAutoctl, startPgCluster, type PgCluster } from '../helpers/pg-cluster.ts';

/** Calls the budget pays for: acme/table-extract at 0.02 EUR (20 000 micro-units) each. */
const N = 60;
const PRICE_MICROS = 20_000;
/** Concurrent callers, spread over both processes. */
const CALLERS = 32;
/** How long a caller waits before sending again after a 503 or a connection refused. */
const RETRY_PAUSE_MS = 200;
/** The bound on the time from the kill to the first call sent after it and answered 200 or 403 (detection about 2 s, promotion, new leases). */
const SERVE_AGAIN_BOUND_MS = 45_000;

/** What one run measured. */
interface Figures {
  replication: 'synchronous' | 'asynchronous';
  sent: number;
  answered: number;
  billed: number;
  lost: number;
  doubled: number;
  restarted: number;
  by_status: Record<string, number>;
  serve_again_ms: number | null;
  /** Calls billed once but answered 502 (the closing commit went through as the failover broke the connection). */
  misanswered: number;
  /** Billed receipts without exactly one settlement, plus unbilled ones with one. */
  unsettled: number;
  /** The sum of every posting at the binding (each entry sums to zero, so 0). */
  postings_sum: number;
  holds_open: number;
  books: string;
}

const post = (url: string, mandate: string) =>
  fetch(`${url}/v0/calls`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ mandate, agent: 'acme/table-extract', input: { text: 'a;b' } }) });

/** Creates database `name` on the cluster's primary (it reaches the standby by replication). */
async function createDatabase(cluster: PgCluster, name: string): Promise<void> {
  const admin = await new PrimaryConnector(cluster.url('postgres')).connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
}

/** The processes every run shares: a database on the cluster, the binding, two gateways, and the test's own connection to the books. */
interface Fleet {
  store: Store;
  binding: BindingProcess;
  gateways: GatewayChild[];
  books: Database;
  /** Every call answered 200 so far, for `checkBooks`. */
  tally: LoadTally;
}

/** Starts the fleet on a new database of `cluster`; `stop()` stops what started. */
async function startFleet(cluster: PgCluster): Promise<Fleet & { stop(): Promise<void> }> {
  const name = `holon_failover_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  await createDatabase(cluster, name);
  const store: Store = { db: await freshDataDir(), database_url: cluster.url(name) };
  const mandate_dir = await bankMandates(store);
  const gateways: GatewayChild[] = [];
  let binding: BindingProcess | null = null;
  let books: Database | null = null;
  const stop = async () => {
    await books?.close();
    for (const gateway of gateways) await gateway.stop();
    await binding?.stop();
    await rm(store.db, { recursive: true, force: true });
  };
  try {
    binding = await startBinding(store);
    // A lease of 3 s beats every 0.6 s: recovery of the calls the failover cut off runs that often.
    const env = { HOLON_MCP_MANDATE: BANK_MANDATE, HOLON_PROCESS_LEASE_S: '3', HOLON_DB_FAILOVER_S: '60' };
    for (let i = 0; i < 2; i++) {
      gateways.push(await spawnGateway({ port: 0, ...store, clearing_url: binding.url, agent_dirs: [FIXTURE_AGENTS, EXAMPLE_AGENTS], mandate_dir, exclude: [], agents_host_port: null }, env));
    }
    await fundDev(binding, store);
    books = await openDatabase({ url: store.database_url! });
  } catch (error) {
    await stop();
    throw error;
  }
  return { store, binding, gateways, books, tally: { sent: 0, by_status: {}, succeeded: new Map() }, stop };
}

/** One run on a budget of its own (mandate `dev/exact-<run>`): the load, the kill, the books. */
async function failoverRun(cluster: PgCluster, fleet: Fleet, run: number, replication: Figures['replication']): Promise<Figures> {
  await cluster.healthy();
  const { gateways, books, binding } = fleet;
  const mandate = `dev/exact-${run}`;
  await books.knex('gateway_mandates').insert({
    id: mandate,
    document: JSON.stringify({ id: mandate, issuer: 'dev', grantee: mandate, allow: { agents: ['*'] }, budget: { total: ((N * PRICE_MICROS) / 1e6).toFixed(2), currency: 'EUR' } }),
    parent: null,
    payer: 'dev',
    currency: 'EUR',
    total_micros: N * PRICE_MICROS,
  });

  // The load: 5N calls, each retried (as a new call) after a 503 or a refused connection.
  const tally: LoadTally = { sent: 0, by_status: {}, succeeded: new Map() };
  const count = (status: string) => (tally.by_status[status] = (tally.by_status[status] ?? 0) + 1);
  // When and where each call was answered 200, relative to the kill: named in the report of a lost call.
  const answers = new Map<string, string>();
  const answered = (body: any, where = 'top-up') => {
    answers.set(body.receipt.id, `${where} at ${killed_at === null ? 'before the kill' : `kill + ${Date.now() - killed_at} ms`}`);
    tally.succeeded.set(body.receipt.id, { billed: body.receipt.billed, total: body.receipt.cost.total });
    fleet.tally.succeeded.set(body.receipt.id, { billed: body.receipt.billed, total: body.receipt.cost.total });
  };
  const kill_after = Math.floor(N * (0.2 + 0.6 * Math.random()));
  let killed_at: number | null = null;
  let killing: Promise<unknown> | null = null;
  let serve_again_ms: number | null = null;
  let next = 0;
  const caller = async () => {
    while (tally.sent < 5 * N) {
      tally.sent++;
      for (;;) {
        const started = Date.now();
        let status: string;
        let body: any = null;
        let gateway = 0;
        try {
          gateway = next++ % 2;
          const response = await post(gateways[gateway].url, mandate);
          status = String(response.status);
          body = await response.json();
        } catch {
          status = 'unreachable';
        }
        count(status === '503' ? `503 ${body?.code}` : status);
        if (status === '503' || status === 'unreachable') {
          await sleep(RETRY_PAUSE_MS);
          continue;
        }
        // Served again: a call sent after the kill that the database decided (200, or 403 over budget).
        if ((status === '200' || status === '403') && killed_at !== null && serve_again_ms === null && started >= killed_at) serve_again_ms = Date.now() - killed_at;
        if (status === '200') {
          answered(body, `gateway ${gateway}`);
          if (killing === null && tally.succeeded.size >= kill_after) {
            killed_at = Date.now();
            killing = cluster.killPrimary();
          }
        }
        break;
      }
    }
  };
  await Promise.all(Array.from({ length: CALLERS }, caller));
  await killing;
  await cluster.healthy();

  // What the failover left in flight is closed by recovery; then what budget it held is spent, one call at a time.
  await waitFor(async () => Number((await books.knex('gateway_receipts').where({ status: 'running' }).count({ n: '*' }).first())!.n) === 0, 60_000);
  for (let i = 0; i <= N; i++) {
    const response = await post(gateways[i % 2].url, mandate);
    const body: any = await response.json();
    count(`top-up ${response.status}`);
    if (response.status === 200) answered(body);
    else if (body.code === 'over_budget') break;
    else await sleep(RETRY_PAUSE_MS);
  }
  // Every settlement posted (a hold opened by a call the failover cut off may wait for its expiry: counted below).
  await waitFor(async () => Number((await books.knex('gateway_settlement_intents').where({ status: 'pending', operation: 'settle' }).count({ n: '*' }).first())!.n) === 0, 120_000);
  const holds_open = Number((await books.knex('clearing_holds').where({ status: 'open' }).count({ n: '*' }).first())!.n);
  if (holds_open === 0) for (const gateway of gateways) await drained(gateway.url, binding);

  const receipts = await books.knex('gateway_receipts').select('id', 'document');
  const documents = new Map(receipts.map((row) => [row.id as string, typeof row.document === 'string' ? JSON.parse(row.document) : row.document]));
  const exact = [...documents.values()].filter((receipt) => receipt.mandate === mandate);
  const billed = exact.filter((receipt) => receipt.billed).length;
  const lostIds = [...tally.succeeded.keys()].filter((id) => documents.get(id)?.status !== 'succeeded' || documents.get(id)?.billed !== true);
  const lost = lostIds.length;
  for (const id of lostIds) {
    const row = await books.knex('gateway_receipts').where({ id }).first('status', 'process');
    const reservation = await books.knex('gateway_reservations').where({ receipt: id }).first('status', 'spent_micros');
    console.log(`failover: LOST ${id}: answered 200 by ${answers.get(id)}; on the books: ${JSON.stringify({ row, reservation, error: documents.get(id)?.error, billed: documents.get(id)?.billed })}`);
  }
  // What the engine did around the kill, for the report of a lost call.
  if (lost > 0 && killed_at !== null) {
    console.log(`failover: killed at ${new Date(killed_at).toISOString()}`);
    for (const line of await cluster.events(new Date(killed_at - 1_000))) console.log(`failover: engine: ${line}`);
  }
  const gateway_id = (await books.knex('gateway_identity').first('id')).id as string;
  const settles = (await books.knex('clearing_transactions').where('txn_id', 'like', `settle:${gateway_id}:%`).pluck('txn_id')) as string[];
  const doubled = settles.length - new Set(settles).size;
  const settled = new Set(settles.map((txn) => txn.slice(`settle:${gateway_id}:`.length)));
  const unsettled = exact.filter((receipt) => receipt.billed && !settled.has(receipt.id)).length + exact.filter((receipt) => !receipt.billed && settled.has(receipt.id)).length;
  const postings_sum = Number((await books.knex('clearing_postings').sum({ s: 'delta' }).first())!.s);
  const unbilled = exact.filter((receipt) => !receipt.billed);
  const misanswered = exact.filter((receipt) => receipt.billed && !tally.succeeded.has(receipt.id));
  // The whole books check needs every hold closed; a hold left to its expiry (10 min past its call) is reported instead.
  let verdict = holds_open === 0 ? 'balanced' : `not checked: ${holds_open} holds wait for their expiry`;
  if (holds_open === 0) {
    try {
      await checkBooks(books.knex, books.knex, fleet.tally);
    } catch (error) {
      verdict = `NOT balanced: ${(error as Error).message.split('\n')[0]}`;
    }
  }
  const budget = (await (await fetch(`${gateways[0].url}/v0/mandates/${mandate}`)).json()).budget;
  const restarted = unbilled.filter((receipt) => receipt.error?.code === 'gateway_restarted').length;
  const figures: Figures = { replication, sent: tally.sent, answered: tally.succeeded.size, billed, lost, doubled, restarted, by_status: tally.by_status, serve_again_ms, misanswered: misanswered.length, unsettled, postings_sum, holds_open, books: verdict };
  console.log(`failover: ${JSON.stringify(figures)} budget ${JSON.stringify(budget)}`);
  if (replication === 'synchronous') {
    assert.equal(lost, 0, 'every call answered 200 is on the books, succeeded and billed');
    assert.equal(doubled, 0, 'no receipt is settled twice');
    assert.equal(unsettled, 0, 'every billed receipt has exactly one settlement, and nothing else has one');
    assert.equal(postings_sum, 0, 'the postings sum to zero');
    assert.ok(!verdict.startsWith('NOT'), verdict);
    assert.equal(billed, N, `exactly ${N} billed when the budget ran out`);
    // A billed call not answered 200 had its closing commit go through as the connection broke (answered 502 or 503): counted, see the report.
    assert.ok(misanswered.length <= 2, `${misanswered.length} billed calls were not answered 200`);
    assert.equal(tally.succeeded.size + misanswered.length, N, `exactly ${N} calls answered 200 or billed after a 502`);
    assert.deepEqual(budget, { currency: 'EUR', total: '1.20', spent: '1.20', reserved: '0.00', remaining: '0.00' });
    // Cut off by the failover: closed by recovery (gateway_restarted), by the call itself once the database was back
    // (gateway_error), or refused by a binding that could not write (clearing_unavailable); never billed.
    const cut = unbilled.filter((receipt) => receipt.status === 'failed');
    assert.ok(cut.every((receipt) => ['gateway_restarted', 'gateway_error', 'clearing_unavailable'].includes(receipt.error?.code)), JSON.stringify(cut.map((receipt) => receipt.error?.code)));
    assert.ok(unbilled.every((receipt) => receipt.status === 'failed' || receipt.error?.code === 'over_budget'), 'every other call was refused over budget');
    assert.equal(tally.by_status['500'] ?? 0, 0, 'nothing answered 500');
    assert.ok(serve_again_ms !== null && serve_again_ms <= SERVE_AGAIN_BOUND_MS, `served again ${serve_again_ms} ms after the kill; the bound is ${SERVE_AGAIN_BOUND_MS} ms`);
  }
  return figures;
}

describe('Postgres fails over with nothing lost (pg_auto_failover, two gateway processes, the binding)', { skip: !onPostgres() && 'Postgres leg only (DATABASE_URL): it starts its own pg_auto_failover cluster' }, () => {
  let cluster: PgCluster | null = null;
  let fleet: (Fleet & { stop(): Promise<void> }) | null = null;
  before(async () => {
    const missing = missingPgAutoctl();
    // Fail, never skip, on the Postgres leg: CI must not lose this test silently.
    assert.equal(missing, null);
    cluster = await startPgCluster();
    fleet = await startFleet(cluster);
  });
  after(async () => {
    await fleet?.stop();
    await cluster?.stop();
  });

  test(`synchronous replication, 3 runs: a budget for exactly ${N} calls, ${5 * N} sent, kill -9 of the primary at a random moment: nothing lost or doubled, exactly ${N} billed`, { timeout: 600_000 }, async () => {
    const runs: Figures[] = [];
    for (let run = 1; run <= 3; run++) runs.push(await failoverRun(cluster!, fleet!, run, 'synchronous'));
    console.log(`failover: synchronous: answered ${runs.map((r) => r.answered).join('/')}, billed ${runs.map((r) => r.billed).join('/')}, lost ${runs.map((r) => r.lost).join('/')}, doubled ${runs.map((r) => r.doubled).join('/')}, served again after ${runs.map((r) => r.serve_again_ms).join('/')} ms`);
  });

  test('asynchronous replication, 1 run: what a failover can lose (measured, not asserted)', { timeout: 300_000 }, async () => {
    await cluster!.setSynchronous(false);
    try {
      const figures = await failoverRun(cluster!, fleet!, 4, 'asynchronous');
      console.log(`failover: asynchronous: answered ${figures.answered}, billed ${figures.billed}, lost ${figures.lost}, doubled ${figures.doubled}, books ${figures.books}`);
    } finally {
      await cluster!.setSynchronous(true).catch(() => {});
    }
  });
});
