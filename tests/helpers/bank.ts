/**
 * The bank test's machinery (issue 8 §7, issue 12 §4): a reference binding in a process of its
 * own (`holon clearing serve`), gateway processes pointed at it, a seeded load of mixed callers,
 * and the books checked after the drain. Money is integer micro-units.
 *
 * Settings (environment, all optional):
 * - `HOLON_BANK_SEED`: the seed of every random choice (default: random; printed);
 * - `HOLON_BANK_ROUNDS`: kill -9 rounds (default 4, at most 100);
 * - `HOLON_BANK_CALLERS`: concurrent callers (default 50, at most 200).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Knex } from 'knex';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { envNumber } from '../../src/config/env.ts';
import { openDatabase, type Database } from '../../src/db/index.ts';
import { PLATFORM_FEES } from '../../src/clearing/settlements.ts';
import { PLATFORM_ACCOUNT } from '../../src/contracts/split.ts';
import { HttpClearingPort } from '../../src/gateway/clearing.ts';
import type { Receipt } from '../../src/gateway/receipts.ts';
import { BIN, closedPort } from './cli.ts';
import { EXAMPLE_AGENTS, FIXTURE_AGENTS, micros, waitFor } from './gateway.ts';
import { spawnGateway, type GatewayChild } from './gateway-child.ts';

/** A whole number from the environment variable `name`, within 1..`max`, else `fallback`. Throws naming the range and the default. */
const setting = (name: string, what: string, fallback: number, max: number): number => envNumber(process.env, { name, what, default: fallback, min: 1, max, integer: true });

/** The bank test's settings: seed, rounds and callers (see the module comment). */
export function bankSettings(): { seed: number; rounds: number; callers: number } {
  return {
    seed: setting('HOLON_BANK_SEED', 'the seed of every random choice', randomInt(1, 2 ** 31 - 1), 2 ** 31 - 1),
    rounds: setting('HOLON_BANK_ROUNDS', 'kill -9 rounds', 4, 100),
    callers: setting('HOLON_BANK_CALLERS', 'concurrent callers', 50, 200),
  };
}

/** A seeded generator of floats in [0, 1) (mulberry32): the same seed, the same choices. */
export function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The mandate every bank call runs under: issued by the dev account, which pays; a budget no round exhausts. */
export const BANK_MANDATE = 'dev/bank';

/** What the test funds the dev account with at the binding, besides the dev gateway's own demo credit. */
const FUNDING_MICROS = micros('2000.00');

/** A process of `holon clearing serve` on a fixed port, restartable on it. */
export interface BindingProcess {
  url: string;
  /** `kill -9`; resolves once the process is gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port and data; resolves once it listens. */
  restart(): Promise<void>;
  /** SIGTERM; resolves once the process is gone. */
  stop(): Promise<void>;
}

/** Where a bank run keeps its data: a data directory (PGlite `gateway/`, `clearing/`) and, on Postgres, one database both use. */
export type Store = { db: string; database_url?: string };

/** Starts the reference binding in a process of its own on `store` (its own PGlite directory, or the store's Postgres). */
export async function startBinding(store: Store): Promise<BindingProcess> {
  const port = await closedPort();
  let child: ChildProcess;
  let exited: Promise<void>;
  const launch = () =>
    new Promise<void>((resolve, reject) => {
      const env = { ...process.env, HOLON_LOG_LEVEL: 'silent', ...(store.database_url ? { DATABASE_URL: store.database_url } : {}) };
      if (!store.database_url) delete env.DATABASE_URL;
      child = spawn(process.execPath, [BIN, 'clearing', 'serve', '--port', String(port), '--db', path.join(store.db, 'clearing')], { env, stdio: ['ignore', 'pipe', 'inherit'] });
      exited = new Promise((done) => child.once('exit', () => done()));
      let seen = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (seen.includes('listening')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`the binding exited (${code}) before it listened: ${seen}`)));
    });
  await launch();
  return {
    url: `http://127.0.0.1:${port}`,
    kill: () => (child.kill('SIGKILL'), exited),
    restart: launch,
    stop: () => (child.kill('SIGTERM'), exited),
  };
}

/** Writes the bank mandate into `<store.db>/mandates` and returns that directory. */
export async function bankMandates(store: Store, total = '100000.00'): Promise<string> {
  const dir = path.join(store.db, 'mandates');
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'bank.yaml'), `id: ${BANK_MANDATE}\nissuer: dev\ngrantee: dev/bank\nallow: { agents: ["*"], capabilities: ["*"] }\nbudget: { total: "${total}", currency: EUR }\ndelegation: { max_depth: 2 }\n`);
  return dir;
}

/**
 * Starts a gateway process on `store` settling with `binding`, the bank mandate as its `/mcp`
 * mandate, on `port` (0: any free one).
 */
export function startBankGateway(store: Store, binding: BindingProcess, mandate_dir: string, port = 0): Promise<GatewayChild> {
  return spawnGateway(
    { port, ...store, clearing_url: binding.url, agent_dirs: [FIXTURE_AGENTS, EXAMPLE_AGENTS], mandate_dir, exclude: [], agents_host_port: null },
    { HOLON_MCP_MANDATE: BANK_MANDATE },
  );
}

/** Funds the dev account at the binding (once per store: the transaction id is fixed). */
export async function fundDev(binding: BindingProcess, store: Store): Promise<void> {
  await new HttpClearingPort(binding.url).credit(`bank-funding:${path.basename(store.db)}`, 'dev', FUNDING_MICROS, 'bank test funding', true);
}

/** The kinds of call the load mixes (issue 8 §7). */
export const CALL_KINDS = ['per_run', 'royalty', 'per_unit', 'quote', 'delegating', 'capability', 'slow', 'mcp'] as const;
type Kind = (typeof CALL_KINDS)[number];

/** The body of a `POST /v0/calls` of `kind` (the MCP kind calls `call_agent` with the same fields). */
function bodyOf(kind: Kind, random: () => number): Record<string, unknown> {
  const words = Array.from({ length: 1 + Math.floor(random() * 400) }, (_, i) => `w${i}`).join(' ');
  switch (kind) {
    case 'per_run':
      return { agent: 'acme/table-extract', input: { text: 'pens;2;1.50\npaper;1;4.00' } };
    case 'royalty':
    case 'mcp':
      return { agent: 'lena/table-extract-plus', input: { text: 'item;qty\npens;2', header: true } };
    case 'per_unit':
      return { agent: 'holon-labs/word-stats', input: { text: words } };
    case 'quote':
      return { agent: 'acme/estimate', input: { tasks: words.split(' ').slice(0, 1 + Math.floor(random() * 5)) } };
    case 'delegating':
      return { agent: 'holon-labs/invoice-pipeline', input: { invoice: random() < 0.8 ? 'pens;2;1.50\npaper;1;4.00' : 'no table here' } };
    case 'capability':
      return { capability: 'extraction.table', input: { text: 'a;b\nc;d' } };
    case 'slow':
      return { agent: 'gt/run', input: { sleep_ms: Math.floor(random() * 800) } };
  }
}

/** What the load saw: every answer by status, and the receipts of the calls answered 200 (which must be billed and succeeded). */
export interface LoadTally {
  sent: number;
  by_status: Record<string, number>;
  succeeded: Map<string, { billed: boolean; total: string }>;
}

/** A running load: `stop()` ends it once every caller's call in flight has answered (or failed). */
export interface Load {
  tally: LoadTally;
  stop(): Promise<void>;
}

/** One call of `kind` to the gateway at `url`; returns the status (or `unreachable`) and the receipt of a 200. */
async function callOnce(url: string, kind: Kind, body: Record<string, unknown>): Promise<{ status: string; receipt?: Receipt }> {
  if (kind === 'mcp') {
    const client = new Client({ name: 'bank', version: '1.0.0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
      const result = await client.callTool({ name: 'call_agent', arguments: body });
      const structured = result.structuredContent as { receipt?: Receipt } | undefined;
      return { status: result.isError ? 'mcp_error' : 'mcp_200', receipt: result.isError ? undefined : structured?.receipt };
    } catch {
      return { status: 'unreachable' };
    } finally {
      await client.close().catch(() => undefined);
    }
  }
  try {
    const response = await fetch(`${url}/v0/calls`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ mandate: BANK_MANDATE, ...body }) });
    const answer = (await response.json()) as { receipt?: Receipt };
    return { status: String(response.status), receipt: response.status === 200 ? answer.receipt : undefined };
  } catch {
    return { status: 'unreachable' };
  }
}

/**
 * Starts `callers` concurrent callers, each calling one of `urls()` (picked at random per call:
 * the gateways alive now) with a kind picked at random, until stopped.
 */
export function startLoad(urls: () => string[], callers: number, random: () => number): Load {
  const tally: LoadTally = { sent: 0, by_status: {}, succeeded: new Map() };
  let running = true;
  const caller = async () => {
    while (running) {
      const targets = urls();
      if (targets.length === 0) {
        await sleep(50);
        continue;
      }
      const url = targets[Math.floor(random() * targets.length)];
      const kind = CALL_KINDS[Math.floor(random() * CALL_KINDS.length)];
      tally.sent++;
      const { status, receipt } = await callOnce(url, kind, bodyOf(kind, random));
      tally.by_status[status] = (tally.by_status[status] ?? 0) + 1;
      if (receipt) tally.succeeded.set(receipt.id, { billed: receipt.billed, total: receipt.cost.total });
      // A gateway down for a restart refuses at once: wait a little rather than spin.
      if (status === 'unreachable') await sleep(100);
    }
  };
  const all = Promise.all(Array.from({ length: callers }, caller));
  return {
    tally,
    stop: async () => {
      running = false;
      await all;
    },
  };
}

/**
 * Waits (bounded: 120 s) until the gateway at `url` has posted every settlement and the binding
 * holds nothing for `payer`. A release still pending for a hold the binding never opened (its
 * open-hold answer was lost when the binding died) may wait for that hold's expiry, by design
 * (issue 8 §1.3): it does not hold the drain, and `checkBooks` checks that no such hold exists.
 */
export async function drained(url: string, binding: BindingProcess, payer = 'dev'): Promise<void> {
  const clearing = new HttpClearingPort(binding.url);
  let seen: unknown = null;
  try {
    await waitFor(async () => {
      await sleep(200);
      try {
        const response = await fetch(`${url}/v0/settlements?status=pending`);
        const pending = ((await response.json()) as { settlements: Array<{ operation: string; last_error: string | null }> }).settlements;
        seen = pending;
        if (pending.some((intent) => intent.operation === 'settle')) return false;
        return (await clearing.readBalance(payer)).reserved === 0;
      } catch (error) {
        seen = (error as Error).message;
        return false;
      }
    }, 120_000);
  } catch (error) {
    throw new Error(`not drained after 120 s; pending: ${JSON.stringify(seen).slice(0, 2000)}`, { cause: error });
  }
}

/** Opens the gateway's and the binding's databases of a stopped run (one Postgres database, or the two PGlite directories). */
export async function openBooks(store: Store): Promise<{ gateway: Database; clearing: Database; close(): Promise<void> }> {
  if (store.database_url) {
    const database = await openDatabase({ url: store.database_url });
    return { gateway: database, clearing: database, close: () => database.close() };
  }
  const gateway = await openDatabase({ dir: path.join(store.db, 'gateway') });
  const clearing = await openDatabase({ dir: path.join(store.db, 'clearing') });
  return {
    gateway,
    clearing,
    close: async () => {
      await gateway.close();
      await clearing.close();
    },
  };
}

const documentOf = (row: { document: unknown }): Receipt => (typeof row.document === 'string' ? JSON.parse(row.document) : row.document) as Receipt;
const accountOf = (to: string) => (to === PLATFORM_ACCOUNT ? PLATFORM_FEES : to);

/**
 * The books after the drain (issue 8 §7), asserted to the micro-unit: no receipt `running`, no
 * open reservation or hold, no pending or abandoned settlement; the postings sum to zero; every
 * billed receipt has exactly one settlement (`settle:<gateway>:<receipt>`) and nothing else has
 * one; every account's postings from this gateway's settlements equal what its receipts say
 * (splits in, charges out), and its balance equals those plus its funding; every call answered
 * 200 is on the books as succeeded and billed as answered. Returns figures for the log.
 */
export async function checkBooks(gateway: Knex, clearing: Knex, tally: LoadTally): Promise<Record<string, number>> {
  const count = async (query: Knex.QueryBuilder) => Number((await query.count({ n: '*' }).first())!.n);
  assert.equal(await count(gateway('gateway_receipts').where({ status: 'running' })), 0, 'no receipt is left running');
  assert.equal(await count(gateway('gateway_reservations').where({ status: 'open' })), 0, 'no budget reservation is left open');
  assert.equal(await count(clearing('clearing_holds').where({ status: 'open' })), 0, 'no hold is left open at the binding');
  assert.equal(await count(gateway('gateway_settlement_intents').where({ status: 'abandoned' })), 0, 'no settlement intent is abandoned');
  assert.equal(await count(gateway('gateway_settlement_intents').where({ status: 'pending', operation: 'settle' })), 0, 'every settlement is posted');
  // A release may wait for the expiry of a hold whose open-hold answer was lost (issue 8 §1.3): only if that hold was never opened.
  const waiting = (await gateway('gateway_settlement_intents').where({ status: 'pending' }).pluck('body')).map((body) => (typeof body === 'string' ? JSON.parse(body) : body).holdId as string);
  assert.equal(await count(clearing('clearing_holds').whereIn('hold_id', waiting)), 0, 'a release still pending is for a hold that never opened');
  const total = await clearing('clearing_postings').sum({ s: 'delta' }).first();
  assert.equal(Number(total!.s), 0, 'the postings sum to zero');

  const gateway_id = (await gateway('gateway_identity').first('id')).id as string;
  const receipts = (await gateway('gateway_receipts').select('document')).map(documentOf);
  const expected = new Map<string, number>();
  const add = (account: string, amount_micros: number) => expected.set(account, (expected.get(account) ?? 0) + amount_micros);
  const billed = new Set<string>();
  for (const receipt of receipts) {
    if (!receipt.billed) continue;
    billed.add(receipt.id);
    add(receipt.payer, -micros(receipt.cost.own));
    for (const split of receipt.splits) add(accountOf(split.to), micros(split.amount));
  }
  const settles = (await clearing('clearing_transactions').where('txn_id', 'like', `settle:${gateway_id}:%`).pluck('txn_id')) as string[];
  const settled = settles.map((txn) => txn.slice(`settle:${gateway_id}:`.length));
  assert.equal(new Set(settled).size, settled.length, 'no receipt is settled twice');
  assert.deepEqual(new Set(settled), billed, 'every billed receipt has exactly one settlement, and nothing else has one');

  const movements = await clearing('clearing_postings')
    .where('txn_id', 'like', `settle:${gateway_id}:%`)
    .orWhere('txn_id', 'like', `royalty:${gateway_id}:%`)
    .groupBy('account')
    .select('account', clearing.raw('sum(delta)::bigint AS net'));
  const posted = new Map(movements.map((row) => [row.account as string, Number(row.net)]));
  for (const account of new Set([...expected.keys(), ...posted.keys()])) {
    assert.equal(posted.get(account) ?? 0, expected.get(account) ?? 0, `${account}: the settlements posted equal its receipts and splits`);
  }
  const balances = await clearing('clearing_postings').groupBy('account').select('account', clearing.raw('sum(delta)::bigint AS balance'));
  const funding = await clearing('clearing_postings')
    .whereNot('txn_id', 'like', `settle:${gateway_id}:%`)
    .andWhereNot('txn_id', 'like', `royalty:${gateway_id}:%`)
    .groupBy('account')
    .select('account', clearing.raw('sum(delta)::bigint AS net'));
  const funded = new Map(funding.map((row) => [row.account as string, Number(row.net)]));
  // The balance the binding keeps (a holder's row, or a machinery account's stripes), not only the sum of its postings.
  const stored = await clearing('clearing_accounts as a').select(
    'a.id',
    clearing.raw(`CASE WHEN a.kind = 'holder' THEN a.balance ELSE (SELECT coalesce(sum(m.balance), 0) FROM clearing_machinery_balances m WHERE m.account = a.id) END::bigint AS balance`),
  );
  const kept = new Map(stored.map((row) => [row.id as string, Number(row.balance)]));
  for (const { account, balance } of balances) {
    assert.equal(Number(balance), (funded.get(account) ?? 0) + (expected.get(account) ?? 0), `${account}: the postings equal its funding plus its receipts`);
    assert.equal(kept.get(account), Number(balance), `${account}: the balance the binding keeps equals its postings`);
  }

  const byId = new Map(receipts.map((receipt) => [receipt.id, receipt]));
  for (const [id, answered] of tally.succeeded) {
    const stored = byId.get(id);
    assert.ok(stored, `receipt ${id}, answered 200, is on the books`);
    assert.equal(stored.status, 'succeeded', id);
    assert.equal(stored.billed, answered.billed, id);
    assert.equal(stored.cost.total, answered.total, id);
  }
  return { receipts: receipts.length, billed: billed.size, accounts: balances.length, restarted: receipts.filter((r) => r.error?.code === 'gateway_restarted').length };
}
