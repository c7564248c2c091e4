/**
 * Test fixtures for the reference binding: a migrated database (Postgres when `DATABASE_URL` is
 * set, else in-memory PGlite), the binding's app behind supertest, run-unique identifiers so
 * tests share one Postgres database without seeing each other, and the assertions the clearing
 * test files share.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import supertest from 'supertest';
import type TestAgent from 'supertest/lib/agent.js';
import { openDatabase, type Database } from '../../src/db/index.ts';
import { createClearingApp } from '../../src/clearing/app.ts';
import type { OperationName } from '../../src/clearing/capabilities.ts';
import { useOpened } from './hooks.ts';

/** The database the suite runs on: the `DATABASE_URL` server, else a fresh in-memory PGlite. */
export function openTestDatabase(): Promise<Database> {
  const url = process.env.DATABASE_URL;
  return openDatabase(url ? { url } : { memory: true });
}

/**
 * A database nobody else writes to: a fresh in-memory PGlite, or with `DATABASE_URL` a new
 * database on that server (dropped by `dispose`). For tests whose figures include the machinery
 * accounts, which every other test posts to as well.
 */
export async function openFreshDatabase(): Promise<{ db: Database; dispose(): Promise<void> }> {
  const url = process.env.DATABASE_URL;
  if (!url) {
    const db = await openDatabase({ memory: true });
    return { db, dispose: () => db.close() };
  }
  const name = `holon_test_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(sql);
    await client.end();
  };
  await admin(`CREATE DATABASE ${name}`);
  const own = new URL(url);
  own.pathname = `/${name}`;
  const db = await openDatabase({ url: own.toString() });
  return {
    db,
    async dispose() {
      await db.close();
      await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/** A unique prefix for identifiers created by one test. */
export function unique(label: string): string {
  return `${label}-${randomUUID().slice(0, 8)}`;
}

/** An `expiresAt` one hour from now, for a hold that stays open through the test. */
export function inOneHour(): string {
  return new Date(Date.now() + 3_600_000).toISOString();
}

/** The §6.2 figures of an account, as read-balance answers them. */
export interface BalanceFigures {
  account: string;
  balance: number;
  available: number;
  reserved: number;
  pending: number;
}

/** A binding under test: its HTTP agent, its database, and helpers to make and read accounts. */
export interface TestBinding {
  db: Database;
  http: TestAgent;
  /** Creates a holder account (extension door) and returns its id. */
  account(label?: string): Promise<string>;
  /** Creates an account and credits it with `amount` micro-units; returns its id. */
  funded(amount: number, label?: string): Promise<string>;
  /** Reads an account's §6.2 figures, asserting the read answers 200. */
  balanceOf(account: string): Promise<BalanceFigures>;
}

/** Builds a binding over `db` offering `operations` (default: all). */
export function testBinding(db: Database, operations?: readonly OperationName[]): TestBinding {
  const http = supertest(createClearingApp({ db: db.knex, operations }).callback());
  const account = async (label = 'acct') => {
    const id = unique(label);
    await http.post('/internal/reference/accounts').send({ account: id }).expect(200);
    return id;
  };
  return {
    db,
    http,
    account,
    async funded(amount, label) {
      const id = await account(label);
      await http.post('/internal/ledger/purchase').send({ txnId: unique('fund'), account: id, amount }).expect(200);
      return id;
    },
    async balanceOf(id) {
      const res = await http.get(`/internal/ledger/balance/${encodeURIComponent(id)}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body;
    },
  };
}

/**
 * Opens a test database and a binding over it (offering `operations`, default all) before the
 * file's tests, and closes the database after them. The binding returned stands for the one
 * opened: its members can be read inside the tests, not while the file loads.
 */
export function useTestBinding(operations?: readonly OperationName[]): TestBinding {
  return useOpened('the test binding', async () => testBinding(await openTestDatabase(), operations), (binding) => binding.db.close());
}

/** What a refusal is held to beyond the §7 body and no `state`. */
export interface RefusalRules {
  /** The codes a refusal may carry (§7.2); any code when absent. */
  vocabulary?: ReadonlySet<string>;
  /** The body must not carry `applied` either. */
  withoutApplied?: boolean;
}

/** The refusal assertion under `rules`: see `refused`. */
export function refusalAssertion(rules: RefusalRules = {}) {
  return (res: supertest.Response, status: number, code: string): string => {
    assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status} ${JSON.stringify(res.body)}`);
    assert.equal(res.body.code, code);
    if (rules.vocabulary) assert.ok(rules.vocabulary.has(res.body.code));
    assert.equal(typeof res.body.error, 'string');
    assert.ok(res.body.error.length > 0);
    assert.equal('state' in res.body, false);
    if (rules.withoutApplied) assert.equal('applied' in res.body, false);
    return res.body.error;
  };
}

/** Asserts a refusal: the status, the §7 body with this code, no `state` (§10.2); returns the sentence. */
export const refused = refusalAssertion();
