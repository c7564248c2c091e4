/**
 * Multi-host database URLs and the primary (issue 27 §2, `src/db/primary.ts`): a URL naming
 * several hosts is split exactly as libpq and `pg_autoctl show uri` write it, refused with the
 * reason when it cannot be used, and a connection lands on the host that accepts writes, past a
 * host that is down or read-only. Failures of an unavailable database are told apart from bugs
 * (`src/db/unavailable.ts`).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import pg from 'pg';
import { checkDatabaseUrl, redactedUrl } from '../../src/db/index.ts';
import { MAX_HOSTS, parseHosts, PrimaryConnector } from '../../src/db/primary.ts';
import { DatabaseUnavailable, isDatabaseUnavailable } from '../../src/db/unavailable.ts';
import { closedPort } from '../helpers/cli.ts';
import { onPostgres } from '../helpers/gateway.ts';

describe('a multi-host URL', () => {
  test('is split into its hosts, each with a one-host URL that keeps everything but target_session_attrs', () => {
    const parsed = parseHosts('postgres://holon:s3cret@10.0.0.1:5433,db-2,[::1]:6000/ledger?target_session_attrs=read-write&sslmode=disable');
    assert.deepEqual(parsed.hosts, [
      { host: '10.0.0.1', port: 5433 },
      { host: 'db-2', port: 5432 },
      { host: '[::1]', port: 6000 },
    ]);
    assert.equal(parsed.urlOf(parsed.hosts[1]), 'postgres://holon:s3cret@db-2:5432/ledger?sslmode=disable');
    assert.equal(parseHosts('postgresql://h:1/db').urlOf({ host: 'h', port: 1 }), 'postgresql://h:1/db');
  });

  test('is refused with the reason: a bad port, too many hosts, a session kind Holon cannot write to', () => {
    assert.throws(() => parseHosts('postgres://h1:5432,h2:70000/db'), /the port of "h2:70000" is outside 1 to 65535/);
    assert.throws(() => parseHosts('postgres://h1:54x/db'), /the host "h1:54x" is not host or host:port/);
    const many = Array.from({ length: MAX_HOSTS + 1 }, (_, i) => `h${i}`).join(',');
    assert.throws(() => parseHosts(`postgres://${many}/db`), new RegExp(`names ${MAX_HOSTS + 1} hosts; at most ${MAX_HOSTS}`));
    assert.throws(() => parseHosts('postgres://h1,h2/db?target_session_attrs=read-only'), /target_session_attrs=read-only is not supported/);
    assert.throws(() => parseHosts('mysql://h1/db'), /not a postgres:\/\/ or postgresql:\/\/ URL/);
  });

  test('passes DATABASE_URL checks, and its password is hidden in messages', () => {
    const url = 'postgres://holon:s3cret@h1:5432,h2:5433/db?target_session_attrs=read-write';
    assert.equal(checkDatabaseUrl(url), url);
    assert.equal(redactedUrl(url), 'postgres://holon:***@h1:5432,h2:5433/db?target_session_attrs=read-write');
    assert.throws(() => checkDatabaseUrl('postgres://holon:s3cret@h1:5432,h2:99999/db'), (error: Error) => error.message.includes('outside 1 to 65535') && !error.message.includes('s3cret'));
  });
});

describe('an unavailable database', () => {
  test('is told apart from a bug: lost connections, read-only sessions, shutdowns, no writable host', () => {
    assert.equal(isDatabaseUnavailable(new Error('BEGIN; - Client has encountered a connection error and is not queryable')), true);
    assert.equal(isDatabaseUnavailable(Object.assign(new Error('cannot execute INSERT in a read-only transaction'), { code: '25006' })), true);
    assert.equal(isDatabaseUnavailable(Object.assign(new Error('terminating connection'), { code: '57P01' })), true);
    assert.equal(isDatabaseUnavailable(Object.assign(new Error('connection failure'), { code: '08006' })), true);
    assert.equal(isDatabaseUnavailable(Object.assign(new Error('connect'), { code: 'ECONNREFUSED' })), true);
    assert.equal(isDatabaseUnavailable(new DatabaseUnavailable('no database host accepts writes')), true);
    assert.equal(isDatabaseUnavailable(Object.assign(new Error('duplicate key'), { code: '23505' })), false);
    assert.equal(isDatabaseUnavailable(new TypeError('x is undefined')), false);
  });
});

describe('connecting to the primary', { skip: onPostgres() ? false : 'Postgres only (DATABASE_URL)' }, () => {
  const base = new URL(process.env.DATABASE_URL ?? 'postgres://x');
  const server = `${base.hostname}:${base.port || 5432}`;
  const withHosts = (hosts: string, db: string) => `postgres://${base.username}${base.password ? `:${base.password}` : ''}@${hosts}/${db}?target_session_attrs=read-write`;

  test('passes a host that is down and lands on the one that accepts writes, then tries that one first', async () => {
    const down = `127.0.0.1:${await closedPort()}`;
    const connector = new PrimaryConnector(withHosts(`${down},${server}`, base.pathname.slice(1)));
    const client = await connector.connect();
    assert.equal((await client.query('SHOW transaction_read_only')).rows[0].transaction_read_only, 'off');
    await client.end();
    assert.deepEqual(connector.hosts, [down, server]);
  });

  test('refuses a read-only server with DatabaseUnavailable naming each host and what it answered', async () => {
    const name = `holon_test_ro_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.query(`ALTER DATABASE ${name} SET default_transaction_read_only = on`);
      const down = `127.0.0.1:${await closedPort()}`;
      await assert.rejects(new PrimaryConnector(withHosts(`${server},${down}`, name)).connect(), (error: Error) => {
        assert.ok(error instanceof DatabaseUnavailable);
        assert.match(error.message, new RegExp(`^no database host accepts writes \\(${server.replaceAll('.', '\\.')} is read-only; ${down.replaceAll('.', '\\.')}: connect ECONNREFUSED`));
        return true;
      });
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name}`);
      await admin.end();
    }
  });
});
