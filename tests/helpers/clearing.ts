/**
 * Test fixtures for the reference binding: a migrated database (Postgres when `DATABASE_URL` is
 * set, else in-memory PGlite), the binding's app behind supertest, and run-unique identifiers so
 * tests share one Postgres database without seeing each other.
 */
import { randomUUID } from 'node:crypto';
import supertest from 'supertest';
import type TestAgent from 'supertest/lib/agent.js';
import { openDatabase, type Database } from '../../src/db/index.ts';
import { createClearingApp } from '../../src/clearing/app.ts';
import type { OperationName } from '../../src/clearing/capabilities.ts';

/** The database the suite runs on: the `DATABASE_URL` server, else a fresh in-memory PGlite. */
export function openTestDatabase(): Promise<Database> {
  const url = process.env.DATABASE_URL;
  return openDatabase(url ? { url } : { memory: true });
}

/** A unique prefix for identifiers created by one test. */
export function unique(label: string): string {
  return `${label}-${randomUUID().slice(0, 8)}`;
}

/** A binding under test: its HTTP agent, its database, and helpers to make accounts. */
export interface TestBinding {
  db: Database;
  http: TestAgent;
  /** Creates a holder account (extension door) and returns its id. */
  account(label?: string): Promise<string>;
  /** Creates an account and credits it with `amount` micro-units; returns its id. */
  funded(amount: number, label?: string): Promise<string>;
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
  };
}
