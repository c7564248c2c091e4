/**
 * A dev gateway for tests (gateway §5): `startDevGateway` on a fresh data directory with the test
 * agents of `tests/fixtures/agents/` (one `agent.mjs`, `_shared/behave.mjs`, does what its input
 * says) and `examples/`, no example mandates, nothing excluded. On PGlite by default; with
 * `DATABASE_URL` set, the gateway and the reference binding both use that Postgres, shared by
 * every test: mandates and payers are unique per call of {@link TestGateway.mandate}, and tests
 * assert balance deltas, never absolute balances of shared accounts.
 *
 * Creating and migrating a PGlite directory takes seconds; a migrated, empty directory is
 * therefore built once per migration set (`holon-test-pglite-<hash>`, in `/dev/shm` when there is
 * one, else the temp directory) and copied for each gateway, which opens in about one second.
 *
 * Money is integer micro-units; `micros('0.10')` and `money(100_000)` convert at the edges.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { constants, rmSync } from 'node:fs';
import { access, cp, mkdir, mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import pino, { type Logger } from 'pino';
import supertest from 'supertest';
import type TestAgent from 'supertest/lib/agent.js';
import { startClearingServer, type RunningClearing } from '../../src/clearing/server.ts';
import type { MutualTls } from '../../src/clearing/tls.ts';
import { formatMoney, parseMoney, type Micros } from '../../src/contracts/money.ts';
import { refreshTemplate } from '../../src/db/template-build.ts';
import { HttpClearingPort, type ClearingPort, type ClearingTimeouts } from '../../src/gateway/clearing.ts';
import type { OutboxSettings } from '../../src/gateway/outbox.ts';
import { budgetOf, budgetView, storeMandate } from '../../src/gateway/mandates.ts';
import type { Receipt, ReceiptTree } from '../../src/gateway/receipts.ts';
import { DEV_ACCOUNT, startDevGateway, type DevGatewayOptions } from '../../src/serve/dev.ts';
import type { RunningGateway } from '../../src/serve/gateway.ts';
import { standIn, useOpened } from './hooks.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The test agents (committed fixtures). */
export const FIXTURE_AGENTS = path.join(ROOT, 'tests', 'fixtures', 'agents');

/** The demo agents, loaded too so that a shared Postgres always lists the same catalogue. */
export const EXAMPLE_AGENTS = path.join(ROOT, 'examples');

/** Decimal string → micro-units. */
export const micros = (text: string): Micros => parseMoney(text);

/** Micro-units → decimal string, as receipts show it. */
export const money = (amount_micros: Micros): string => formatMoney(amount_micros);

/** A unique account handle (`p-1a2b3c4d`), valid as a mandate issuer. */
export const uniqueHandle = (prefix = 'p'): string => `${prefix}-${randomUUID().slice(0, 8)}`;

/** Whether the suite runs on a shared Postgres (`DATABASE_URL`). */
export const onPostgres = (): boolean => Boolean(process.env.DATABASE_URL);

/** The mandate a test calls under: its id and the account that pays. */
export interface TestMandate {
  id: string;
  payer: string;
}

/** A running test gateway. */
export interface TestGateway {
  running: RunningGateway;
  /** supertest on the gateway's server. */
  http: TestAgent;
  /** The clearing binding the gateway settles with (`running.clearing_url`). */
  clearing: ClearingPort;
  /** The data directory (PGlite `gateway/` and `clearing/`). */
  dir: string;
  /** Where its data lives (the data directory and, on Postgres, its own database): pass it to restart on the same data. */
  store: { db: string; database_url?: string };
  /** A new clearing account credited with `amount_micros` (default 100.00); returns its handle. */
  payer(amount_micros?: Micros): Promise<string>;
  /** Credits an existing account (e.g. an author paying its own `included` calls). */
  fund(account: string, amount_micros: Micros): Promise<void>;
  /**
   * A root mandate issued and paid by a new funded payer: allows everything, 10.00 EUR,
   * `fields` override the document (merged at the top level).
   */
  mandate(fields?: Record<string, unknown>, fund_micros?: Micros): Promise<TestMandate>;
  /** `POST /v0/calls`. */
  call(body: Record<string, unknown>): supertest.Test;
  /** Posts every pending settlement intent now (`outbox.drain()`). */
  settle(): Promise<void>;
  /** An account's balance, micro-units (0 for an account the binding does not know). */
  balance(account: string): Promise<Micros>;
  /** Balances of several accounts, after posting pending settlements. */
  balances(accounts: readonly string[]): Promise<Record<string, Micros>>;
  /** What an account holds on open holds, micro-units. */
  reserved(account: string): Promise<Micros>;
  /** Every account of the binding, machinery (`platform:fees`, `external:*`) included. */
  allAccounts(): Promise<string[]>;
  /** A receipt (a tree) by id, through `GET /v0/receipts/{id}`. */
  receipt(id: string): Promise<ReceiptTree>;
  /** A derived sub-mandate as `GET /v0/mandates/{id}` would show it, read from the database (no door serves it: gateway §3). */
  derivedMandate(id: string): Promise<{ mandate: Record<string, unknown>; budget: ReturnType<typeof budgetView> }>;
  /** Stops the gateway; removes the data directory unless `keep`. */
  close(options?: { keep?: boolean }): Promise<void>;
}

/** Options of {@link startTestGateway}. */
export interface TestGatewayOptions {
  /** Reuse this store (a restart); default: a fresh one ({@link freshStore}). */
  store?: { db: string; database_url?: string };
  /** Settle with this binding instead of the one `startDevGateway` runs in-process. */
  clearing_url?: string;
  /** Bounds on clearing requests (default: `startDevGateway`'s). */
  clearing_timeouts?: ClearingTimeouts;
  /** The gateway's side of mutual TLS to `clearing_url` (issue 23 §4); the helper's own funding client uses it too. Default: none. */
  clearing_tls?: MutualTls;
  /** How the outbox posts (default: `startDevGateway`'s). */
  outbox?: Partial<OutboxSettings>;
  /** Answer calls with `Server-Timing` (default: off, whatever the environment says). */
  server_timing?: boolean;
  /** Directories of agents listed besides the fixtures and examples (e.g. agents written by the test). */
  extra_agent_dirs?: readonly string[];  /** The gateway's logger (default: silent, or `HOLON_LOG_LEVEL`). */
  logger?: Logger;
}

/** Where test data lives: memory-backed `/dev/shm` when there is one (copies and fsyncs cost nothing), else the temp directory. */
async function scratchRoot(): Promise<string> {
  try {
    await access('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}

/**
 * A migrated, empty PGlite directory for the current migrations and PGlite, built once and reused
 * across test files and test processes: the product's template (`src/db/template-build.ts`), kept
 * in the scratch directory rather than `dist/`, so copies cost nothing on `/dev/shm`.
 */
async function templateDir(): Promise<string> {
  return path.join(await refreshTemplate(path.join(await scratchRoot(), 'holon-test-pglite')), 'data');
}

/** The data directories this test process made; removed when it exits, whatever closed or not (each is ~80 MB on PGlite, in memory). */
const dataDirs = new Set<string>();
process.once('exit', () => {
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
});

/** A fresh data directory, removed when the test process exits: on PGlite, `gateway/` and `clearing/` copied from the migrated template. */
export async function freshDataDir(): Promise<string> {
  const dir = await mkdtemp(path.join(await scratchRoot(), 'holon-gateway-test-'));
  dataDirs.add(dir);
  if (!onPostgres()) {
    const template = await templateDir();
    await cp(template, path.join(dir, 'gateway'), { recursive: true });
    await cp(template, path.join(dir, 'clearing'), { recursive: true });
  }
  return dir;
}

/**
 * Where a test gateway keeps its data, as `startDevGateway` options: a fresh data directory and, on
 * Postgres, a database of its own on the `DATABASE_URL` server, so no gateway sees another's
 * agents, mandates or pending settlements.
 */
export async function freshStore(): Promise<{ db: string; database_url?: string }> {
  const db = await freshDataDir();
  const base = process.env.DATABASE_URL;
  if (!base) return { db };
  const name = `holon_test_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(base);
  url.pathname = `/${name}`;
  return { db, database_url: url.toString() };
}

/**
 * Where `openDatabase` finds one side of a store: its own Postgres database (the gateway and the
 * in-process binding share it), else the PGlite directory `<db>/gateway` or `<db>/clearing`.
 */
export function storeTarget(store: { db: string; database_url?: string }, side: 'gateway' | 'clearing'): { url: string } | { dir: string } {
  return store.database_url ? { url: store.database_url } : { dir: path.join(store.db, side) };
}

/** Starts a gateway for tests. */
export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const store = options.store ?? (await freshStore());
  const dir = store.db;
  const mandate_dir = path.join(dir, 'mandates');
  await mkdir(mandate_dir, { recursive: true });
  let running: RunningGateway;
  try {
    running = await startDevGateway({
      port: 0,
      ...store,
      agent_dirs: [FIXTURE_AGENTS, EXAMPLE_AGENTS, ...(options.extra_agent_dirs ?? [])],
      mandate_dir,
      exclude: [],
      ...(options.clearing_url ? { clearing_url: options.clearing_url } : {}),
      ...(options.clearing_timeouts ? { clearing_timeouts: options.clearing_timeouts } : {}),
      clearing_tls: options.clearing_tls ?? null,
      ...(options.outbox ? { outbox: options.outbox } : {}),
      server_timing: options.server_timing ?? false,
      logger: options.logger ?? pino({ level: process.env.HOLON_LOG_LEVEL ?? 'silent' }),
    });
  } catch (error) {
    if (!options.store) await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const clearing = new HttpClearingPort(running.clearing_url, undefined, options.clearing_tls ?? null);
  const http = supertest(running.server);
  const payers: string[] = [];

  const fund = async (account: string, amount_micros: Micros) => {
    await clearing.credit(`fund:${account}:${randomUUID()}`, account, amount_micros, 'gateway test funding', true);
  };
  const payer = async (amount_micros: Micros = 100_000_000) => {
    const handle = uniqueHandle();
    await clearing.createAccount(handle);
    payers.push(handle);
    if (amount_micros > 0) await fund(handle, amount_micros);
    return handle;
  };
  const balance = async (account: string) => {
    try {
      return (await clearing.readBalance(account)).balance;
    } catch (error) {
      if ((error as { status?: number }).status === 404) return 0;
      throw error;
    }
  };

  return {
    running,
    http,
    clearing,
    dir,
    store,
    payer,
    fund,
    async mandate(fields = {}, fund_micros) {
      const issuer = await payer(fund_micros);
      const document = {
        id: `${issuer}/tests`,
        issuer,
        grantee: `${issuer}/tester`,
        allow: { agents: ['*'], capabilities: ['*'] },
        budget: { total: '10.00', currency: 'EUR' },
        ...fields,
      };
      await storeMandate(running.db.knex, document, { parent: null, payer: issuer });
      return { id: document.id as string, payer: issuer };
    },
    call: (body) => http.post('/v0/calls').send(body),
    settle: () => running.outbox.drain(),
    balance,
    async balances(accounts) {
      await running.outbox.drain();
      const out: Record<string, Micros> = {};
      for (const account of accounts) out[account] = await balance(account);
      return out;
    },
    async reserved(account) {
      return (await clearing.readBalance(account)).reserved;
    },
    async allAccounts() {
      if (running.db.engine === 'postgres') return (await running.db.knex('clearing_accounts').pluck('id')) as string[];
      const listed = (await http.get('/v0/agents').expect(200)).body.agents as Array<{ id: string }>;
      const authors = listed.map((agent) => agent.id.split('/')[0]);
      return [...new Set([DEV_ACCOUNT, ...authors, ...payers, 'platform:fees', 'external:funding', 'external:adjustments'])];
    },
    async receipt(id) {
      const response = await http.get(`/v0/receipts/${id}`).expect(200);
      return response.body as ReceiptTree;
    },
    async derivedMandate(id) {
      const knex = running.db.knex;
      const row = await knex('gateway_mandates').where({ id }).whereNotNull('parent').first();
      assert.ok(row, `no derived mandate ${id}`);
      const mandate = typeof row.document === 'string' ? JSON.parse(row.document) : row.document;
      return { mandate, budget: budgetView(row.currency, await budgetOf(knex, id, micros(mandate.budget.total))) };
    },
    async close({ keep = false } = {}) {
      await running.close();
      if (!keep) await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A test gateway ({@link startTestGateway} with `options`) started before the tests of the
 * current scope (the file or a `describe`) and closed after them, its data removed.
 */
export function useTestGateway(options: TestGatewayOptions = {}): TestGateway {
  return useOpened('the test gateway', () => startTestGateway(options), (gateway) => gateway.close());
}

/**
 * A dev gateway as `holon serve` starts it (gateway §5: the dev account, its credit, the example
 * mandates of `examples/mandates`), on a fresh store, with the agents of `examples/`, no agents
 * host and a silent log; `options` override any of these.
 */
export async function startFreshDevGateway(options: Partial<DevGatewayOptions> = {}): Promise<RunningGateway> {
  return startDevGateway({ port: 0, ...(await freshStore()), agent_dirs: ['examples'], agents_host_port: null, exclude: [], logger: pino({ level: 'silent' }), ...options });
}

/** A {@link startFreshDevGateway} dev gateway started before the tests of the current scope and closed after them. */
export function useDevGateway(options: Partial<DevGatewayOptions> = {}): RunningGateway {
  return useOpened('the dev gateway', () => startFreshDevGateway(options), (gateway) => gateway.close());
}

/** Every receipt of a tree, depth first, the root first. */
export function flatten(tree: ReceiptTree): ReceiptTree[] {
  return [tree, ...tree.calls.flatMap(flatten)];
}

/** The sum of a receipt's splits, micro-units. */
export function splitsTotal(receipt: Receipt): Micros {
  return receipt.splits.reduce((sum, split) => sum + micros(split.amount), 0);
}

/** The differences `after − before`, per account. */
export function deltas(before: Record<string, Micros>, after: Record<string, Micros>): Record<string, Micros> {
  return Object.fromEntries(Object.keys(after).map((account) => [account, after[account] - (before[account] ?? 0)]));
}

/**
 * How the proxy loses the binding's answer to a request it did forward (the binding acted on it):
 * `reset` cuts the connection, `502` answers as a failing proxy would, `hang` never answers.
 */
export type LostAnswer = 'reset' | '502' | 'hang';

/** Which answers the switchable binding loses: those to requests on `path` (whose body contains `matching`, when given). */
export interface LostAnswers {
  path: string;
  answer: LostAnswer;
  matching?: string;
}

/**
 * The reference binding behind a switch: a proxy the gateway settles through, which can be taken
 * down (every connection is reset, as for a binding that cannot be reached) and brought back, and
 * can lose the answers to the requests of one path (`loseAnswers`; null: stop).
 */
export interface SwitchableBinding {
  url: string;
  down(): void;
  up(): void;
  loseAnswers(fault: LostAnswers | null): void;
  close(): Promise<void>;
}

/** The author account the switchable binding refuses to create, so settling with it is refused. */
export const REFUSED_ACCOUNT = 'gtbase';

/**
 * Starts the reference binding on PGlite in `<dir>/clearing` (even with `DATABASE_URL` set: a
 * binding of its own) and a switchable proxy in front of it, which also refuses to create the
 * account {@link REFUSED_ACCOUNT}.
 */
export async function startSwitchableBinding(dir: string): Promise<SwitchableBinding> {
  const clearing_dir = path.join(dir, 'clearing');
  try {
    await access(clearing_dir);
  } catch {
    await cp(await templateDir(), clearing_dir, { recursive: true });
  }
  const binding: RunningClearing = await startClearingServer({ target: { dir: clearing_dir }, port: 0, logger: pino({ level: 'silent' }) });
  let reachable = true;
  let lost: LostAnswers | null = null;
  const proxy: Server = createServer(async (req, res) => {
    if (!reachable) {
      req.socket.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.url === '/internal/reference/accounts' && JSON.parse(Buffer.concat(chunks).toString() || '{}').account === REFUSED_ACCOUNT) {
      res.writeHead(422, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: `this binding holds no account for ${REFUSED_ACCOUNT}`, code: 'invalid_request' }));
      return;
    }
    const answer = await fetch(`${binding.url}${req.url}`, {
      method: req.method,
      headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
      body: req.method === 'GET' || req.method === 'HEAD' ? undefined : Buffer.concat(chunks),
    });
    if (lost && req.url === lost.path && (lost.matching === undefined || Buffer.concat(chunks).toString().includes(lost.matching))) {
      if (lost.answer === 'reset') req.socket.destroy();
      if (lost.answer === '502') res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>502 Bad Gateway</h1>');
      return;
    }
    res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
    res.end(Buffer.from(await answer.arrayBuffer()));
  });
  proxy.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => proxy.once('listening', resolve).once('error', reject));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    down: () => {
      reachable = false;
    },
    up: () => {
      reachable = true;
    },
    loseAnswers: (fault) => {
      lost = fault;
    },
    async close() {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
      await binding.close();
    },
  };
}

/** A test gateway that settles through a {@link SwitchableBinding} of its own, on one fresh store. */
export interface SwitchableGateway {
  gateway: TestGateway;
  binding: SwitchableBinding;
  /** Stops both, the binding first (closing it ends any request it left hanging, so the gateway can stop), and removes the data directory. */
  close(): Promise<void>;
}

/**
 * Starts a switchable binding in a fresh store's data directory and a test gateway on that store
 * settling through it (`options` as for {@link startTestGateway}).
 */
export async function startSwitchableGateway(options: Omit<TestGatewayOptions, 'store' | 'clearing_url'> = {}): Promise<SwitchableGateway> {
  const store = await freshStore();
  const binding = await startSwitchableBinding(store.db);
  let gateway: TestGateway;
  try {
    gateway = await startTestGateway({ ...options, store, clearing_url: binding.url });
  } catch (error) {
    await binding.close();
    throw error;
  }
  return {
    gateway,
    binding,
    async close() {
      await binding.close();
      await gateway.close();
    },
  };
}

/**
 * A {@link startSwitchableGateway} gateway and its binding, started before the tests of the
 * current scope and stopped after them: `const { gateway, binding } = useSwitchableGateway()`.
 */
export function useSwitchableGateway(options: Omit<TestGatewayOptions, 'store' | 'clearing_url'> = {}): { gateway: TestGateway; binding: SwitchableBinding } {
  const opened = useOpened('the switchable gateway', () => startSwitchableGateway(options), (switchable) => switchable.close());
  return { gateway: standIn(() => opened.gateway, 'the switchable gateway'), binding: standIn(() => opened.binding, 'the switchable binding') };
}

/** Polls `check` every 10 ms until it answers something other than null, undefined or false; fails after `timeout_ms`. */
export async function waitFor<T>(check: () => Promise<T | null | undefined | false>, timeout_ms = 10_000): Promise<T> {
  const deadline = Date.now() + timeout_ms;
  for (;;) {
    const value = await check();
    if (value !== null && value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`waitFor: nothing after ${timeout_ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
