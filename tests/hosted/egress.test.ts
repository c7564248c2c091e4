/**
 * Network safety of the hosted gateway (gateway §7 "Network safety", issue 10 §2): a corpus of
 * hostile endpoints, every one refused by the publish-time check (`assertPublicEndpoint`) and by
 * the guarded client at connect time, with no socket opened (counted on Node's
 * `net.client.socket` channel) and no connection reaching a loopback server they all point at.
 * Names resolve through an injected stand-in resolver: the machine's DNS is never asked.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { literalAddress, refusalOf } from '../../src/hosted/addresses.ts';
import { assertPublicEndpoint, EndpointRefused, guardedFetch, privateEndpointsAllowed, type Resolve } from '../../src/hosted/egress.ts';
import { readSettings } from '../../src/hosted/settings.ts';
import { HttpError } from '../../src/http/errors.ts';
import { createMcpRuntime } from '../../src/runtimes/mcp.ts';
import { createWebhookRuntime } from '../../src/runtimes/webhook.ts';
import { remoteTarget, runRequest, startMcpServer } from '../helpers/runtimes.ts';

/** What the stand-in resolver answers per name; `rebind.example` answers public once, then loopback. */
const ZONE: Record<string, string[]> = {
  localhost: ['127.0.0.1', '::1'],
  'metadata.google.internal': ['169.254.169.254'],
  'internal.example': ['10.0.0.5'],
  'mixed.example': ['93.184.216.34', '10.0.0.1'],
  'v6loop.example': ['::1'],
  'mapped.example': ['::ffff:127.0.0.1'],
  'nat64.example': ['64:ff9b::a9fe:a9fe'],
  'cgnat.example': ['100.64.0.7'],
  'ula.example': ['fd12:3456::1'],
  'public.example': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
};

/** A resolver stand-in: the zone above, and a name that rebinds after its first answer. */
function standIn(): Resolve & { asked: string[] } {
  const asked: string[] = [];
  let rebinds = 0;
  const resolve = async (hostname: string) => {
    asked.push(hostname);
    if (hostname === 'rebind.example') return rebinds++ === 0 ? ['93.184.216.34'] : ['127.0.0.1'];
    const answer = ZONE[hostname.replace(/\.$/, '')];
    if (!answer) throw Object.assign(new Error(`no such name ${hostname}`), { code: 'ENOTFOUND' });
    return answer;
  };
  return Object.assign(resolve, { asked });
}

/** Hosts of the corpus: each form gateway §7 names (the URL gets the loopback server's port). */
const HOSTILE_HOSTS = [
  // loopback
  '127.0.0.1', '127.1.2.3', '[::1]', 'localhost', 'localhost.', 'v6loop.example',
  // unspecified
  '0.0.0.0', '0.1.2.3', '[::]',
  // private
  '10.0.0.1', '172.16.5.4', '172.31.255.255', '192.168.1.1', '[fd00::1]', '[fc00::1]', 'internal.example', 'ula.example',
  // link-local and cloud metadata
  '169.254.1.1', '[fe80::1]', '169.254.169.254', '[fd00:ec2::254]', 'metadata.google.internal', '100.100.100.200',
  // carrier-grade NAT
  '100.64.0.1', '100.127.255.254', 'cgnat.example',
  // multicast and broadcast
  '224.0.0.1', '239.255.255.250', '[ff02::1]', '255.255.255.255',
  // reserved and documentation ranges
  '240.0.0.1', '192.0.2.1', '198.51.100.1', '203.0.113.1', '198.18.0.1', '192.0.0.1', '[2001:db8::1]',
  // IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo
  '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[::ffff:10.0.0.1]', '[::ffff:169.254.169.254]', '[::127.0.0.1]', 'mapped.example',
  '[64:ff9b::7f00:1]', '[64:ff9b::a9fe:a9fe]', '[64:ff9b:1::a00:1]', 'nat64.example', '[2002:7f00:1::1]', '[2001::7f00:1]',
  // IPv4 in decimal, octal, hex, short forms, with and without a trailing dot
  '2130706433', '3232235777', '2852039166', '0177.0.0.1', '017700000001', '0x7f.0.0.1', '0x7f000001', '0xa9.0xfe.0xa9.0xfe',
  '127.1', '10.1', '127.0.0.1.', '2130706433.', '0x7f000001.', '0177.0.0.1.',
  // a name with one public and one private answer
  'mixed.example',
];

let server: Server;
let port: number;
let connections = 0;

before(async () => {
  server = createServer((_req, res) => res.end('{"ok":true}'));
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

after(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Runs `body` and answers how many sockets Node opened meanwhile. */
async function socketsOpenedDuring(body: () => Promise<void>): Promise<number> {
  let opened = 0;
  const count = () => opened++;
  subscribe('net.client.socket', count);
  try {
    await body();
  } finally {
    unsubscribe('net.client.socket', count);
  }
  return opened;
}

test('the corpus holds at least 40 hostile endpoints, every form named', () => {
  assert.ok(HOSTILE_HOSTS.length >= 40, `${HOSTILE_HOSTS.length} endpoints`);
  assert.equal(new Set(HOSTILE_HOSTS).size, HOSTILE_HOSTS.length);
});

test('publish-time check: every hostile endpoint is refused 422 endpoint_refused', async () => {
  const resolve = standIn();
  const accepted: string[] = [];
  for (const host of HOSTILE_HOSTS) {
    const url = `https://${host}:${port}/agent`;
    try {
      await assertPublicEndpoint(url, { allow_private: false, resolve });
      accepted.push(url);
    } catch (error) {
      assert.ok(error instanceof HttpError, `${url}: ${error}`);
      assert.equal(error.status, 422);
      assert.equal(error.code, 'endpoint_refused');
    }
  }
  assert.deepEqual(accepted, []);
});

test('connect time: the guarded client refuses every hostile endpoint, opens no socket, and the loopback server sees no connection', async () => {
  const resolve = standIn();
  const fetch = guardedFetch({ allow_private: false, resolve });
  const reached: string[] = [];
  const before_connections = connections;
  const opened = await socketsOpenedDuring(async () => {
    for (const host of HOSTILE_HOSTS) {
      const url = `https://${host}:${port}/agent`;
      try {
        await fetch(url, { method: 'POST', body: '{}' });
        reached.push(url);
      } catch (error) {
        assert.ok((error as Error).cause instanceof EndpointRefused, `${url}: ${(error as Error).cause ?? error}`);
      }
    }
  });
  assert.deepEqual(reached, []);
  assert.equal(opened, 0, 'sockets opened while the corpus was refused');
  assert.equal(connections, before_connections);
});

test('DNS rebinding: a name public at publish time and loopback at call time is refused at call time, before any socket', async () => {
  const resolve = standIn();
  const url = `http://rebind.example:${port}/agent`;
  await assertPublicEndpoint(url.replace('http:', 'https:'), { allow_private: false, resolve });
  const fetch = guardedFetch({ allow_private: false, resolve });
  const before_connections = connections;
  let refusal: unknown;
  const opened = await socketsOpenedDuring(async () => {
    refusal = await fetch(url).then(() => null, (error: Error) => error.cause);
  });
  assert.ok(refusal instanceof EndpointRefused);
  assert.match(refusal.message, /rebind\.example resolves to 127\.0\.0\.1, which is a loopback address/);
  assert.deepEqual(resolve.asked, ['rebind.example', 'rebind.example']);
  assert.equal(opened, 0);
  assert.equal(connections, before_connections);
});

test('the same loopback server is reached with the development flag, so the refusals above are the guard', async () => {
  const fetch = guardedFetch({ allow_private: true });
  const before_connections = connections;
  let response: Response | undefined;
  const opened = await socketsOpenedDuring(async () => {
    response = await fetch(`http://127.0.0.1:${port}/agent`);
  });
  assert.equal(response!.status, 200);
  assert.deepEqual(await response!.json(), { ok: true });
  assert.equal(opened, 1, 'the socket counter sees a connection that is made');
  assert.equal(connections, before_connections + 1);
});

test('redirects are never followed, even when the caller asks to follow them', async () => {
  const target = createServer((_req, res) => res.end('target'));
  let targetHits = 0;
  target.on('request', () => targetHits++);
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  const redirecting = createServer((_req, res) => {
    res.writeHead(307, { location: `http://127.0.0.1:${(target.address() as AddressInfo).port}/` }).end();
  });
  await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve));
  try {
    const response = await guardedFetch({ allow_private: true })(`http://127.0.0.1:${(redirecting.address() as AddressInfo).port}/`, { redirect: 'follow' });
    assert.equal(response.status, 307);
    assert.equal(targetHits, 0);
  } finally {
    await new Promise<void>((resolve) => redirecting.close(() => resolve()));
    await new Promise<void>((resolve) => target.close(() => resolve()));
  }
});

test('publish-time check: public endpoints pass; http, credentials, a name that does not resolve, and an overlong URL are refused', async () => {
  const resolve = standIn();
  const check = (url: string) => assertPublicEndpoint(url, { allow_private: false, resolve });
  await check('https://public.example/agent');
  await check('https://93.184.216.34/agent');
  await check('https://[2606:4700::1111]/mcp');
  const refused = async (url: string, why: RegExp) => {
    await assert.rejects(check(url), (error: HttpError) => error.status === 422 && error.code === 'endpoint_refused' && why.test(error.message));
  };
  await refused('http://public.example/agent', /must be an https URL/);
  await refused('https://user:pw@public.example/agent', /carries credentials/);
  await refused('https://token@public.example/agent', /carries credentials/);
  await refused('https://nowhere.example/agent', /nowhere\.example does not resolve \(ENOTFOUND\)/);
  await refused('not a url', /is not a URL/);
  await refused(`https://public.example/${'a'.repeat(2048)}`, /longer than 2048 characters/);
  await refused('https://mixed.example/', /mixed\.example resolves to 10\.0\.0\.1, which is a private address/);
});

test('the development flag lets loopback through, never http, and never in production', async () => {
  await assertPublicEndpoint('https://127.0.0.1:1/agent', { allow_private: true });
  await assert.rejects(assertPublicEndpoint('http://127.0.0.1:1/agent', { allow_private: true }), /must be an https URL \(HOLON_ALLOW_PRIVATE_ENDPOINTS lifts the address check only\)/);
  await assert.rejects(assertPublicEndpoint('https://u:p@127.0.0.1/agent', { allow_private: true }), /carries credentials/);
  assert.equal(privateEndpointsAllowed({ HOLON_ALLOW_PRIVATE_ENDPOINTS: '1' }), true);
  assert.equal(privateEndpointsAllowed({ HOLON_ALLOW_PRIVATE_ENDPOINTS: '1', NODE_ENV: 'production' }), false);
  assert.equal(privateEndpointsAllowed({}), false);
  const dev = readSettings({ HOLON_ALLOW_PRIVATE_ENDPOINTS: '1', HOLON_FILE_SECRET: 'a-file-secret' });
  assert.equal(dev.allow_private_endpoints, true);
  assert.equal(dev.file_secret, 'a-file-secret');
  assert.equal(readSettings({}).allow_private_endpoints, false);
});

test('addresses: raw host strings in every IPv4 notation read as the address they connect to', () => {
  assert.equal(literalAddress('2130706433'), '127.0.0.1');
  assert.equal(literalAddress('0177.0.0.1.'), '127.0.0.1');
  assert.equal(literalAddress('0x7f.1'), '127.0.0.1');
  assert.equal(literalAddress('[::1]'), '::1');
  assert.equal(literalAddress('example.com'), null);
  assert.equal(refusalOf('fe80::1%eth0'), 'scoped (an IPv6 zone is link-local)');
  assert.equal(refusalOf('::ffff:8.8.8.8'), 'ipv4Mapped');
  assert.equal(refusalOf('64:ff9b::808:808'), 'rfc6052');
  assert.equal(refusalOf('::808:808'), 'outside IPv6 global unicast (2000::/3)');
  assert.equal(refusalOf('8.8.8.8'), null);
  assert.equal(refusalOf('2606:4700::1111'), null);
});

test('both runtimes work through the guarded client: an MCP session with the Bearer credential on every request, a webhook', async () => {
  const mcp = await startMcpServer(() => ({ content: [], structuredContent: { rows: 3 } }));
  try {
    const fetch = guardedFetch({ allow_private: true });
    const outcome = await createMcpRuntime({ fetch }).run(runRequest(remoteTarget('mcp', `${mcp.url}/mcp`, 'echo'), { input: { q: 1 }, credential: 'tok_author' }));
    assert.deepEqual(outcome, { kind: 'output', output: { rows: 3 }, units: null, quote: null });
    assert.ok(mcp.received.length >= 3, 'initialize, initialized, tools/call');
    for (const request of mcp.received) assert.equal(request.headers.authorization, 'Bearer tok_author');
    const webhook = await createWebhookRuntime({ fetch }).run(runRequest(remoteTarget('webhook', `http://127.0.0.1:${port}/agent`), { input: { q: 1 } }));
    assert.deepEqual(webhook, { kind: 'output', output: { ok: true }, units: null, quote: null });
  } finally {
    await mcp.close();
  }
});

test('both runtimes refuse a loopback endpoint through the guarded client without the flag: runtime_unavailable naming the range', async () => {
  const fetch = guardedFetch({ allow_private: false });
  const before_connections = connections;
  for (const runtime of [createMcpRuntime({ fetch }), createWebhookRuntime({ fetch })]) {
    const outcome = await runtime.run(runRequest(remoteTarget('mcp', `http://127.0.0.1:${port}/agent`, 'echo'), { input: { q: 1 } }));
    assert.equal(outcome.kind, 'failure');
    assert.equal((outcome as { code: string }).code, 'runtime_unavailable');
    assert.match((outcome as { message: string }).message, /127\.0\.0\.1 is a loopback address/);
  }
  assert.equal(connections, before_connections);
});

test('a pinned connection still speaks TLS to the name: SNI and the certificate check use the host, not the address', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'holon-egress-tls-'));
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=agent.example', '-addext', 'subjectAltName=DNS:agent.example', '-keyout', key, '-out', cert], { stdio: 'ignore' });
  const names: Array<string | false | null> = [];
  const tls = createTlsServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
    names.push((req.socket as import('node:tls').TLSSocket).servername);
    res.end('{"tls":true}');
  });
  await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
  const tlsPort = (tls.address() as AddressInfo).port;
  try {
    const resolve: Resolve = async (hostname) => (hostname === 'agent.example' || hostname === 'other.example' ? ['127.0.0.1'] : []);
    const fetch = guardedFetch({ allow_private: true, resolve, ca: readFileSync(cert, 'utf8') });
    const response = await fetch(`https://agent.example:${tlsPort}/`);
    assert.deepEqual(await response.json(), { tls: true });
    assert.deepEqual(names, ['agent.example']);
    await assert.rejects(fetch(`https://other.example:${tlsPort}/`), (error: Error) => /altnames|other\.example/i.test(String((error.cause as Error)?.message)));
  } finally {
    await new Promise<void>((resolve) => tls.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  }
});
