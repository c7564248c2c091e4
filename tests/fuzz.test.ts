/**
 * The fuzz suite (issue 8 §2): requests for every operation of both OpenAPI documents, generated
 * by fast-check from the operation tables (mostly valid, often hostile in one place: a NUL, a
 * lone surrogate, a nesting 10,000 deep, a 5,000-character id, a number JSON cannot hold, another
 * charset, bytes that are not UTF-8), sent one after another to a gateway and the binding it
 * settles with. It asserts:
 * - no answer is a 5xx, except the gateway's documented 502 for a call whose agent failed (with
 *   its receipt);
 * - no refused request (4xx) changes the ledger: the journal, any balance, any hold, any agent
 *   link, or the gateway's budget reservations (a snapshot after each request, compared with the
 *   one before it; the gateway's settlements are posted before each snapshot).
 *
 * Fixed seed for reproducibility; `FUZZ_SEED` and `FUZZ_REQUESTS` override it, and a failure
 * prints the seed, the request's index and the request.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import { operationTable as clearingTable, schemaDocument as clearingDocument } from '../generated/clearing/server.ts';
import { operationTable as gatewayTable, schemaDocument as gatewayDocument } from '../generated/gateway/server.ts';
import { createClearingApp } from '../src/clearing/app.ts';
import { openDatabase, type Database } from '../src/db/index.ts';
import { storeMandate } from '../src/gateway/mandates.ts';
import { freshStore, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import {
  PoolPick,
  plannedRequest,
  resolvePicks,
  toJsonText,
  type Planned,
  type PlannedRequest,
  type PoolsByField,
} from './helpers/fuzz.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_201);
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 5_000);

/** Field names of each document that take a known id, and how often a fresh one instead. */
const CLEARING_POOLS: PoolsByField = {
  account: { pool: 'accounts', fresh: 1 },
  caller: { pool: 'accounts', fresh: 1 },
  owner: { pool: 'accounts', fresh: 1 },
  agentKey: { pool: 'agentKeys', fresh: 4 },
  txnId: { pool: 'txnIds', fresh: 12 },
  reverses: { pool: 'txnIds', fresh: 1 },
  holdId: { pool: 'holdIds', fresh: 6 },
  upstream_receipt: { pool: 'receipts', fresh: 1 },
};
const GATEWAY_POOLS: PoolsByField = {
  mandate: { pool: 'mandates', fresh: 1 },
  agent: { pool: 'agents', fresh: 1 },
  capability: { pool: 'capabilities', fresh: 1 },
  input: { pool: 'inputs', fresh: 1 },
  max_cost: { pool: 'prices', fresh: 0 },
  id: { pool: 'gatewayIds', fresh: 1 },
  ns: { pool: 'namespaces', fresh: 1 },
  name: { pool: 'names', fresh: 1 },
  issuer: { pool: 'issuers', fresh: 1 },
  q: { pool: 'words', fresh: 1 },
};

/** How often each gateway operation is drawn, against 4 for every other operation. */
const GATEWAY_WEIGHTS: Record<string, number> = { call: 16, 'decide-approval': 8, 'list-accounts': 1 };

/**
 * The state a refused request must leave as it found it, as aggregates cheap enough to read after
 * every request: the journal (postings, transactions), the holder balances, the holds (count,
 * caps, drawn, open ones, windows), the agent links, and the gateway's budget reservations.
 */
type Snapshot = Record<string, string | number>;
let binding: { db: Database; server: Server; url: string };
let gateway: TestGateway;
const pools: Record<string, Planned[]> = {};
let freshCount = 0;
/** Every example input of the listed agents, with its agent. */
const examples: Array<[string, Planned]> = [];

const LEDGER_DIGEST = `SELECT
    (SELECT coalesce(max(id), 0) FROM clearing_postings)::text AS postings,
    (SELECT count(*) FROM clearing_transactions)::text AS transactions,
    (SELECT count(*) || ':' || coalesce(sum(balance), 0) || ':' || coalesce(sum(abs(balance)), 0) FROM clearing_accounts) AS balances,
    (SELECT count(*) || ':' || coalesce(sum(amount), 0) || ':' || coalesce(sum(drawn), 0) || ':' || count(*) FILTER (WHERE status = 'open')
        || ':' || coalesce(sum(extract(epoch FROM expires_at)), 0) FROM clearing_holds) AS holds,
    (SELECT count(*) FROM clearing_agent_links)::text AS links`;

/** What the budgets hold and have spent; a reservation opened and released again by a refused call holds nothing. */
const BUDGET_DIGEST = `SELECT count(*) FILTER (WHERE status = 'open') || ':' || coalesce(sum(worst_case_micros) FILTER (WHERE status = 'open'), 0)
    || ':' || coalesce(sum(spent_micros), 0) AS budgets FROM gateway_reservations`;

/** The ledger's digest, and the gateway's budgets when `withBudgets` (a binding request cannot change them). */
async function snapshot(previous: Snapshot | null, withBudgets: boolean): Promise<Snapshot> {
  const ledger = (await binding.db.knex.raw(LEDGER_DIGEST)).rows[0];
  const budgets = withBudgets || !previous ? (await gateway.running.db.knex.raw(BUDGET_DIGEST)).rows[0].budgets : previous.budgets;
  return { ...ledger, budgets };
}

/** A value for a pool pick: a known one, or a fresh id that later requests can name. */
function resolvePick(pick: PoolPick): Planned {
  if (pick.pool === 'instant') return new Date(Date.now() + pick.pick).toISOString();
  const pool = pools[pick.pool] ?? [];
  if (pick.fresh || pool.length === 0) {
    if (pick.pool === 'inputs') return { text: `a;b\nc;${pick.pick}` };
    const id = `fz-${pick.pool}-${freshCount++}`;
    if (pick.pool === 'txnIds') remember(pick.pool, id);
    return id;
  }
  return pool[pick.pick % pool.length];
}

function remember(pool: string, value: Planned): void {
  (pools[pool] ??= []).push(value);
  if (pools[pool].length > 200) pools[pool].shift();
}

/** The request as sent: method, URL and body bytes with their media type. */
function materialize(request: PlannedRequest, pathTemplate: string): { url: string; method: string; body?: Buffer; contentType?: string } {
  const base = request.server === 'gateway' ? gateway.running.url : binding.url;
  const route = pathTemplate.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = request.params[name];
    if (value !== null && typeof value === 'object' && 'encoded' in value) return value.encoded as string;
    return encodeURIComponent(String(resolvePicks(value as Planned, resolvePick)));
  });
  let query = '';
  if ('raw' in request.query && typeof request.query.raw === 'string') query = `?${request.query.raw}`;
  else {
    const entries = Object.entries(resolvePicks(request.query as Planned, resolvePick) as Record<string, Planned>);
    if (entries.length > 0) query = `?${entries.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v))}`).join('&')}`;
  }
  const sent = { url: `${base}${route}${query}`, method: request.method.toUpperCase() };
  if (request.body === null) return sent;
  if (request.body.kind === 'bytes') return { ...sent, body: request.body.bytes, contentType: request.body.contentType };
  return { ...sent, body: Buffer.from(toJsonText(resolvePicks(request.body.value, resolvePick))), contentType: 'application/json' };
}

/** What an accepted answer adds to the pools: holds opened, receipts and approvals seen. */
function learn(request: PlannedRequest, status: number, answer: any): void {
  if (request.operationId === 'open-hold' && status === 200) remember('holdIds', answer.reservation.hold_id);
  if (request.operationId === 'create-account' && status === 200) remember('accounts', answer.account);
  const receipt = answer?.receipt;
  if (receipt && typeof receipt.id === 'string') {
    remember('gatewayIds', receipt.id);
    remember('receipts', receipt.id);
  }
  if (answer?.approval && typeof answer.approval.id === 'string') remember('gatewayIds', answer.approval.id);
}

const PATHS = new Map<string, string>([
  ...clearingTable.map((op) => [`binding ${op.operationId}`, op.path] as const),
  ...gatewayTable.map((op) => [`gateway ${op.operationId}`, op.path] as const),
]);

before(async () => {
  const store = await freshStore();
  const db = await openDatabase(store.database_url ? { url: store.database_url } : { dir: path.join(store.db, 'clearing') });
  // A 500 logs its cause, so a failure shows why.
  const server = createClearingApp({ db: db.knex, logger: pino({ level: 'error' }) }).listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  binding = { db, server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  gateway = await startTestGateway({ store, clearing_url: binding.url });
  // Settlements are posted by the test, before each snapshot, so every change has a known cause.
  await gateway.running.outbox.stop();

  const knex = gateway.running.db.knex;
  const agents = ['acme/table-extract', 'lena/table-extract-plus', 'holon-labs/word-stats', 'holon-labs/invoice-pipeline', 'acme/estimate'];
  const allow = { agents: ['acme/*', 'lena/*', 'holon-labs/*'], capabilities: ['*'] };
  for (const [name, extra] of [['open', {}], ['careful', { approval: { above: '0.00' } }]] as const) {
    await storeMandate(knex, { id: `fz/${name}`, issuer: 'fz', grantee: 'fz/caller', allow, budget: { total: '20.00', currency: 'EUR' }, delegation: { max_depth: 2 }, ...extra }, { parent: null, payer: 'fz' });
  }
  await gateway.clearing.createAccount('fz');
  await gateway.fund('fz', 50_000_000);
  const holders = Array.from({ length: 10 }, (_, i) => `fz-${i}`);
  for (const account of holders) await gateway.clearing.createAccount(account);
  await gateway.fund('fz-0', 1_000_000);
  pools.accounts = [...holders, 'external:funding', 'platform:fees', 'nobody'];
  pools.agentKeys = ['fz-key', 'nobody-key'];
  pools.mandates = ['fz/open', 'fz/careful', 'fz/open', 'fz/open', 'fz/careful', 'fz/open', 'fz/open.r1', 'nobody/none'];
  pools.agents = [...agents, 'acme/table-extract@^1', 'acme/table-extract@9', 'nobody/none'];
  pools.inputs = [];
  const capabilities = new Set<string>();
  for (const id of agents) {
    const record = (await gateway.http.get(`/v0/agents/${id}`).expect(200)).body;
    for (const example of record.manifest.examples ?? []) {
      pools.inputs.push(example.input);
      examples.push([id, example.input]);
    }
    for (const capability of record.manifest.capabilities ?? []) capabilities.add(capability);
  }
  pools.capabilities = [...capabilities, 'no.such.capability'];
  pools.namespaces = ['acme', 'lena', 'holon-labs', 'fz', 'nobody'];
  pools.names = ['table-extract', 'word-stats', 'estimate', 'open', 'careful', 'table-extract@^1', 'x@not-a-range'];
  pools.issuers = ['fz', 'dev', 'nobody'];
  pools.words = ['table', 'invoice', 'words', ''];
  pools.gatewayIds = ['r1', 'nothing'];
  pools.receipts = ['r1'];
  pools.prices = ['0.05', '1.00', '0.000001', '0', '999999999.999999', '1000000000', '0.0000001', '-1'];
});

after(async () => {
  await gateway?.close();
  binding?.server.closeAllConnections();
  await new Promise<void>((resolve) => binding?.server.close(() => resolve()));
  await binding?.db.close();
});

test(`fuzz: ${REQUESTS} generated requests on both APIs: no 5xx, and no refused request changes the ledger (seed ${SEED})`, async () => {
  // Calls that pass every check (a listed agent with one of its own example inputs), so billing, holds and approvals run too.
  const runnable = fc
    .record({ pick: fc.nat(), mandate: fc.constantFrom('fz/open', 'fz/careful'), max_cost: fc.option(fc.constantFrom('0.50', '0.05', '0.000001'), { nil: undefined }) })
    .map(({ pick, mandate, max_cost }): PlannedRequest => {
      const [agent, input] = examples[pick % examples.length];
      return { server: 'gateway', operationId: 'call', method: 'post', params: {}, query: {}, body: { kind: 'json', value: { mandate, agent, input, ...(max_cost ? { max_cost } : {}) } } };
    });
  const arbitrary = fc.oneof(
    { arbitrary: runnable, weight: 12 },
    ...clearingTable.map((op) => ({ arbitrary: plannedRequest('binding', clearingDocument, op, CLEARING_POOLS), weight: 4 })),
    // Calls and approvals reach the most rules; listing the accounts reads every balance from the binding: a few suffice.
    ...gatewayTable.map((op) => ({ arbitrary: plannedRequest('gateway', gatewayDocument, op, GATEWAY_POOLS), weight: GATEWAY_WEIGHTS[op.operationId] ?? 4 })),
  );
  const plans = fc.sample(arbitrary, { seed: SEED, numRuns: REQUESTS });
  const statuses = new Map<number, number>();
  const operations = new Map<string, Record<number, number>>();
  let state = await snapshot(null, true);
  for (const [index, plan] of plans.entries()) {
    const sent = materialize(plan, PATHS.get(`${plan.server} ${plan.operationId}`)!);
    const describe = () => `seed ${SEED}, request ${index}: ${sent.method} ${sent.url.slice(0, 300)} ${sent.body?.toString('utf8').slice(0, 300) ?? ''}`;
    const response = await fetch(sent.url, {
      method: sent.method,
      headers: sent.contentType ? { 'content-type': sent.contentType } : {},
      body: sent.body ? new Uint8Array(sent.body) : undefined,
    });
    const text = await response.text();
    let answer: any = null;
    try {
      answer = JSON.parse(text);
    } catch {
      assert.fail(`the answer is not JSON (${describe()}): ${response.status} ${text.slice(0, 200)}`);
    }
    const status = response.status;
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    const byStatus = operations.get(`${plan.server} ${plan.operationId}`) ?? {};
    byStatus[status] = (byStatus[status] ?? 0) + 1;
    operations.set(`${plan.server} ${plan.operationId}`, byStatus);
    const agentFailed = status === 502 && plan.server === 'gateway' && answer?.receipt?.id !== undefined;
    assert.ok(status < 500 || agentFailed, `${status} ${text.slice(0, 300)} (${describe()})`);
    if (plan.server === 'gateway') await gateway.running.outbox.drain();
    const now = await snapshot(state, plan.server === 'gateway');
    if (status >= 400 && status < 500) assert.deepEqual(now, state, `a refused request (${status} ${text.slice(0, 200)}) changed the ledger (${describe()})`);
    learn(plan, status, answer);
    state = now;
  }
  // Every operation of both documents was exercised, and the answers were not all one kind.
  assert.equal(operations.size, clearingTable.length + gatewayTable.length, `operations not reached: ${[...PATHS.keys()].filter((k) => !operations.has(k)).join(', ')}`);
  assert.ok((statuses.get(200) ?? 0) > REQUESTS / 10, `too few accepted requests: ${JSON.stringify([...statuses])}`);
  console.log(`fuzz seed ${SEED}: ${REQUESTS} requests, statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}; by operation ${JSON.stringify(Object.fromEntries(operations))}`);
});
