/**
 * The gateway's DNS-rebinding gate on `/v0` and `/mcp` (MCP 2025-11-25 Streamable HTTP "Security
 * Warning"; issue 8 §3.1): `Host` must name the gateway (the names it listens under, plus
 * configured public names), a foreign `Origin` is refused 403, and a gateway listening on
 * loopback refuses peers that are not loopback. A refused request changes nothing.
 */
import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import type Koa from 'koa';
import supertest from 'supertest';
import { hostGate, listenHosts, normalizeHost } from '../../src/http/host-gate.ts';
import { startFreshDevGateway, useDevGateway } from '../helpers/gateway.ts';
import { setUp, withEnv } from '../helpers/hooks.ts';

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'page', version: '1' } },
};
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const CALL = { mandate: 'dev/sandbox', agent: 'acme/table-extract', input: { text: 'a;b' } };

const gateway = useDevGateway({ allowed_hosts: ['holon.example.com', 'https://public.example.org:8443'] });
let port: number;
let http: supertest.Agent;

setUp(() => {
  port = (gateway.server.address() as AddressInfo).port;
  http = supertest.agent(gateway.url);
});

/** The dev account's balance and the number of receipts, to show a refusal changed nothing. */
async function state(): Promise<{ dev: string; receipts: number }> {
  const accounts = await http.get('/v0/accounts');
  assert.equal(accounts.status, 200);
  const receipts = await http.get('/v0/receipts?limit=500');
  return { dev: accounts.body.accounts.find((a: { account: string }) => a.account === 'dev').balance, receipts: receipts.body.receipts.length };
}

test('normalizeHost: host[:port] or a URL, lower case, default port left out; anything else is null', () => {
  assert.equal(normalizeHost('LocalHost:4000'), 'localhost:4000');
  assert.equal(normalizeHost('127.0.0.1:80'), '127.0.0.1');
  assert.equal(normalizeHost('[::1]:4000'), '[::1]:4000');
  assert.equal(normalizeHost('https://Holon.Example.com'), 'holon.example.com');
  assert.equal(normalizeHost('https://holon.example.com:8443/'), 'holon.example.com:8443');
  for (const bad of ['', ' ', 'a b', 'evil.com/path', 'user@evil.com', 'http://user:pw@evil.com', 'evil.com:99999']) assert.equal(normalizeHost(bad), null, bad);
});

test('listenHosts: a loopback listener answers to 127.0.0.1, localhost and [::1] with its port', () => {
  assert.deepEqual(listenHosts('127.0.0.1', 4000), ['127.0.0.1:4000', 'localhost:4000', '[::1]:4000']);
  assert.deepEqual(listenHosts('::1', 4000), ['127.0.0.1:4000', 'localhost:4000', '[::1]:4000']);
  assert.deepEqual(listenHosts('192.0.2.9', 4000), ['192.0.2.9:4000']);
  assert.ok(listenHosts('0.0.0.0', 4000).includes('localhost:4000'));
});

test('the repro: POST /v0/calls from a rebound page (Host and Origin evil.example.com) is refused 403 and bills nothing', async () => {
  const before = await state();
  const res = await http.post('/v0/calls').set('Host', 'evil.example.com').set('Origin', 'http://evil.example.com').send(CALL);
  assert.equal(res.status, 403);
  assert.equal(res.body.code, 'not_permitted');
  assert.match(res.body.error, /^Host "evil\.example\.com" is not a name of this gateway/);
  // With the gateway's port too, as a rebound page on that port sends it.
  const ported = await http.post('/v0/calls').set('Host', `evil.example.com:${port}`).set('Origin', `http://evil.example.com:${port}`).send(CALL);
  assert.equal(ported.status, 403);
  await gateway.outbox.drain();
  assert.deepEqual(await state(), before);
});

test('a foreign Origin is refused 403 even with a good Host, and changes nothing', async () => {
  const before = await state();
  for (const origin of ['http://evil.example.com', `http://evil.example.com:${port}`, 'null', `https://localhost:${port + 1}`, `ftp://127.0.0.1:${port}`]) {
    const res = await http.post('/v0/calls').set('Host', `127.0.0.1:${port}`).set('Origin', origin).send(CALL);
    assert.equal(res.status, 403, origin);
    assert.deepEqual(res.body, { error: `Origin ${JSON.stringify(origin)} is not this gateway: requests from other web pages are refused; name it with --allowed-hosts or HOLON_ALLOWED_HOSTS if it is this gateway`, code: 'not_permitted' });
  }
  assert.deepEqual(await state(), before);
});

test('a Host of another port of loopback, or none at all, is refused', async () => {
  assert.equal((await http.get('/v0/accounts').set('Host', `127.0.0.1:${port + 1}`)).status, 403);
  assert.equal((await http.get('/v0/accounts').set('Host', '127.0.0.1')).status, port === 80 ? 200 : 403);
  assert.equal((await http.get('/v0/accounts').set('Host', '')).status, 403);
});

test('/mcp initialize from a rebound page is refused 403 with a JSON-RPC error, and no session is opened', async () => {
  const res = await http.post('/mcp').set(MCP_HEADERS).set('Host', 'evil.example.com').set('Origin', 'http://evil.example.com').send(INITIALIZE);
  assert.equal(res.status, 403);
  assert.equal(res.headers['mcp-session-id'], undefined);
  assert.equal(res.body.jsonrpc, '2.0');
  assert.equal(res.body.id, null);
  assert.equal(res.body.error.code, -32000);
  assert.match(res.body.error.message, /^Host "evil\.example\.com" is not a name of this gateway/);
  const origin = await http.post('/mcp').set(MCP_HEADERS).set('Origin', 'http://evil.example.com').send(INITIALIZE);
  assert.equal(origin.status, 403);
  assert.match(origin.body.error.message, /^Origin "http:\/\/evil\.example\.com" is not this gateway/);
});

test('the loopback names with the port, the configured public names, and their own Origins are served', async () => {
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`, 'holon.example.com', 'public.example.org:8443']) {
    const res = await http.get('/v0/accounts').set('Host', host);
    assert.equal(res.status, 200, host);
  }
  const sameOrigin = await http.get('/v0/accounts').set('Host', `localhost:${port}`).set('Origin', `http://localhost:${port}`);
  assert.equal(sameOrigin.status, 200);
  const publicOrigin = await http.get('/v0/accounts').set('Host', 'holon.example.com').set('Origin', 'https://holon.example.com');
  assert.equal(publicOrigin.status, 200);
  const init = await http.post('/mcp').set(MCP_HEADERS).set('Host', `localhost:${port}`).set('Origin', `http://localhost:${port}`).send(INITIALIZE);
  assert.equal(init.status, 200);
  assert.ok(init.headers['mcp-session-id']);
});

test('the health check stays outside the gate', async () => {
  const res = await http.get('/healthz').set('Host', 'evil.example.com');
  assert.equal(res.status, 200);
});

test('HOLON_ALLOWED_HOSTS names public names when the option is not given', async () => {
  const other = await withEnv({ HOLON_ALLOWED_HOSTS: 'a.example.com, https://b.example.com' }, () => startFreshDevGateway());
  try {
    const agent = supertest(other.url);
    assert.equal((await agent.get('/v0/accounts').set('Host', 'a.example.com')).status, 200);
    assert.equal((await agent.get('/v0/accounts').set('Host', 'b.example.com').set('Origin', 'https://b.example.com')).status, 200);
    assert.equal((await agent.get('/v0/accounts').set('Host', 'c.example.com')).status, 403);
  } finally {
    await other.close();
  }
});

/** This machine's first non-loopback IPv4 address, if any. */
const external = Object.values(networkInterfaces())
  .flat()
  .find((entry) => entry && !entry.internal && entry.family === 'IPv4');

test('a gateway on loopback refuses a non-loopback peer; one told to listen on 0.0.0.0 serves it under its address', { skip: external ? false : 'this machine has no non-loopback IPv4 address' }, async () => {
  const wide = await startFreshDevGateway({ host: '0.0.0.0' });
  try {
    const widePort = (wide.server.address() as AddressInfo).port;
    const served = await fetch(`http://${external!.address}:${widePort}/v0/accounts`);
    assert.equal(served.status, 200);
    const foreign = await supertest(`http://${external!.address}:${widePort}`).get('/v0/accounts').set('Host', 'evil.example.com');
    assert.equal(foreign.status, 403);
  } finally {
    await wide.close();
  }
  // The loopback gateway of this file cannot be reached from outside at all.
  await assert.rejects(fetch(`http://${external!.address}:${port}/v0/accounts`));
});

test('a gateway on loopback refuses a peer that is not loopback, should one arrive (middleware, peer 192.0.2.7)', async () => {
  const gate = hostGate({ hosts: ['127.0.0.1:4000'], loopback_peers_only: true, open: ['/healthz'], rpc_paths: ['/mcp'] });
  const context = (remoteAddress: string) => ({ path: '/v0/calls', status: 404, body: undefined, req: { socket: { remoteAddress }, headers: { host: '127.0.0.1:4000' } } }) as unknown as Koa.Context;
  let reached = 0;
  const next = async () => void reached++;
  const outside = context('192.0.2.7');
  await gate(outside, next);
  assert.equal(outside.status, 403);
  assert.deepEqual(outside.body, { error: 'this gateway listens on loopback and answers only local callers; the peer 192.0.2.7 is not loopback (listen elsewhere with --host)', code: 'not_permitted' });
  assert.equal(reached, 0);
  await gate(context('::ffff:127.0.0.1'), next);
  assert.equal(reached, 1);
});
