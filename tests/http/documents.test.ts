/**
 * The documents describe everything the servers answer (issue 25 §3): real traffic to every
 * operation of `openapi/gateway.yaml` (on the dev gateway and on the hosted gateway) and of
 * `openapi/clearing.yaml` (on the reference binding) is replayed through the response validator
 * built from the bundled documents (`tests/helpers/documents.ts`), and any answer they do not
 * describe (an undeclared status, a body off its schema or of an undeclared media type, an
 * undeclared rate-limit, security or CORS header) fails the test, each one listed.
 *
 * The operations are walked from the generated tables, so an operation added to a document is
 * sent every refusal class without a change here: a plain request, a NUL in the request target
 * (422), a malformed query value (422), a body that is not JSON (415), a `Host` and an `Origin`
 * that are not the gateway's (403 `not_permitted`), a proxy header at the binding (403
 * `not_permitted`); on the dev gateway the hosted-only operations (404 `not_offered`); on the
 * hosted gateway a key that is no key (401), a principal the operation is not for (403 or 401),
 * the rate limit (429 with `Retry-After`); at a binding offering one operation the others (404
 * `not_offered`). Then a success (and the refusals a user meets) of each operation.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import pino from 'pino';
import { operationTable as clearingTable, type Operation as ClearingOperation } from '../../generated/clearing/server.ts';
import { operationTable as gatewayTable, type Operation as GatewayOperation } from '../../generated/gateway/server.ts';
import { createClearingApp } from '../../src/clearing/app.ts';
import { openDatabase, type Database } from '../../src/db/index.ts';
import { linkKey, signedPath } from '../../src/hosted/file-links.ts';
import { OPERATION_PRINCIPALS } from '../../src/hosted/policy.ts';
import { DEFAULT_RATE_LIMITS } from '../../src/hosted/limits.ts';
import { clearingResponses, gatewayResponses, ResponseValidator } from '../helpers/documents.ts';
import { freshStore, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startGithubStandin, standinSettings, type GithubStandin } from '../helpers/github-standin.ts';
import { ADMIN_KEY, FILE_SECRET, startTestHosted, type TestAccount, type TestHosted } from '../helpers/hosted.ts';

const SITE = 'https://site.example';

/** A server under test: its base URL and the document its answers are held to. */
interface Target {
  name: string;
  url: string;
  validator: ResponseValidator;
}

/** An answer as received. */
interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

/** Every answer the documents do not describe, once each. */
const violations = new Set<string>();
/** `<server> <operationId>` → the statuses seen. */
const seen = new Map<string, Set<number>>();

/**
 * Sends one request (the path as given, percent escapes and all) and holds the answer to the
 * target's document.
 */
async function send(
  target: Target,
  method: string,
  requestPath: string,
  options: { headers?: Record<string, string>; body?: string | Buffer; json?: unknown; key?: string | null } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  let body = options.body;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] ??= 'application/json';
  }
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  const url = new URL(target.url);
  const answer = await new Promise<Answer>((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method: method.toUpperCase(), path: requestPath, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: any = null;
        try {
          json = JSON.parse(text);
        } catch {
          // Not JSON: a file, a redirect's courtesy text.
        }
        resolve({ status: res.statusCode!, headers: res.headers, text, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
  for (const violation of target.validator.violations({ method, path: requestPath, status: answer.status, headers: answer.headers, text: answer.text })) {
    violations.add(`${target.name}: ${violation}`);
  }
  const op = target.validator.operationOf(method, requestPath);
  if (op) {
    const key = `${target.name} ${op.operationId}`;
    seen.set(key, (seen.get(key) ?? new Set()).add(answer.status));
  }
  return answer;
}

/** A value for each path parameter that reaches the handler (an object that does not exist, mostly). */
const SAMPLE_SEGMENTS: Record<string, string> = {
  ns: 'gt',
  name: 'run',
  version: '1.0.0',
  id: 'nothing',
  issuer: 'nobody',
  prefix: 'hlk_a_nothing',
  handle: 'nobody',
  agentKey: 'nobody',
  account: 'nobody',
  txnId: 'nothing',
  holdId: 'nothing',
};

/** The operation's path with sample segments (`/v0/agents/gt/run`). */
function samplePath(op: { path: string }): string {
  return op.path.replace(/\{([^}]+)\}/g, (_, name: string) => SAMPLE_SEGMENTS[name] ?? 'x');
}

/** A query value of `schema`'s type that is malformed: text for an integer, a value off the pattern or enum. */
function malformedQuery(op: { query: Record<string, any> | null }): string | null {
  for (const [name, schema] of Object.entries<Record<string, any>>(op.query?.properties ?? {})) {
    if (schema.type === 'integer') return `${name}=ten`;
    if (typeof schema.pattern === 'string' || Array.isArray(schema.enum)) return `${name}=${encodeURIComponent('!! not one')}`;
  }
  return null;
}

/** The refusal classes every operation can meet, whatever the server: NUL, a malformed query, a body that is not JSON. */
async function requestClasses(target: Target, op: GatewayOperation | ClearingOperation, key: string | null, hostedOnly: boolean): Promise<void> {
  const at = samplePath(op);
  await send(target, op.method, at, { key, ...(op.body ? { json: {} } : {}) });
  const nul = await send(target, op.method, `${at}?q=%00`, { key });
  assert.equal(nul.status, 422, `${target.name} ${op.operationId} NUL: ${nul.text}`);
  const malformed = malformedQuery(op);
  if (malformed) {
    const answer = await send(target, op.method, `${at}?${malformed}`, { key });
    assert.equal(answer.status, hostedOnly ? 404 : 422, `${target.name} ${op.operationId} ${malformed}: ${answer.text}`);
  }
  if (op.body) {
    const answer = await send(target, op.method, at, { key, body: 'not json', headers: { 'content-type': 'text/plain' } });
    assert.equal(answer.status, hostedOnly ? 404 : 415, `${target.name} ${op.operationId} text/plain: ${answer.text}`);
  }
}

/** The gateway's DNS-rebinding gate (`src/http/host-gate.ts`): another `Host`, another `Origin`, on every operation but `/healthz`. */
async function gateClasses(target: Target, op: GatewayOperation, key: string | null): Promise<void> {
  const at = samplePath(op);
  const foreign: Record<string, string>[] = [{ host: 'evil.example' }, { origin: 'https://evil.example' }];
  for (const headers of foreign) {
    const answer = await send(target, op.method, at, { key, headers, ...(op.body ? { json: {} } : {}) });
    if (op.path !== '/healthz') assert.deepEqual([answer.status, answer.json?.code], [403, 'not_permitted'], `${target.name} ${op.operationId} ${JSON.stringify(headers)}`);
  }
}

/** The dev gateway's own operations; the others are the hosted gateway's (404 `not_offered` on the dev gateway). */
const DEV_OPERATIONS = new Set(['health', 'read-jwks', 'search-agents', 'read-agent', 'call', 'list-approvals', 'read-approval', 'decide-approval', 'list-receipts', 'read-receipt', 'read-mandate', 'list-accounts', 'list-settlements']);

let binding: { db: Database; server: Server; narrow: Server; target: Target; narrowTarget: Target };
let gateway: TestGateway;
let hosted: TestHosted;
let limited: TestHosted;
let github: GithubStandin;
let dev: Target;
let host: Target;
let limitedTarget: Target;
let account: TestAccount;

const listen = async (server: Server): Promise<string> => {
  if (!server.listening) await new Promise<void>((resolve) => server.once('listening', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

before(async () => {
  const store = await freshStore();
  const db = await openDatabase(store.database_url ? { url: store.database_url } : { dir: path.join(store.db, 'clearing') });
  const server = createClearingApp({ db: db.knex, logger: pino({ level: 'silent' }) }).listen(0, '127.0.0.1');
  const narrow = createClearingApp({ db: db.knex, operations: ['read-balance'], logger: pino({ level: 'silent' }) }).listen(0, '127.0.0.1');
  binding = {
    db,
    server,
    narrow,
    target: { name: 'binding', url: await listen(server), validator: clearingResponses },
    narrowTarget: { name: 'binding', url: await listen(narrow), validator: clearingResponses },
  };
  gateway = await startTestGateway({ clearing_url: binding.target.url });
  dev = { name: 'dev gateway', url: gateway.running.url, validator: gatewayResponses };
  github = await startGithubStandin();
  hosted = await startTestHosted({ settings: { ...standinSettings(github), site_url: SITE } });
  host = { name: 'hosted gateway', url: hosted.running.url, validator: gatewayResponses };
  limited = await startTestHosted({ settings: { rate_limits: { ...DEFAULT_RATE_LIMITS, address_per_minute: 1 } } });
  limitedTarget = { name: 'hosted gateway', url: limited.running.url, validator: gatewayResponses };
  account = await hosted.signup();
});

after(async () => {
  await limited?.close();
  await hosted?.close();
  await github?.close();
  await gateway?.close();
  for (const server of [binding?.server, binding?.narrow]) {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
  }
  await binding?.db.close();
});

/** The key of a principal kind on the hosted gateway. */
function keyOf(kind: string): string | null {
  return { none: null, human: account.human, agent: account.agent, admin: ADMIN_KEY }[kind] ?? null;
}

/** A principal kind the operation is open to (a human first) and one it is not, if any. */
function principals(operationId: string): { allowed: string; refused: string | null } {
  const open = OPERATION_PRINCIPALS[operationId as keyof typeof OPERATION_PRINCIPALS];
  const allowed = ['human', 'admin', 'agent', 'none'].find((kind) => open.includes(kind as never))!;
  const refused = ['agent', 'human', 'admin', 'none'].find((kind) => !open.includes(kind as never)) ?? null;
  return { allowed, refused };
}

describe('the dev gateway answers only what gateway.yaml declares', () => {
  test('every operation: a plain request, NUL, a malformed query, a body that is not JSON, another Host or Origin; hosted ones 404 not_offered', async () => {
    for (const op of gatewayTable) {
      const hostedOnly = !DEV_OPERATIONS.has(op.operationId);
      await requestClasses(dev, op, null, hostedOnly);
      await gateClasses(dev, op, null);
      if (hostedOnly) {
        const answer = await send(dev, op.method, samplePath(op), op.body ? { json: {} } : {});
        assert.deepEqual([answer.status, answer.json?.code, answer.json?.error], [404, 'not_offered', `this gateway does not offer ${op.operationId}`], op.operationId);
      }
    }
  });

  test('the calls, approvals, receipts, mandates and balances users meet', async () => {
    const mandate = await gateway.mandate();
    const careful = await gateway.mandate({ approval: { above: '0.05' } });
    const denying = await gateway.mandate({ deny: { agents: ['gt/run'] } });
    await send(dev, 'get', '/healthz');
    await send(dev, 'get', '/.well-known/jwks.json');
    await send(dev, 'get', '/v0/agents?q=table');
    await send(dev, 'get', `/v0/agents?mandate=${encodeURIComponent(mandate.id)}`);
    await send(dev, 'get', '/v0/agents?mandate=nobody%2Fnone');
    await send(dev, 'get', '/v0/agents/gt/run');
    await send(dev, 'get', '/v0/agents/gt/run@not-a-range');
    const ok = await send(dev, 'post', '/v0/calls', { json: { mandate: mandate.id, agent: 'gt/run', input: { do: 'ok' } } });
    assert.equal(ok.status, 200, ok.text);
    for (const input of [{ do: 'unbilled_error' }, { do: 'crash' }, { nope: 1 }]) await send(dev, 'post', '/v0/calls', { json: { mandate: mandate.id, agent: 'gt/run', input } });
    await send(dev, 'post', '/v0/calls', { json: { mandate: denying.id, agent: 'gt/run', input: { do: 'ok' } } });
    await send(dev, 'post', '/v0/calls', { json: { mandate: mandate.id, agent: 'nobody/none', input: {} } });
    await send(dev, 'post', '/v0/calls', { json: { mandate: 'nobody/none', agent: 'gt/run', input: {} } });
    await send(dev, 'post', '/v0/calls', { json: { agent: 'gt/run', input: {} } });
    await send(dev, 'post', '/v0/calls', { json: { mandate: mandate.id, agent: 'gt/run', input: {}, max_cost: 'lots' } });
    const held = await send(dev, 'post', '/v0/calls', { json: { mandate: careful.id, agent: 'gt/run', input: { do: 'ok' } } });
    assert.equal(held.status, 202, held.text);
    const rejected = await send(dev, 'post', '/v0/calls', { json: { mandate: careful.id, agent: 'gt/run', input: { do: 'ok' } } });
    await send(dev, 'get', '/v0/approvals');
    await send(dev, 'get', `/v0/approvals/${held.json.approval.id}`);
    await send(dev, 'post', `/v0/approvals/${held.json.approval.id}`, { json: {} });
    await send(dev, 'get', `/v0/approvals/${held.json.approval.id}?wait_s=0`);
    await send(dev, 'post', `/v0/approvals/${held.json.approval.id}`, { json: {} });
    await send(dev, 'post', `/v0/approvals/${rejected.json.approval.id}`, { json: { decision: 'reject' } });
    await send(dev, 'post', `/v0/approvals/${rejected.json.approval.id}`, { json: { run: false } });
    await send(dev, 'get', '/v0/approvals/nothing');
    const page = await send(dev, 'get', '/v0/receipts?limit=1');
    await send(dev, 'get', `/v0/receipts?limit=1&cursor=${page.json.next_cursor}`);
    await send(dev, 'get', '/v0/receipts?cursor=notacursorofthisgateway');
    await send(dev, 'get', `/v0/receipts?mandate=${encodeURIComponent(mandate.id)}`);
    await send(dev, 'get', `/v0/receipts/${ok.json.receipt.id}`);
    await send(dev, 'get', `/v0/mandates/${mandate.id}`);
    await send(dev, 'get', '/v0/accounts?limit=2');
    await gateway.settle();
    await send(dev, 'get', '/v0/settlements');
    await send(dev, 'get', '/v0/settlements?status=posted');
    assert.deepEqual([...violations].filter((v) => v.startsWith('dev gateway')), []);
  });
});

describe('the hosted gateway answers only what gateway.yaml declares', () => {
  test('every operation: the request classes, another Host or Origin, a key that is no key, a principal it is not for, the rate limit', async () => {
    let first = true;
    for (const op of gatewayTable) {
      const { allowed, refused } = principals(op.operationId);
      await requestClasses(host, op, keyOf(allowed), false);
      await gateClasses(host, op, keyOf(allowed));
      const invalid = await send(host, op.method, samplePath(op), { key: 'hlk_h_nosuchkey', ...(op.body ? { json: {} } : {}) });
      assert.deepEqual([invalid.status, invalid.json?.code], [401, 'invalid_key'], op.operationId);
      if (refused !== null) {
        const answer = await send(host, op.method, samplePath(op), { key: keyOf(refused), ...(op.body ? { json: {} } : {}) });
        assert.ok([401, 403, ...(op.body ? [422] : [])].includes(answer.status), `${op.operationId} as ${refused}: ${answer.status} ${answer.text}`);
      }
      // The limited gateway admits one request a minute from an address: the first passes, every later one is 429.
      const limitedAnswer = await send(limitedTarget, op.method, samplePath(op), op.body ? { json: {} } : {});
      if (!first) {
        assert.equal(limitedAnswer.status, 429, `${op.operationId}: ${limitedAnswer.text}`);
        assert.match(String(limitedAnswer.headers['retry-after']), /^[0-9]+$/);
      }
      first = false;
    }
  });

  test('the accounts, keys, mandates, files, publishing, moderation, catalogue and demo users meet', async () => {
    const human = account.human;
    const agent = account.agent;
    await send(host, 'get', '/healthz');
    await send(host, 'get', '/v0/features');
    await send(host, 'get', '/.well-known/jwks.json');
    await send(host, 'get', '/v0/catalog');
    await send(host, 'get', '/v0/me', { key: human });
    await send(host, 'get', '/v0/me', { key: agent });
    await send(host, 'get', '/v0/me');
    const signup = await send(host, 'post', '/v0/signup', { json: { handle: 'docs-signup', email: 'docs-signup@example.test' } });
    assert.equal(signup.status, 201, signup.text);
    await send(host, 'post', '/v0/signup', { json: { handle: 'docs-signup', email: 'other@example.test' } });
    await send(host, 'post', '/v0/signup', { json: { handle: 'x', email: 'nope' } });
    const started = await send(host, 'get', '/v0/auth/github');
    assert.equal(started.status, 302, started.text);
    const state = new URL(String(started.headers.location)).searchParams.get('state')!;
    const cookie = (started.headers['set-cookie'] as string[])[0].split(';')[0];
    const user = { id: 4242, login: 'docs-user', emails: [{ email: 'docs-user@example.test', primary: true, verified: true }] };
    const back = await send(host, 'get', `/v0/auth/github/callback?code=${github.authorize(user)}&state=${state}`, { headers: { cookie } });
    assert.equal(back.status, 302, back.text);
    const code = String(back.headers.location).slice('/console#login='.length);
    const exchanged = await send(host, 'post', '/v0/auth/exchange', { json: { code } });
    assert.equal(exchanged.status, 200, exchanged.text);
    await send(host, 'post', '/v0/auth/exchange', { json: { code } });
    await send(host, 'get', '/v0/auth/github/callback?error=access_denied');
    await send(host, 'get', '/v0/mandates', { key: human });
    const created = await send(host, 'post', '/v0/mandates', { key: human, json: { id: 'docs', grantee: `${account.handle}/bot`, allow: { agents: ['*'] }, budget: { total: '5.00' } } });
    assert.equal(created.status, 201, created.text);
    await send(host, 'post', '/v0/mandates', { key: human, json: { id: 'docs', grantee: `${account.handle}/bot`, allow: { agents: ['*'] }, budget: { total: '5.00' } } });
    await send(host, 'post', '/v0/mandates', { key: human, json: { id: 'v1.5' } });
    const key = await send(host, 'post', '/v0/keys', { key: human, json: { mandate: `${account.handle}/docs` } });
    assert.equal(key.status, 201, key.text);
    await send(host, 'post', '/v0/keys', { key: human, json: { mandate: 'nobody/none' } });
    await send(host, 'delete', `/v0/keys/${key.json.prefix}`, { key: human });
    await send(host, 'delete', `/v0/keys/${key.json.prefix}`, { key: human });
    await send(host, 'post', '/v0/admin/credit', { key: ADMIN_KEY, json: { account: account.handle, amount: '2.50' } });
    await send(host, 'post', '/v0/admin/credit', { key: ADMIN_KEY, json: { account: account.handle, amount: '1e3' } });
    await send(host, 'post', '/v0/admin/credit', { key: ADMIN_KEY, json: { account: 'nobody', amount: '1.00' } });
    await send(host, 'get', '/v0/accounts', { key: human });
    await send(host, 'get', '/v0/accounts?limit=2', { key: ADMIN_KEY });
    await send(host, 'get', '/v0/settlements', { key: ADMIN_KEY });

    const ok = await send(host, 'post', '/v0/calls', { key: agent, json: { agent: 'gt/run', input: { do: 'ok' } }, headers: { 'idempotency-key': 'docs-1' } });
    assert.equal(ok.status, 200, ok.text);
    await send(host, 'post', '/v0/calls', { key: agent, json: { agent: 'gt/run', input: { do: 'ok' } }, headers: { 'idempotency-key': 'docs-1' } });
    await send(host, 'post', '/v0/calls', { key: agent, json: { agent: 'gt/run', input: { do: 'crash' } }, headers: { 'idempotency-key': 'docs-1' } });
    await send(host, 'post', '/v0/calls', { key: agent, json: { agent: 'gt/run', input: { do: 'crash' } } });
    await send(host, 'post', '/v0/calls', { key: agent, json: { agent: 'gt/run', input: { nope: 1 } } });
    await send(host, 'post', '/v0/calls', { key: human, json: { agent: 'gt/run', input: { do: 'ok' } } });
    await send(host, 'post', '/v0/calls', { key: agent, json: { mandate: 'nobody/none', agent: 'gt/run', input: {} } });
    await send(host, 'post', '/v0/calls', { key: agent, json: { agent: 'gt/run', input: { file: 'holon://files/f_AAAAAAAAAAAAAAAAAAAAAA' } } });
    const careful = await send(host, 'post', '/v0/mandates', { key: human, json: { id: 'careful', grantee: `${account.handle}/bot`, allow: { agents: ['*'] }, budget: { total: '5.00' }, approval: { above: '0' } } });
    assert.equal(careful.status, 201, careful.text);
    const held = await send(host, 'post', '/v0/calls', { key: human, json: { mandate: `${account.handle}/careful`, agent: 'gt/run', input: { do: 'ok' } } });
    assert.equal(held.status, 202, held.text);
    const id = held.json.approval.id;
    await send(host, 'get', '/v0/approvals', { key: human });
    await send(host, 'get', `/v0/approvals/${id}`, { key: agent });
    await send(host, 'post', `/v0/approvals/${id}`, { key: agent, json: {} });
    await send(host, 'post', `/v0/approvals/${id}`, { key: human, json: { run: false } });
    await send(host, 'post', '/v0/calls', { key: human, json: { mandate: `${account.handle}/careful`, agent: 'gt/run', input: { do: 'crash' }, approval: id } });
    await send(host, 'post', '/v0/calls', { key: human, json: { mandate: `${account.handle}/careful`, agent: 'gt/run', input: { do: 'ok' }, approval: id } });
    await send(host, 'post', '/v0/calls', { key: human, json: { mandate: `${account.handle}/careful`, agent: 'gt/run', input: { do: 'ok' }, approval: id } });
    await send(host, 'post', `/v0/approvals/${id}`, { key: human, json: {} });
    await send(host, 'get', '/v0/receipts', { key: human });
    await send(host, 'get', `/v0/receipts/${ok.json.receipt.id}`, { key: agent });
    await send(host, 'get', `/v0/mandates/${account.mandate}`, { key: agent });

    const uploaded = await send(host, 'post', '/v0/files', { key: human, body: 'a;b\n1;2\n', headers: { 'content-type': 'text/csv' } });
    assert.equal(uploaded.status, 201, uploaded.text);
    await send(host, 'post', '/v0/files', { key: human, body: 'x', headers: { 'content-encoding': 'gzip' } });
    await send(host, 'post', '/v0/files', { key: human });
    const link = signedPath(linkKey(FILE_SECRET), uploaded.json.id, Date.now()).path;
    const file = await send(host, 'get', link);
    assert.deepEqual([file.status, file.text], [200, 'a;b\n1;2\n']);
    await send(host, 'get', link.replace(/sig=[^&]+/, `sig=${'A'.repeat(43)}`));

    await send(host, 'get', '/v0/me/agents', { key: human });
    await send(host, 'post', '/v0/agents', { key: human, json: { id: `${account.handle}/x`, version: '1.0.0' } });
    await send(host, 'delete', `/v0/agents/${account.handle}/x@1.0.0`, { key: human });
    await send(host, 'put', `/v0/agents/${account.handle}/x/credential`, { key: human, json: { token: 'tok' } });
    await send(host, 'delete', `/v0/agents/${account.handle}/x/credential`, { key: human });
    await send(host, 'post', '/v0/agents/draft', { key: human, json: { name: 'draft', endpoint: 'http://127.0.0.1:1/x', input: {} } });
    await send(host, 'get', '/v0/admin/accounts?q=docs', { key: ADMIN_KEY });
    await send(host, 'get', '/v0/admin/log', { key: ADMIN_KEY });
    const victim = await hosted.signup();
    await send(host, 'post', `/v0/admin/accounts/${victim.handle}/disable`, { key: ADMIN_KEY, json: { reason: 'docs test' } });
    await send(host, 'post', `/v0/admin/accounts/${victim.handle}/disable`, { key: ADMIN_KEY, json: { reason: 'docs test' } });
    await send(host, 'post', '/v0/admin/agents/gt/run@1.0.0/yank', { key: ADMIN_KEY, json: { reason: 'docs test' } });

    const tried = await send(host, 'post', '/v0/demo/gt/free', { json: { do: 'ok' }, headers: { origin: SITE } });
    assert.equal(tried.headers['access-control-allow-origin'], SITE, tried.text);
    await send(host, 'post', '/v0/demo/gt/run', { json: { do: 'ok' } });
    assert.deepEqual([...violations].filter((v) => v.startsWith('hosted gateway')), []);
  });
});

describe('the reference binding answers only what clearing.yaml declares', () => {
  test('every operation: the request classes, a proxy header (403 not_permitted), and not_offered at a binding offering one operation', async () => {
    for (const op of clearingTable) {
      await requestClasses(binding.target, op, null, false);
      const proxied = await send(binding.target, op.method, samplePath(op), { headers: { 'x-forwarded-for': '203.0.113.9' }, ...(op.body ? { json: {} } : {}) });
      if (op.path !== '/healthz') assert.deepEqual([proxied.status, proxied.json?.code], [403, 'not_permitted'], op.operationId);
      await send(binding.narrowTarget, op.method, samplePath(op), op.body ? { json: {} } : {});
    }
  });

  test('the successes and the §7 refusals a platform meets, with their §6.11 figures', async () => {
    const target = binding.target;
    const account = 'docs-holder';
    await send(target, 'get', '/healthz');
    await send(target, 'get', '/internal/clearing/capabilities');
    await send(target, 'post', '/internal/reference/accounts', { json: { account } });
    await send(target, 'post', '/internal/reference/accounts', { json: { account: 'external:x' } });
    await send(target, 'post', '/internal/reference/agent-links', { json: { agentKey: 'docs-key', account } });
    await send(target, 'post', '/internal/reference/agent-links', { json: { agentKey: 'docs-key', account: 'other' } });
    await send(target, 'get', '/internal/ledger/account-for-agent/docs-key');
    await send(target, 'post', '/internal/ledger/purchase', { json: { txnId: 'docs-fund', account, amount: 1_000_000 } });
    await send(target, 'get', `/internal/ledger/balance/${account}`);
    await send(target, 'post', '/internal/reference/accounts', { json: { account: 'docs-owner' } });
    await send(target, 'post', '/internal/ledger/charge', { json: { txnId: 'docs-settle', caller: account, owner: 'docs-owner', rate: 90, retail: 100 } });
    await send(target, 'post', '/internal/ledger/charge', { json: { txnId: 'docs-settle-x', caller: account, owner: 'docs-owner', rate: 100, retail: 90 } });
    await send(target, 'get', '/internal/ledger/settlement/docs-settle');
    await send(target, 'get', '/internal/ledger/settlement/nothing');
    await send(target, 'post', '/internal/ledger/reverse', { json: { txnId: 'docs-rev', reverses: 'docs-settle', reason: 'docs' } });
    const twice = await send(target, 'post', '/internal/ledger/reverse', { json: { txnId: 'docs-rev-2', reverses: 'docs-settle', reason: 'docs' } });
    assert.deepEqual([twice.status, twice.json.code, twice.json.reversed_by], [422, 'already_reversed', 'docs-rev']);
    await send(target, 'post', '/internal/ledger/reverse', { json: { txnId: 'docs-rev-3', reverses: 'docs-rev', reason: 'docs' } });
    await send(target, 'post', '/internal/ledger/adjust', { json: { txnId: 'docs-adj', account, delta: -5, reason: 'docs' } });
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    await send(target, 'post', '/internal/ledger/hold', { json: { holdId: 'docs-hold', account, amount: 500, expiresAt } });
    const refused = await send(target, 'post', '/internal/ledger/hold', { json: { holdId: 'docs-hold-big', account, amount: 900_000_000, expiresAt } });
    assert.deepEqual([refused.status, refused.json.code, refused.json.asked], [422, 'insufficient_funds', 900_000_000]);
    const conflict = await send(target, 'post', '/internal/ledger/hold', { json: { holdId: 'docs-hold', account, amount: 600, expiresAt } });
    assert.deepEqual([conflict.status, conflict.json.code, conflict.json.existing], [422, 'terms_conflict', { account, amount: 500 }]);
    await send(target, 'post', '/internal/ledger/resize', { json: { holdId: 'docs-hold', amount: 400 } });
    await send(target, 'post', '/internal/ledger/draw', { json: { holdId: 'docs-hold', txnId: 'docs-draw', caller: account, owner: 'docs-owner', lines: [{ meter: 'runs', amount: 100 }] } });
    await send(target, 'get', `/internal/ledger/reservations/${account}`);
    await send(target, 'get', '/internal/ledger/reservation/docs-hold');
    await send(target, 'get', `/internal/ledger/summary/${account}?limit=5`);
    await send(target, 'post', '/internal/ledger/release', { json: { holdId: 'docs-hold' } });
    await send(target, 'post', '/internal/ledger/draw', { json: { holdId: 'docs-hold', txnId: 'docs-draw-2', caller: account, owner: 'docs-owner', lines: [{ meter: 'runs', amount: 1 }] } });
    await send(target, 'post', '/internal/ledger/adjust', { json: { txnId: 'docs-adj-big', account, delta: 999_999_999_999_999, reason: 'docs' } });
    for (let i = 0; i < 4; i++) await send(target, 'post', '/internal/ledger/adjust', { json: { txnId: `docs-adj-big-${i}`, account, delta: 999_999_999_999_999, reason: 'docs' } });
    assert.deepEqual([...violations].filter((v) => v.startsWith('binding')), []);
  });
});

test('every operation of both documents was answered, and every answer is described', (t) => {
  t.diagnostic(`statuses seen: ${JSON.stringify(Object.fromEntries([...seen].map(([key, statuses]) => [key, [...statuses].sort()])))}`);
  const missing = [
    ...gatewayTable.flatMap((op) => [`dev gateway ${op.operationId}`, `hosted gateway ${op.operationId}`]),
    ...clearingTable.map((op) => `binding ${op.operationId}`),
  ].filter((key) => !seen.has(key));
  assert.deepEqual(missing, []);
  assert.deepEqual([...violations].sort(), []);
});

test('the validator names an undeclared status, a body off its schema, an undeclared media type and an undeclared header', () => {
  const answer = (status: number, text: string, headers: Record<string, string> = { 'content-type': 'application/json' }) => ({ method: 'GET', path: '/v0/receipts/r1', status, headers, text });
  assert.deepEqual(gatewayResponses.violations(answer(418, '{}')), ['GET /v0/receipts/r1 418 (read-receipt): the status is not declared']);
  assert.match(gatewayResponses.violations(answer(404, '{"code":"no_such_receipt"}'))[0], /does not match its schema at \/ \(required/);
  assert.match(gatewayResponses.violations(answer(404, 'nope', { 'content-type': 'text/html' }))[0], /a body of type text\/html is not declared/);
  assert.deepEqual(gatewayResponses.violations(answer(404, '{"error":"no","code":"no_such_receipt"}', { 'content-type': 'application/json', 'retry-after': '3' })), [
    'GET /v0/receipts/r1 404 (read-receipt): the header retry-after is not declared',
  ]);
  assert.deepEqual(gatewayResponses.violations({ ...answer(200, '{}'), path: '/v0/nothing' }), ['GET /v0/nothing 200: no operation of the document has this method and path']);
});
