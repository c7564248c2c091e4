/**
 * A hosted gateway for tests (gateway §7): `startHostedGateway` on a fresh store (PGlite, or a
 * database of its own on `DATABASE_URL`) with the test agents, explicit settings (an admin key,
 * 5.00 EUR of sign-up credit), and helpers to sign accounts up.
 */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type { Knex } from 'knex';
import pino, { type Logger } from 'pino';
import supertest from 'supertest';
import type TestAgent from 'supertest/lib/agent.js';
import type { RunningGateway } from '../../src/serve/gateway.ts';
import type { Resolve } from '../../src/hosted/egress.ts';
import type { PublishingHooks } from '../../src/hosted/extension.ts';
import { startHostedGateway } from '../../src/serve/hosted.ts';
import { readSettings, type HostedSettings } from '../../src/hosted/settings.ts';
import { FIXTURE_AGENTS, freshStore } from './gateway.ts';
import { setUp, standIn, useOpened } from './hooks.ts';

/** The admin key of every test hosted gateway. */
export const ADMIN_KEY = 'test-admin-key-0123456789abcdef0123456789';
/** The file secret of test gateways (signs file links, seals endpoint credentials). */
export const FILE_SECRET = 'hosted-test-file-secret-0123456789abcdef';

/**
 * An environment that `readSettings` accepts in production (gateway §7 Operating: every required
 * variable set and well formed), for tests that change one variable and expect its refusal.
 */
export const PRODUCTION_ENV: Readonly<Record<string, string>> = {
  NODE_ENV: 'production',
  DATABASE_URL: 'postgres://db.example/holon',
  HOLON_PUBLIC_URL: 'https://holon.example',
  HOLON_FILE_SECRET: 'f'.repeat(32),
  HOLON_ADMIN_KEY: 'a'.repeat(32),
  HOLON_TRUST_PROXY: '1',
  HOLON_SITE_URL: 'https://site.example',
};

/** A signed-up account: its handle, keys and starter mandate. */
export interface TestAccount {
  handle: string;
  human: string;
  human_prefix: string;
  agent: string;
  agent_prefix: string;
  mandate: string;
}

/** A running hosted test gateway. */
export interface TestHosted {
  running: RunningGateway;
  http: TestAgent;
  store: { db: string; database_url?: string };
  settings: HostedSettings;
  /** Signs a new account up (`POST /v0/signup`), a unique handle unless given. */
  signup(handle?: string): Promise<TestAccount>;
  close(options?: { keep?: boolean }): Promise<void>;
}

/** A unique handle valid for sign-up (`h-1a2b3c4d`). */
export const uniqueAccount = (prefix = 'h'): string => `${prefix}-${randomUUID().slice(0, 8)}`;

/** Options of {@link startTestHosted}. */
export interface TestHostedOptions {
  /** Reuse this store (a restart); default: a fresh one. */
  store?: { db: string; database_url?: string };
  /** Settings over the test defaults (admin key, file secret, generous rate limits). */
  settings?: Partial<HostedSettings>;
  /** Default: silent (or `HOLON_LOG_LEVEL`). */
  logger?: Logger;
  /** Called when the gateway must stop (default: `startHostedGateway`'s). */
  stop?: (error: unknown) => void;
  /** Stand-ins for the publishing checks. */
  publishing?: Partial<PublishingHooks>;
  /** Certificate authorities the guarded client trusts (an https test agent's certificate). */
  ca?: string;
  /** Agent directories (default: the test agents). */
  agent_dirs?: readonly string[];
  /** The files' clock (default `Date.now`). */
  clock?: () => number;
  /** A clearing binding to settle with (default: the reference binding in this process). */
  clearing_url?: string;
  /** The resolver of authors' endpoint hosts (default: the system's). */
  resolve?: Resolve;
}

/** Starts a hosted gateway for tests; `settings` override the defaults above. */
export async function startTestHosted(options: TestHostedOptions = {}): Promise<TestHosted> {
  const store = options.store ?? (await freshStore());
  // Generous rate limits unless a test sets its own: every test request comes from 127.0.0.1.
  const base = readSettings({ HOLON_ADMIN_KEY: ADMIN_KEY, HOLON_FILE_SECRET: FILE_SECRET, HOLON_RATE_ADDRESS: '100000', HOLON_RATE_ACCOUNT: '100000', HOLON_RATE_ADMIN: '100000', HOLON_RATE_SIGNUP: '100000' });
  const settings: HostedSettings = { ...base, ...options.settings };
  const running = await startHostedGateway({
    port: 0,
    ...store,
    settings,
    agent_dirs: options.agent_dirs ?? [FIXTURE_AGENTS],
    clock: options.clock,
    clearing_url: options.clearing_url,
    resolve: options.resolve,
    exclude: [],
    agents_host_port: null,
    stop: options.stop,
    publishing: options.publishing,
    ca: options.ca,
    logger: options.logger ?? pino({ level: process.env.HOLON_LOG_LEVEL ?? 'silent' }),
  });
  const http = supertest(running.server);
  return {
    running,
    http,
    store,
    settings,
    async signup(handle = uniqueAccount()) {
      const response = await http.post('/v0/signup').send({ handle, email: `${handle}@example.test` });
      if (response.status !== 201) throw new Error(`signup ${handle}: ${response.status} ${JSON.stringify(response.body)}`);
      const body = response.body;
      return {
        handle: body.handle,
        human: body.human_key.key,
        human_prefix: body.human_key.prefix,
        agent: body.agent_key.key,
        agent_prefix: body.agent_key.prefix,
        mandate: body.mandate,
      };
    },
    async close({ keep = false } = {}) {
      await running.close();
      if (!keep) await rm(store.db, { recursive: true, force: true });
    },
  };
}

/**
 * A hosted test gateway ({@link startTestHosted}) started before the tests of the current scope
 * and closed after them. `options` may be a function, called in the `before` hook, for options
 * made of what earlier hooks opened (a GitHub stand-in's URL, an agent's certificate).
 */
export function useTestHosted(options: TestHostedOptions | (() => TestHostedOptions) = {}): TestHosted {
  return useOpened('the hosted test gateway', () => startTestHosted(typeof options === 'function' ? options() : options), (hosted) => hosted.close());
}

/** An account signed up on `hosted` (`POST /v0/signup`, 5.00 EUR of credit, its two keys) before the tests of the current scope. */
export function useHostedAccount(hosted: TestHosted): TestAccount {
  let account: TestAccount | undefined;
  setUp(async () => {
    account = await hosted.signup();
  });
  return standIn(() => account, 'the hosted account');
}

/** The `Authorization` header of a bearer key, for supertest's `.set(…)`. */
export const bearer = (key: string): { authorization: string } => ({ authorization: `Bearer ${key}` });

/**
 * Creates the mandate `<handle>/careful` for `account` (`POST /v0/mandates`): every agent, 3.00 EUR,
 * every call above 0.05 held for a human's approval (gateway §5 "Approvals"); answers its id.
 */
export async function carefulMandate(hosted: TestHosted, account: TestAccount): Promise<string> {
  await hosted.http.post('/v0/mandates').set(bearer(account.human)).send({ id: 'careful', grantee: `${account.handle}/bot`, allow: { agents: ['*'] }, approval: { above: '0.05' }, budget: { total: '3.00' } }).expect(201);
  return `${account.handle}/careful`;
}

/**
 * Idempotency claims whose receipt is missing or disagrees with them (gateway §7 "Idempotent
 * calls"): `running` must sit on a running receipt, `done` on a final one; `interrupted` on any.
 */
export async function inconsistentClaims(db: Knex): Promise<unknown[]> {
  const rows = await db('hosted_idempotency as c').leftJoin('gateway_receipts as r', 'r.id', 'c.receipt').select('c.idempotency_key', 'c.status', 'c.receipt', 'r.status as receipt_status');
  return rows.filter((row) => {
    if (row.receipt_status === null) return true;
    if (row.status === 'running') return row.receipt_status !== 'running';
    if (row.status === 'done') return row.receipt_status === 'running';
    return false;
  });
}
