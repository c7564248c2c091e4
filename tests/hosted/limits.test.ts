/**
 * Limits and platform rules of the hosted gateway (gateway §7 "Limits and platform rules",
 * "Operating"): rate limits per account, per address (behind a trusted proxy, the address it
 * appended; a forged `X-Forwarded-For` buys nothing), sign-ups per address, the admin key's;
 * counted across processes on Postgres, per process when the database does not answer; NUL refused; the settings production refuses to start without.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import knexPkg from 'knex';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { rateCounter, type RateCounter } from '../../src/hosted/limits.ts';
import { readSettings } from '../../src/hosted/settings.ts';
import { ADMIN_KEY, bearer, PRODUCTION_ENV, uniqueAccount, useHostedAccount, useTestHosted } from '../helpers/hosted.ts';

const { knex } = knexPkg;
/** knex's logger, silent: the refused connections below are the point of the tests. */
const quiet = { warn() {}, error() {}, debug() {}, deprecate() {} };

const limits = { address_per_minute: 100_000, account_per_minute: 100_000, admin_per_minute: 100_000, signups_per_hour: 100_000 };

describe('rate limits', () => {
  const proxied = useTestHosted({ settings: { trust_proxy: true, rate_limits: { ...limits, address_per_minute: 5, signups_per_hour: 2, account_per_minute: 6, admin_per_minute: 3 } } });
  const direct = useTestHosted({ settings: { trust_proxy: false, rate_limits: { ...limits, address_per_minute: 3 } } });

  test('behind the trusted proxy, the appended address counts: a forged X-Forwarded-For buys nothing', async () => {
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await proxied.http.get('/healthz').set('x-forwarded-for', `10.9.9.${i}, 203.0.113.7`)).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
    const limited = await proxied.http.get('/healthz').set('x-forwarded-for', '203.0.113.7');
    assert.deepEqual([limited.status, limited.body.code, Number(limited.headers['retry-after']) > 0], [429, 'rate_limited', true]);
    assert.equal((await proxied.http.get('/healthz').set('x-forwarded-for', '10.9.9.1, 203.0.113.8')).status, 200);
  });

  test('without a trusted proxy X-Forwarded-For is ignored', async () => {
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await direct.http.get('/healthz').set('x-forwarded-for', `198.51.100.${i}`)).status);
    assert.deepEqual(statuses, [200, 200, 200, 429]);
  });

  test('sign-ups are limited per address', async () => {
    const signup = () => {
      const handle = uniqueAccount();
      return proxied.http.post('/v0/signup').set('x-forwarded-for', '203.0.113.20').send({ handle, email: `${handle}@example.test` });
    };
    assert.deepEqual([(await signup()).status, (await signup()).status, (await signup()).status], [201, 201, 429]);
  });

  test('every key of an account shares its limit; the admin key has its own', async () => {
    const handle = uniqueAccount();
    const created = await proxied.http.post('/v0/signup').set('x-forwarded-for', '203.0.113.30').send({ handle, email: `${handle}@example.test` }).expect(201);
    const keys = [created.body.human_key.key, created.body.agent_key.key];
    const statuses = [];
    for (let i = 0; i < 7; i++) statuses.push((await proxied.http.get('/v0/me').set('x-forwarded-for', `203.0.113.${40 + i}`).set(bearer(keys[i % 2]))).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200, 429]);
    const admin = [];
    for (let i = 0; i < 4; i++) admin.push((await proxied.http.get('/v0/accounts').set('x-forwarded-for', `203.0.113.${60 + i}`).set(bearer(ADMIN_KEY))).status);
    assert.deepEqual(admin, [200, 200, 200, 429]);
  });
});

describe('where the counters live', () => {
  const hosted = useTestHosted();

  /** Consumes one point of `key`: 'ok', or 'refused' for the library's refusal (the 429 of `consume`). */
  const take = (counter: RateCounter, key: string) =>
    counter.limiter.consume(key).then(
      () => 'ok',
      (error) => {
        if (error instanceof RateLimiterRes) return 'refused';
        throw error;
      },
    );

  test('on Postgres two processes count one limit together; on PGlite (one process) memory counts it', async () => {
    const store = hosted.running.db;
    // Two counters of one name on one database are what two processes hold.
    const a = rateCounter(store, 'shared-test', 5, 60);
    const b = rateCounter(store, 'shared-test', 5, 60);
    const outcomes = [];
    for (let i = 0; i < 8; i++) outcomes.push(await take(i % 2 ? b : a, 'one-key'));
    if (store.engine === 'postgres') {
      assert.deepEqual(outcomes, ['ok', 'ok', 'ok', 'ok', 'ok', 'refused', 'refused', 'refused']);
      // Each process asks the database until it sees the key past the limit (b at the 6th, a at the 7th), then refuses from memory: the 8th never reached the database.
      const row = await store.knex('hosted_rate_limits').where({ key: 'shared-test:one-key' }).first();
      assert.equal(row.points, 7);
    } else {
      assert.deepEqual(outcomes, ['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok']);
      assert.equal(await store.knex('hosted_rate_limits').where({ key: 'shared-test:one-key' }).first(), undefined);
    }
  });

  test('a database that does not answer: past the timeout each process counts in its own memory, never unlimited, never an error', async () => {
    // A server that accepts connections and never answers: the shared counter waits, the timeout decides.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const unreachable = knex({ client: 'pg', connection: { host: '127.0.0.1', port, user: 'x', database: 'x' }, pool: { min: 0, max: 2 }, acquireConnectionTimeout: 2000, log: quiet });
    try {
      const counter = rateCounter({ knex: unreachable, engine: 'postgres' }, 'silent', 3, 60, 50);
      const outcomes = [];
      for (let i = 0; i < 4; i++) outcomes.push(await take(counter, 'k'));
      assert.deepEqual(outcomes, ['ok', 'ok', 'ok', 'refused']);
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
      await unreachable.destroy();
    }
  });

  test('a database that refuses: the same per-process count', async () => {
    const closed = knex({ client: 'pg', connection: { host: '127.0.0.1', port: 1, user: 'x', database: 'x' }, log: quiet });
    await closed.destroy();
    const counter = rateCounter({ knex: closed, engine: 'postgres' }, 'refusing', 2, 60);
    assert.deepEqual([await take(counter, 'k'), await take(counter, 'k'), await take(counter, 'k')], ['ok', 'ok', 'refused']);
  });
});

describe('NUL characters', () => {
  const hosted = useTestHosted();
  const account = useHostedAccount(hosted);

  test('a NUL in a call input or a mandate is refused 422 and nothing is written', async () => {
    const count = async () => Number((await hosted.running.db.knex('gateway_receipts').count('* as n'))[0].n);
    const before_count = await count();
    const call = await hosted.http.post('/v0/calls').set(bearer(account.agent)).send({ mandate: account.mandate, agent: 'gt/run', input: { marker: 'a\u0000b' } });
    assert.deepEqual([call.status, call.body.code], [422, 'invalid_request']);
    assert.match(call.body.error, /body\.input\.marker contains a NUL character/);
    assert.equal(await count(), before_count);
    const mandate = await hosted.http.post('/v0/mandates').set(bearer(account.human)).send({ id: 'n\u0000', grantee: `${account.handle}/b`, budget: { total: '1.00' } });
    assert.equal(mandate.status, 422);
  });
});

describe('production settings', () => {
  const complete = PRODUCTION_ENV;

  test('refuses to start without each required setting, naming every missing one', () => {
    assert.throws(
      () => readSettings({ NODE_ENV: 'production' }),
      { message: 'refusing to start: DATABASE_URL is required in production; HOLON_PUBLIC_URL is required in production; HOLON_FILE_SECRET is required in production; HOLON_ADMIN_KEY is required in production; HOLON_TRUST_PROXY is required in production; HOLON_SITE_URL is required in production' },
    );
    assert.throws(() => readSettings({ ...complete, HOLON_ADMIN_KEY: 'short' }), /HOLON_ADMIN_KEY must be 32 or more characters/);
    assert.throws(() => readSettings({ ...complete, HOLON_ALLOW_PRIVATE_ENDPOINTS: '1' }), /HOLON_ALLOW_PRIVATE_ENDPOINTS=1 is refused in production/);
  });

  test('rate limits default to 6000 per address and 3000 per account a minute, 600 for the admin key, 5 sign-ups per address an hour', () => {
    assert.deepEqual(readSettings({}).rate_limits, { address_per_minute: 6_000, account_per_minute: 3_000, admin_per_minute: 600, signups_per_hour: 5 });
    assert.deepEqual(readSettings({ ...complete, HOLON_RATE_ACCOUNT: '1000000', HOLON_RATE_SIGNUP: '1' }).rate_limits, { address_per_minute: 6_000, account_per_minute: 1_000_000, admin_per_minute: 600, signups_per_hour: 1 });
  });

  test('a rate limit outside 1 to 1000000 is refused at start-up, naming the variable, the bound and the value', () => {
    assert.throws(() => readSettings({ HOLON_RATE_ACCOUNT: '0' }), { message: 'refusing to start: HOLON_RATE_ACCOUNT must be a whole number from 1 to 1000000 (requests per account per minute; default 3000); got "0"' });
    assert.throws(
      () => readSettings({ HOLON_RATE_ADDRESS: '1000001', HOLON_RATE_ADMIN: '1e3', HOLON_RATE_SIGNUP: '-5' }),
      {
        message:
          'refusing to start: HOLON_RATE_ADDRESS must be a whole number from 1 to 1000000 (requests per address per minute; default 6000); got "1000001"; HOLON_RATE_ADMIN must be a whole number from 1 to 1000000 (requests with the admin key per minute; default 600); got "1e3"; HOLON_RATE_SIGNUP must be a whole number from 1 to 1000000 (sign-ups per address per hour; default 5); got "-5"',
      },
    );
  });

  test('starts with them; GitHub sign-in unset only turns sign-in off', () => {
    const settings = readSettings(complete);
    assert.deepEqual([settings.production, settings.github, settings.trust_proxy], [true, null, true]);
  });
});
