/**
 * Webhook drafts (gateway §6 "Drafting a listing", issue 10 §4): `POST /v0/agents/draft` calls the
 * endpoint once through the guarded client, with the credential set for `<handle>/<name>`, and
 * answers a valid draft manifest and its YAML; nothing is stored. Every field is bounded, and the
 * endpoint check refuses loopback without HOLON_ALLOW_PRIVATE_ENDPOINTS=1.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { parse as parseYaml } from 'yaml';
import { validateManifest } from '../../src/contracts/manifest.ts';
import { startTestHosted, type TestAccount, type TestHosted } from '../helpers/hosted.ts';
import { selfSignedCertificate } from '../helpers/https-agent.ts';

interface Seen {
  headers: IncomingHttpHeaders;
  body: string;
}

let hosted: TestHosted;
let strict: TestHosted;
let A: TestAccount;
let server: Server;
let base: string;
const seen: Seen[] = [];

/** One loopback server: `/table` answers rows, `/fail` 500 without a body, `/moved` a redirect to `/table`, `/declared` an error body. */
before(async () => {
  const { key, cert } = selfSignedCertificate();
  server = createServer({ key, cert }, (req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      seen.push({ headers: req.headers, body });
      if (req.url === '/table') return res.setHeader('content-type', 'application/json').end('{"rows":2,"columns":["a","b"]}');
      if (req.url === '/moved') return res.writeHead(302, { location: '/table' }).end();
      if (req.url === '/declared') return res.writeHead(422).end('{"error":{"code":"no_table_found","message":"no table"}}');
      if (req.url === '/huge') return res.setHeader('content-type', 'application/json').end(JSON.stringify({ blob: 'x'.repeat(70_000) }));
      res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const ca = cert.toString('utf8');
  hosted = await startTestHosted({ ca, settings: { file_secret: 'drafts-test-secret-0123456789abcdef', allow_private_endpoints: true } });
  strict = await startTestHosted({ ca, settings: { file_secret: 'drafts-test-secret-0123456789abcdef', allow_private_endpoints: false } });
  A = await hosted.signup();
});

after(async () => {
  await hosted?.close();
  await strict?.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const draft = (body: Record<string, unknown>, on: TestHosted = hosted, account: TestAccount = A) =>
  on.http.post('/v0/agents/draft').set('authorization', `Bearer ${account.human}`).send(body);

test('a draft calls the endpoint once with the credential and answers a valid manifest and the same YAML; nothing is stored', async () => {
  assert.equal((await hosted.http.put(`/v0/agents/${A.handle}/tables/credential`).set('authorization', `Bearer ${A.human}`).send({ token: 'tbl-secret' })).status, 200);
  const agentsBefore = await hosted.running.db.knex('gateway_agents').count<{ count: string | number }[]>('* as count');
  seen.length = 0;
  const response = await draft({ name: 'tables', endpoint: `${base}/table`, input: { csv: 'a,b\n1,2' }, summary: 'Finds the table.', price: { model: 'per_run', currency: 'EUR', amount: '0.05' } });
  assert.equal(response.status, 200, JSON.stringify(response.body));
  assert.equal(seen.length, 1);
  assert.equal(seen[0].headers.authorization, 'Bearer tbl-secret');
  assert.equal(seen[0].headers['x-holon-agent'], `${A.handle}/tables@0.1.0`);
  assert.deepEqual(JSON.parse(seen[0].body), { csv: 'a,b\n1,2' });
  assert.deepEqual(response.body.manifest, {
    id: `${A.handle}/tables`,
    version: '0.1.0',
    summary: 'Finds the table.',
    capabilities: [],
    interface: {
      input: { type: 'object', properties: { csv: { type: 'string' } }, required: ['csv'] },
      output: { type: 'object', properties: { rows: { type: 'integer' }, columns: { type: 'array', items: { type: 'string' } } }, required: ['rows', 'columns'] },
    },
    price: { model: 'per_run', currency: 'EUR', amount: '0.05' },
    runtime: { kind: 'webhook', endpoint: `${base}/table` },
    license: 'proprietary',
    examples: [{ input: { csv: 'a,b\n1,2' }, output: { rows: 2, columns: ['a', 'b'] } }],
  });
  assert.deepEqual(parseYaml(response.body.yaml), response.body.manifest);
  assert.doesNotThrow(() => validateManifest(response.body.manifest));
  const agentsAfter = await hosted.running.db.knex('gateway_agents').count<{ count: string | number }[]>('* as count');
  assert.equal(Number(agentsAfter[0].count), Number(agentsBefore[0].count));
});

test('defaults: free in EUR and a summary naming the host; no credential set means no Authorization header', async () => {
  seen.length = 0;
  const response = await draft({ name: 'plain', endpoint: `${base}/table`, input: [1, 2] });
  assert.equal(response.status, 200, JSON.stringify(response.body));
  assert.deepEqual(response.body.manifest.price, { model: 'free', currency: 'EUR' });
  assert.equal(response.body.manifest.summary, `A webhook agent at ${new URL(base).host}.`);
  assert.deepEqual(response.body.manifest.interface.input, { type: 'array', items: { type: 'integer' } });
  assert.equal(seen[0].headers.authorization, undefined);
});

test('with the development flag a loopback https endpoint is drafted, but an http one is still refused 422 endpoint_refused and never called', async () => {
  seen.length = 0;
  const plain = `http://127.0.0.1:${new URL(base).port}/table`;
  const response = await draft({ name: 'plain', endpoint: plain, input: {} });
  assert.deepEqual([response.status, response.body.code], [422, 'endpoint_refused']);
  assert.equal(response.body.error, `runtime.endpoint ${JSON.stringify(plain)} is refused: it must be an https URL (HOLON_ALLOW_PRIVATE_ENDPOINTS lifts the address check only)`);
  assert.equal(seen.length, 0);
  assert.equal((await draft({ name: 'plain', endpoint: `${base}/table`, input: {} })).status, 200);
});

test('without the development flag a loopback or http endpoint is refused 422 endpoint_refused, and never called', async () => {
  const B = await strict.signup();
  seen.length = 0;
  for (const endpoint of [`${base}/table`, `http://127.0.0.1:${new URL(base).port}/table`, 'https://[::1]/table', 'https://169.254.169.254/latest', 'https://user:pw@example.com/hook']) {
    const response = await draft({ name: 'nope', endpoint, input: {} }, strict, B);
    assert.equal(response.status, 422, endpoint);
    assert.equal(response.body.code, 'endpoint_refused', endpoint);
  }
  assert.equal(seen.length, 0);
});

test('the example call failing answers 502 with the runtime code; a redirect is not followed', async () => {
  seen.length = 0;
  const moved = await draft({ name: 'moved', endpoint: `${base}/moved`, input: {} });
  assert.equal(moved.status, 502);
  assert.equal(moved.body.code, 'agent_error');
  assert.match(moved.body.error, /redirects are not followed/);
  assert.deepEqual(seen.map((s) => s.body), ['{}'], 'the redirect target was not called');
  const failed = await draft({ name: 'failing', endpoint: `${base}/fail`, input: {} });
  assert.equal(failed.status, 502);
  assert.equal(failed.body.code, 'agent_error');
  const declared = await draft({ name: 'declared', endpoint: `${base}/declared`, input: {} });
  assert.equal(declared.status, 502);
  assert.match(declared.body.error, /error no_table_found/);
  const closed = await draft({ name: 'closed', endpoint: 'https://127.0.0.1:1/hook', input: {} });
  assert.equal(closed.status, 502);
  assert.equal(closed.body.code, 'runtime_unavailable');
});

test('bounds: every field is refused past its bound with 422, and the endpoint is not called', async () => {
  seen.length = 0;
  const refusals: Array<[Record<string, unknown>, RegExp | null]> = [
    [{ name: 'Bad_Name', endpoint: `${base}/table`, input: {} }, null],
    [{ name: 'x'.repeat(65), endpoint: `${base}/table`, input: {} }, null],
    [{ name: 'ok', endpoint: `${base}/${'a'.repeat(2048)}`, input: {} }, null],
    [{ name: 'ok', endpoint: `${base}/table`, input: { blob: 'x'.repeat(70_000) } }, /at most 65536/],
    [{ name: 'ok', endpoint: `${base}/table`, input: {}, summary: 's'.repeat(281) }, null],
    [{ name: 'ok', endpoint: `${base}/table`, input: {}, summary: '' }, null],
    [{ name: 'ok', endpoint: `${base}/table`, input: {}, price: { model: 'per_unit', currency: 'EUR', amount: '0.01' } }, null],
    [{ name: 'ok', endpoint: `${base}/table`, input: {}, price: { model: 'per_run', currency: 'EUR' } }, /not be a valid manifest/],
    [{ name: 'ok', endpoint: `${base}/table`, input: {}, extra: 1 }, null],
    [{ name: 'ok', endpoint: `${base}/table` }, null],
    [{ name: 'ok', endpoint: 'not a url', input: {} }, /not a URL/],
  ];
  for (const [body, why] of refusals) {
    const response = await draft(body);
    assert.equal(response.status, 422, JSON.stringify(body).slice(0, 120));
    if (why) assert.match(response.body.error, why);
  }
  assert.equal(seen.length, 0);
  const huge = await draft({ name: 'huge', endpoint: `${base}/huge`, input: {} });
  assert.equal(huge.status, 422);
  assert.match(huge.body.error, /the endpoint's answer is \d+ bytes of JSON; a draft's example holds at most 65536/);
});
