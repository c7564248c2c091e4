/**
 * The reference binding's transport (clearing-contract §3, §5, §7): the loopback gate and the
 * health check outside it, the three 404s kept apart, request validation that names the field,
 * the `{error, code}` body on every refusal, and a capability document that tells the truth.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { Knex } from 'knex';
import type Koa from 'koa';
import supertest from 'supertest';
import { resolveAccount } from '../../src/clearing/accounts.ts';
import { createClearingApp, openLedger } from '../../src/clearing/app.ts';
import { ALL_OPERATIONS, REQUIRED_OPERATIONS } from '../../src/clearing/capabilities.ts';
import { isLoopback, loopbackGate, proxyHeader } from '../../src/http/access.ts';
import { HttpClearingPort } from '../../src/gateway/clearing.ts';
import { refusalAssertion, testBinding, unique, useTestBinding, type TestBinding } from '../helpers/clearing.ts';

/** The §7.2 vocabulary: a conforming binding answers one of these on every error. */
const CODES = new Set([
  'not_permitted',
  'not_offered',
  'no_such_object',
  'no_such_route',
  'invalid_request',
  'insufficient_funds',
  'terms_conflict',
  'already_reversed',
  'not_reversible',
  'closed',
  'internal_error',
]);

/**
 * Asserts a refusal: the status, the §7 body with this code, a code of the §7.2 vocabulary, no
 * `state` (§10.2) and no `applied`; returns the sentence.
 */
const refused = refusalAssertion({ vocabulary: CODES, withoutApplied: true });

/** One request per contract operation, with a body that would be valid if the operation were offered. */
function everyOperation(account: string): Record<string, (http: TestBinding['http']) => supertest.Test> {
  const txnId = unique('txn');
  return {
    'resolve-account': (h) => h.get(`/internal/ledger/account-for-agent/${unique('agent')}`),
    'read-balance': (h) => h.get(`/internal/ledger/balance/${account}`),
    'read-summary': (h) => h.get(`/internal/ledger/summary/${account}`),
    'read-settlement': (h) => h.get(`/internal/ledger/settlement/${txnId}`),
    'list-reservations': (h) => h.get(`/internal/ledger/reservations/${account}`),
    'read-reservation': (h) => h.get(`/internal/ledger/reservation/${unique('hold')}`),
    credit: (h) => h.post('/internal/ledger/purchase').send({ txnId, account, amount: 5 }),
    settle: (h) => h.post('/internal/ledger/charge').send({ txnId, caller: account, owner: account, rate: 5, retail: 5 }),
    reverse: (h) => h.post('/internal/ledger/reverse').send({ txnId: unique('rev'), reverses: txnId, reason: 'test' }),
    adjust: (h) => h.post('/internal/ledger/adjust').send({ txnId, account, delta: 5, reason: 'test' }),
    'open-hold': (h) => h.post('/internal/ledger/hold').send({ holdId: unique('hold'), account, amount: 5, expiresAt: '2099-01-01T00:00:00Z' }),
    'resize-hold': (h) => h.post('/internal/ledger/resize').send({ holdId: unique('hold'), amount: 5 }),
    draw: (h) => h.post('/internal/ledger/draw').send({ holdId: unique('hold'), txnId, caller: account, owner: account, lines: [{ meter: 'm', amount: 1 }] }),
    'release-hold': (h) => h.post('/internal/ledger/release').send({ holdId: unique('hold') }),
  };
}

const binding = useTestBinding();

test('§3 isLoopback: loopback in IPv4, IPv6 and IPv4-mapped form; anything else is not', () => {
  assert.equal(isLoopback('127.0.0.1'), true);
  assert.equal(isLoopback('127.8.9.10'), true);
  assert.equal(isLoopback('::1'), true);
  assert.equal(isLoopback('::ffff:127.0.0.1'), true);
  assert.equal(isLoopback('10.0.0.1'), false);
  assert.equal(isLoopback('::ffff:10.0.0.1'), false);
  assert.equal(isLoopback('192.0.2.2'), false);
  assert.equal(isLoopback('fd00::2'), false);
  assert.equal(isLoopback('not-an-address'), false);
  assert.equal(isLoopback(''), false);
  assert.equal(isLoopback(undefined), false);
});

test('§3 health answers 200 outside the gate, even with X-Forwarded-For', async () => {
  const plain = await binding.http.get('/healthz');
  assert.equal(plain.status, 200);
  assert.deepEqual(plain.body, { ok: true });
  const proxied = await binding.http.get('/healthz').set('X-Forwarded-For', '203.0.113.7');
  assert.equal(proxied.status, 200);
  assert.deepEqual(proxied.body, { ok: true });
});

test('§3 health touches no account state: it answers while the database is unusable, a read does not', async () => {
  const broken = new Proxy(() => undefined, {
    apply() {
      throw new Error('the database is down');
    },
    get() {
      throw new Error('the database is down');
    },
  }) as unknown as Knex;
  const http = supertest(createClearingApp({ db: broken }).callback());
  const health = await http.get('/healthz');
  assert.equal(health.status, 200);
  assert.deepEqual(health.body, { ok: true });
  const read = await http.get('/internal/ledger/balance/anyone');
  refused(read, 500, 'internal_error');
  assert.equal(read.body.error, 'an unexpected failure inside the binding; nothing was changed');
});

test('§3 a request carrying X-Forwarded-For is refused 403 not_permitted on every gated path, and changes nothing', async () => {
  const account = await binding.account();
  const txnId = unique('xff');
  const responses = [
    await binding.http.get('/internal/clearing/capabilities').set('X-Forwarded-For', '203.0.113.7'),
    await binding.http.get(`/internal/ledger/balance/${account}`).set('X-Forwarded-For', '127.0.0.1'),
    await binding.http.post('/internal/ledger/purchase').set('X-Forwarded-For', '203.0.113.7').send({ txnId, account, amount: 1_000 }),
    await binding.http.post('/internal/reference/accounts').set('X-Forwarded-For', '203.0.113.7').send({ account: unique('acct') }),
    await binding.http.get('/no/such/route').set('X-Forwarded-For', '203.0.113.7'),
  ];
  for (const res of responses) {
    const message = refused(res, 403, 'not_permitted');
    assert.match(message, /x-forwarded-for/);
  }
  // Present but empty is still present: a proxy's header, not an unproxied caller.
  refused(await binding.http.get(`/internal/ledger/balance/${account}`).set('X-Forwarded-For', ''), 403, 'not_permitted');

  const settlement = await binding.http.get(`/internal/ledger/settlement/${txnId}`);
  assert.equal(settlement.status, 200);
  assert.equal(settlement.body.state, 'unknown');
  const balance = await binding.http.get(`/internal/ledger/balance/${account}`);
  assert.equal(balance.body.balance, 0);
});

test('§3 every proxy header (Forwarded, any X-Forwarded-*, X-Real-IP, Via) is refused 403 not_permitted, naming it, and changes nothing', async () => {
  const account = await binding.account();
  const headers: Array<[string, string]> = [
    ['Forwarded', 'for=203.0.113.7'],
    ['X-Forwarded-Host', 'holon.example.com'],
    ['X-Forwarded-Proto', 'https'],
    ['X-Forwarded-Port', '443'],
    ['X-Forwarded-Server', 'edge'],
    ['X-Real-IP', '203.0.113.7'],
    ['Via', '1.1 edge'],
    ['Forwarded', ''],
  ];
  for (const [name, value] of headers) {
    const txnId = unique('proxied');
    const credit = await binding.http.post('/internal/ledger/purchase').set(name, value).send({ txnId, account, amount: 1_000 });
    const message = refused(credit, 403, 'not_permitted');
    assert.ok(message.includes(name.toLowerCase()), `${name}: ${message}`);
    refused(await binding.http.get(`/internal/ledger/balance/${account}`).set(name, value), 403, 'not_permitted');
    const settlement = await binding.http.get(`/internal/ledger/settlement/${txnId}`);
    assert.equal(settlement.body.state, 'unknown', name);
  }
  assert.equal((await binding.http.get(`/internal/ledger/balance/${account}`)).body.balance, 0);
  // A header that merely resembles one is not a proxy's.
  assert.equal((await binding.http.get(`/internal/ledger/balance/${account}`).set('X-Forwarding-Note', 'x')).status, 200);
});

test("§3 the gateway's clearing client sends no proxy header: the gate would refuse it", async () => {
  const seen: Array<Record<string, unknown>> = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"account":"a","balance":0,"available":0,"reserved":0,"currency":"EUR"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const port = new HttpClearingPort(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    await port.readBalance('a').catch(() => {});
    await port.releaseHold('h-1', 'test').catch(() => {});
    assert.equal(seen.length, 2);
    for (const headers of seen) assert.equal(proxyHeader(headers), null, JSON.stringify(headers));
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test('§3 the gate refuses a peer that is not loopback (middleware, peer 10.0.0.1)', async () => {
  const gate = loopbackGate(['/healthz']);
  let reached = 0;
  const next = async () => {
    reached++;
  };
  const ctx = (path: string, remoteAddress: string) => ({ path, req: { socket: { remoteAddress }, headers: {} } }) as unknown as Koa.Context;
  await assert.rejects(gate(ctx('/internal/ledger/charge', '10.0.0.1'), next), (error: { status: number; code: string; message: string }) => {
    assert.equal(error.status, 403);
    assert.equal(error.code, 'not_permitted');
    assert.match(error.message, /10\.0\.0\.1 is not loopback/);
    return true;
  });
  await assert.rejects(gate(ctx('/internal/ledger/charge', '::ffff:10.0.0.1'), next), { status: 403, code: 'not_permitted' });
  assert.equal(reached, 0);
  await gate(ctx('/healthz', '10.0.0.1'), next);
  await gate(ctx('/internal/ledger/charge', '::ffff:127.0.0.1'), next);
  assert.equal(reached, 2);
});

test('§3 the gate classifies a connection once and still checks every request on it for proxy headers (middleware)', async () => {
  const gate = loopbackGate(['/healthz']);
  let reached = 0;
  const next = async () => {
    reached++;
  };
  const loopbackSocket = { remoteAddress: '127.0.0.1' };
  const externalSocket = { remoteAddress: '10.0.0.1' };
  const ctx = (socket: object, headers: Record<string, string> = {}) => ({ path: '/internal/ledger/balance/a', req: { socket, headers } }) as unknown as Koa.Context;
  await gate(ctx(loopbackSocket), next);
  await assert.rejects(gate(ctx(loopbackSocket, { 'x-forwarded-for': '203.0.113.7' }), next), { status: 403, code: 'not_permitted' });
  await gate(ctx(loopbackSocket), next);
  for (let i = 0; i < 2; i++) await assert.rejects(gate(ctx(externalSocket), next), { status: 403, code: 'not_permitted' });
  // A destroyed socket reports no address: refused, whatever the connection was before.
  await assert.rejects(gate(ctx({ remoteAddress: undefined }), next), { status: 403, code: 'not_permitted' });
  assert.equal(reached, 2);
});

test('§3 the gate refuses a real connection from a non-loopback address', async (t) => {
  const external = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && !i.internal && i.family === 'IPv4');
  if (!external) {
    t.skip('this machine has no non-loopback IPv4 address');
    return;
  }
  const server = createClearingApp({ db: binding.db.knex }).listen(0, '0.0.0.0');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  try {
    const base = `http://${external.address}:${(server.address() as AddressInfo).port}`;
    const capabilities = await fetch(`${base}/internal/clearing/capabilities`);
    assert.equal(capabilities.status, 403);
    const body = (await capabilities.json()) as { code: string; error: string };
    assert.equal(body.code, 'not_permitted');
    assert.match(body.error, new RegExp(`the peer (::ffff:)?${external.address.replaceAll('.', '\\.')} is not loopback`));
    const health = await fetch(`${base}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { ok: true });
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test('§7.1 a path that is no operation answers 404 no_such_route, whatever the method', async () => {
  const cases: [string, string][] = [
    ['get', '/internal/ledger/nope'],
    ['get', '/internal/ledger/charges'],
    ['post', '/internal/ledger/balance/acct'],
    ['get', '/internal/ledger/charge'],
    ['delete', '/internal/ledger/reservation/h1'],
    ['put', '/internal/ledger/hold'],
    ['get', '/'],
  ];
  for (const [method, path] of cases) {
    const res = await (binding.http as unknown as Record<string, (p: string) => supertest.Test>)[method](path);
    const message = refused(res, 404, 'no_such_route');
    assert.equal(message, `${method.toUpperCase()} ${path} is not an operation of this contract`);
  }
});

test('§5.2 a binding offering only the four REQUIRED operations answers 404 not_offered to every other one', async () => {
  const minimal = testBinding(binding.db, REQUIRED_OPERATIONS);
  const account = await minimal.account();
  const requests = everyOperation(account);
  const notOffered = ALL_OPERATIONS.filter((op) => !REQUIRED_OPERATIONS.includes(op));
  assert.equal(notOffered.length, 10);
  for (const op of notOffered) {
    const message = refused(await requests[op](minimal.http), 404, 'not_offered');
    assert.equal(message, `this binding does not offer ${op}`);
  }
  // The probe stays valid whatever the body: not_offered comes before validation.
  refused(await minimal.http.post('/internal/ledger/hold').send({ nonsense: true }), 404, 'not_offered');
  // The required ones answer; without reservations, available is still answered, equal to balance (§6.2).
  assert.equal((await requests['resolve-account'](minimal.http)).status, 200);
  assert.deepEqual((await requests['read-balance'](minimal.http)).body, { account, balance: 0, available: 0, reserved: 0, pending: 0 });
  assert.equal((await requests['read-settlement'](minimal.http)).status, 200);
  const settled = await requests.settle(minimal.http);
  assert.equal(settled.status, 200);
  assert.equal(settled.body.applied, true);
  // And a route that does not exist is still no_such_route there.
  refused(await minimal.http.get('/internal/ledger/nope'), 404, 'no_such_route');
});

test('§5 the minimal binding declares exactly the four operations and no funding', async () => {
  const minimal = testBinding(binding.db, REQUIRED_OPERATIONS);
  const res = await minimal.http.get('/internal/clearing/capabilities');
  assert.equal(res.status, 200);
  assert.deepEqual(res.body.operations, ['resolve-account', 'read-balance', 'read-settlement', 'settle']);
  assert.deepEqual(res.body.funding, []);
});

test('§5 the capability document is truthful: contract 1, EUR scale 6, immediate, poll, no payout, no period', async () => {
  const res = await binding.http.get('/internal/clearing/capabilities');
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, {
    contract: '1',
    implementation: 'holon-reference-binding 0.1.0',
    unit: { code: 'EUR', display: 'euro, in micro-units', scale: 6, peg: null },
    operations: [
      'resolve-account',
      'read-balance',
      'read-summary',
      'read-settlement',
      'list-reservations',
      'read-reservation',
      'credit',
      'settle',
      'reverse',
      'adjust',
      'open-hold',
      'resize-hold',
      'draw',
      'release-hold',
    ],
    finality: 'immediate',
    notifications: ['poll'],
    funding: ['credit'],
    payout: false,
    negative_balance: true,
    limits: { min_amount: 1, max_amount: 999_999_999_999_999 },
    pending_max_seconds: null,
  });
  assert.equal('period' in res.body, false);
  // Every listed operation is actually offered: none answers not_offered.
  const account = await binding.account();
  const requests = everyOperation(account);
  for (const op of res.body.operations as string[]) {
    const answer = await requests[op](binding.http);
    assert.notEqual(answer.body.code, 'not_offered', op);
    assert.notEqual(answer.body.code, 'no_such_route', op);
  }
});

test('§7.1 an offered operation naming an object that does not exist answers 404 no_such_object', async () => {
  const hold = unique('hold');
  assert.equal(refused(await binding.http.get(`/internal/ledger/reservation/${hold}`), 404, 'no_such_object'), `there is no reservation ${hold}`);
  const account = unique('ghost');
  assert.equal(refused(await binding.http.get(`/internal/ledger/balance/${account}`), 404, 'no_such_object'), `there is no account ${account}`);
  refused(await binding.http.get(`/internal/ledger/summary/${account}`), 404, 'no_such_object');
  refused(await binding.http.get(`/internal/ledger/reservations/${account}`), 404, 'no_such_object');
});

test('§7 invalid requests answer 422 invalid_request naming the field', async () => {
  const account = await binding.account();
  const txnId = unique('bad');
  const cases: [supertest.Test, string][] = [
    [binding.http.post('/internal/ledger/purchase').send({ txnId, account, amount: 1.5 }), 'invalid request: body.amount must be integer'],
    [binding.http.post('/internal/ledger/purchase').send({ txnId, account, amount: '100' }), 'invalid request: body.amount must be integer'],
    [binding.http.post('/internal/ledger/purchase').send({ txnId, account, amount: 0 }), 'invalid request: body.amount must be >= 1'],
    [binding.http.post('/internal/ledger/purchase').send({ txnId, account }), 'invalid request: body.amount is required'],
    [binding.http.post('/internal/ledger/purchase').send({ account, amount: 5 }), 'invalid request: body.txnId is required'],
    [binding.http.post('/internal/ledger/purchase').send({ txnId, account, amount: 5, bonus: 1 }), 'invalid request: body.bonus is not a field of this operation'],
    [binding.http.post('/internal/ledger/purchase').send({ txnId: '', account, amount: 5 }), 'invalid request: body.txnId must NOT have fewer than 1 characters'],
    [binding.http.post('/internal/ledger/purchase').set('content-type', 'application/json').send('{"txnId": '), 'invalid request: the body is not valid JSON'],
    [binding.http.post('/internal/ledger/purchase').send([{ txnId, account, amount: 5 }]), 'invalid request: the body must be a JSON object'],
    [binding.http.post('/internal/ledger/purchase').send({ txnId, account, amount: 5, ref: 'x'.repeat(1_100_000) }), 'invalid request: the body is larger than 1048576 bytes, the most accepted'],
    [binding.http.post('/internal/ledger/charge').send({ txnId, caller: account, owner: account, rate: -1, retail: 5 }), 'invalid request: body.rate must be >= 1'],
    [
      binding.http.post('/internal/ledger/draw').send({ holdId: 'h', txnId, caller: account, owner: account, lines: [{ meter: 'm', amount: -1 }] }),
      'invalid request: body.lines[0].amount must be >= 0',
    ],
    [binding.http.post('/internal/ledger/draw').send({ holdId: 'h', txnId, caller: account, owner: account, lines: [] }), 'invalid request: body.lines must NOT have fewer than 1 items'],
    [
      binding.http.post('/internal/ledger/hold').send({ holdId: 'h', account, amount: 5, expiresAt: 'next tuesday' }),
      'invalid request: body.expiresAt must match format "date-time"',
    ],
    [binding.http.get(`/internal/ledger/summary/${account}?limit=ten`), 'invalid request: query.limit must be integer'],
    [binding.http.get(`/internal/ledger/summary/${account}?limit=0`), 'invalid request: query.limit must be >= 1'],
    [binding.http.post('/internal/ledger/adjust').send({ txnId, account, delta: 0, reason: 'r' }), 'invalid request: body.delta must not be 0'],
    [binding.http.post('/internal/ledger/reverse').send({ txnId, reverses: 'x' }), 'invalid request: body.reason is required'],
    [binding.http.post('/internal/ledger/reverse').send({ txnId, reverses: 'x', reason: '' }), 'invalid request: body.reason must NOT have fewer than 1 characters'],
  ];
  for (const [request, message] of cases) {
    assert.equal(refused(await request, 422, 'invalid_request'), message);
  }
  // None of them moved anything.
  assert.equal((await binding.http.get(`/internal/ledger/settlement/${txnId}`)).body.state, 'unknown');
  assert.equal((await binding.http.get(`/internal/ledger/balance/${account}`)).body.balance, 0);
});

test('§3 amounts are JSON integers: a float or a numeric string is refused, not rounded', async () => {
  const account = await binding.account();
  for (const amount of [100.4, 99.999, '100', '1e2', true]) {
    const res = await binding.http.post('/internal/ledger/purchase').send({ txnId: unique('float'), account, amount });
    assert.equal(refused(res, 422, 'invalid_request'), 'invalid request: body.amount must be integer');
  }
  assert.equal((await binding.http.get(`/internal/ledger/balance/${account}`)).body.balance, 0);
});

test('§3 invariant 7: an integer JSON cannot carry exactly is refused, not rounded or a 500; the declared max_amount is the bound', async () => {
  const caller = await binding.account('caller');
  const owner = await binding.account('owner');
  const beyond = '9007199254740993'; // 2^53 + 1: JSON.parse would round it to 2^53
  const cases: [string, string][] = [
    [`{"txnId":"${unique('big')}","account":"${caller}","amount":${beyond}}`, 'body.amount'],
    [`{"txnId":"${unique('big')}","account":"${caller}","amount":1e300}`, 'body.amount'],
    [`{"txnId":"${unique('big')}","account":"${caller}","delta":-1e300,"reason":"r"}`, 'body.delta'],
    [`{"holdId":"${unique('h')}","txnId":"${unique('big')}","caller":"${caller}","owner":"${owner}","lines":[{"meter":"m","amount":1},{"meter":"m","amount":${beyond}}]}`, 'body.lines[1].amount'],
  ];
  const paths = ['/internal/ledger/purchase', '/internal/ledger/purchase', '/internal/ledger/adjust', '/internal/ledger/draw'];
  for (const [i, [body, field]] of cases.entries()) {
    const res = await binding.http.post(paths[i]).set('content-type', 'application/json').send(body);
    assert.equal(refused(res, 422, 'invalid_request'), `invalid request: ${field} must be at most 9007199254740991 in magnitude, the largest integer carried exactly`);
  }
  // One above the declared max_amount is refused naming it; the max_amount itself is accepted and carried exactly.
  const max = 999_999_999_999_999;
  const above = await binding.http.post('/internal/ledger/charge').send({ txnId: unique('above'), caller, owner, rate: max, retail: max + 1 });
  assert.equal(refused(above, 422, 'invalid_request'), 'invalid request: body.retail must be <= 999999999999999');
  const txnId = unique('max');
  const settled = await binding.http.post('/internal/ledger/charge').send({ txnId, caller, owner, rate: max, retail: max });
  assert.equal(settled.status, 200);
  assert.equal((await binding.http.get(`/internal/ledger/balance/${caller}`)).body.balance, -max);
  assert.equal((await binding.http.get(`/internal/ledger/balance/${owner}`)).body.balance, max);
  assert.equal((await binding.http.get(`/internal/ledger/settlement/${txnId}`)).body.amount, max);
});

test('§3 path parameters are percent-encoded: accounts, transaction ids and agent keys with reserved characters', async () => {
  const account = `${unique('team')}/alpha é:1?x#y`;
  assert.equal((await binding.http.post('/internal/reference/accounts').send({ account })).status, 200);
  const txnId = `${unique('pay')}/2026 #1`;
  const credit = await binding.http.post('/internal/ledger/purchase').send({ txnId, account, amount: 1_250_000 });
  assert.equal(credit.status, 200);
  const balance = await binding.http.get(`/internal/ledger/balance/${encodeURIComponent(account)}`);
  assert.equal(balance.status, 200);
  assert.deepEqual(balance.body, { account, balance: 1_250_000, available: 1_250_000, reserved: 0, pending: 0 });
  const settlement = await binding.http.get(`/internal/ledger/settlement/${encodeURIComponent(txnId)}`);
  assert.equal(settlement.body.txn_id, txnId);
  assert.equal(settlement.body.state, 'settled');
  assert.equal(settlement.body.account, account);

  const agent = `${unique('agent')}/key+1`;
  assert.equal((await binding.http.post('/internal/reference/agent-links').send({ agentKey: agent, account })).status, 200);
  const resolved = await binding.http.get(`/internal/ledger/account-for-agent/${encodeURIComponent(agent)}`);
  assert.equal(resolved.status, 200);
  assert.deepEqual(resolved.body, { agent, account });
});

test('§6.1 resolve-account: an unlinked key is an answer, null, not an error; a linked one names its account', async () => {
  const agent = unique('agent');
  const unlinked = await binding.http.get(`/internal/ledger/account-for-agent/${agent}`);
  assert.equal(unlinked.status, 200);
  assert.deepEqual(unlinked.body, { agent, account: null });
  const account = await binding.account();
  const link = await binding.http.post('/internal/reference/agent-links').send({ agentKey: agent, account });
  assert.deepEqual(link.body, { ok: true, applied: true, agent, account });
  const again = await binding.http.post('/internal/reference/agent-links').send({ agentKey: agent, account });
  assert.deepEqual(again.body, { ok: true, applied: false, agent, account });
  const resolved = await binding.http.get(`/internal/ledger/account-for-agent/${agent}`);
  assert.deepEqual(resolved.body, { agent, account });
  const other = await binding.account();
  const relink = await binding.http.post('/internal/reference/agent-links').send({ agentKey: agent, account: other });
  assert.equal(refused(relink, 422, 'terms_conflict'), `agent key ${agent} is already linked to ${account}`);
  assert.deepEqual((await binding.http.get(`/internal/ledger/account-for-agent/${agent}`)).body, { agent, account });
});

test('§6.1 resolve-account remembers a link it has read (the same answer, without reading again) and never a null', async () => {
  const ledger = openLedger(binding.db.knex);
  const resolve = (agentKey: string) => resolveAccount(ledger, { params: { agentKey }, query: {}, body: undefined });
  const agent = unique('agent');
  assert.deepEqual(await resolve(agent), { agent, account: null });
  assert.equal(ledger.links.has(agent), false, 'a null answer is not remembered, so a just-linked key resolves at once');
  const account = await binding.account();
  assert.equal((await binding.http.post('/internal/reference/agent-links').send({ agentKey: agent, account })).status, 200);
  assert.deepEqual(await resolve(agent), { agent, account });
  assert.equal(ledger.links.get(agent), account);
  assert.deepEqual(await resolve(agent), { agent, account });
});

test('§4 machinery accounts cannot be created as holder accounts', async () => {
  for (const account of ['external:funding', 'platform:fees', `external:${unique('x')}`]) {
    const res = await binding.http.post('/internal/reference/accounts').send({ account });
    assert.equal(refused(res, 422, 'invalid_request'), `${account} names this binding's own machinery; choose another account id`);
  }
});
