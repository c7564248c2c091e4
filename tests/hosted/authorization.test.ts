/**
 * The authorization matrix of the hosted gateway (gateway §7 "Principals"): every principal
 * (none, human of A, agent of A, human of B, agent of B, admin, an expired key, a revoked key)
 * × every operation of `openapi/gateway.yaml`, with the exact status. The operations come from
 * the generated table, so an endpoint added to the document without a row here fails; every
 * expected status must also be one the document declares for that operation.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import YAML from 'yaml';
import { operationTable } from '../../generated/gateway/server.ts';
import { linkKey, signedPath } from '../../src/hosted/file-links.ts';
import { ADMIN_KEY, startTestHosted, uniqueAccount, type TestAccount, type TestHosted } from '../helpers/hosted.ts';
import { selfSignedCertificate } from '../helpers/https-agent.ts';

const PRINCIPALS = ['none', 'agentA', 'humanB', 'agentB', 'admin', 'expired', 'revoked', 'humanA'] as const;
type PrincipalName = (typeof PRINCIPALS)[number];

/** A request of one cell: method, path, body. */
interface Cell {
  path: string;
  body?: Record<string, unknown>;
  /** A raw body (a file upload), sent as application/octet-stream. */
  raw?: Buffer;
}

/** Statuses per principal; `expired` and `revoked` are always 401 `invalid_key`. */
type Expected = Record<Exclude<PrincipalName, 'expired' | 'revoked'>, number>;

const same = (status: number): Expected => ({ none: status, humanA: status, agentA: status, humanB: status, agentB: status, admin: status });

let hosted: TestHosted;
let A: TestAccount;
let B: TestAccount;
let keys: Record<PrincipalName, string | null>;
let careful: string;
let approvalId: string;
let receiptId: string;
/** A loopback https webhook for `draft-agent` (the gateway runs with HOLON_ALLOW_PRIVATE_ENDPOINTS=1 and trusts its certificate). */
let webhook: Server;
let fileLink: string;

/** A fresh pending approval under A/careful (decide-approval consumes one per cell). */
async function pendingApproval(): Promise<string> {
  const held = await hosted.http.post('/v0/calls').set('authorization', `Bearer ${A.human}`).send({ mandate: careful, agent: 'gt/run', input: { do: 'ok' } });
  assert.equal(held.status, 202, JSON.stringify(held.body));
  return held.body.approval.id;
}

/** A fresh agent key of A to revoke. */
async function throwawayKey(): Promise<string> {
  const created = await hosted.http.post('/v0/keys').set('authorization', `Bearer ${A.human}`).send({ mandate: careful });
  assert.equal(created.status, 201);
  return created.body.prefix;
}

/** A manifest of `A/<name>` as a publisher would send it. */
const manifestOf = (name: string) => ({
  id: `${A.handle}/${name}`,
  version: '1.0.0',
  summary: 'A published agent.',
  capabilities: ['matrix.test'],
  interface: { input: { type: 'object' }, output: { type: 'object' } },
  price: { model: 'free', currency: 'EUR' },
  runtime: { kind: 'webhook', endpoint: 'https://agents.example/run' },
  license: 'proprietary',
});

/** A fresh version published by A, written straight to the database (this gateway has no GitHub app to publish through). */
async function publishedByA(): Promise<string> {
  const name = `m${randomUUID().slice(0, 8)}`;
  const knex = hosted.running.db.knex;
  await knex('gateway_agents').insert({ id: `${A.handle}/${name}`, version: '1.0.0', manifest: JSON.stringify(manifestOf(name)), source: A.handle, published: true, listed: true });
  await knex('hosted_publications').insert({ id: `${A.handle}/${name}`, version: '1.0.0', account: A.handle, proprietary: true });
  return `${A.handle}/${name}@1.0.0`;
}

const CASES: Record<string, { cell: () => Promise<Cell>; expected: Expected }> = {
  health: { cell: async () => ({ path: '/healthz' }), expected: same(200) },
  'read-jwks': { cell: async () => ({ path: '/.well-known/jwks.json' }), expected: same(200) },
  'search-agents': {
    cell: async () => ({ path: `/v0/agents?mandate=${careful}` }),
    expected: { none: 404, humanA: 200, agentA: 200, humanB: 404, agentB: 404, admin: 404 },
  },
  'read-agent': { cell: async () => ({ path: '/v0/agents/gt/run' }), expected: same(200) },
  call: {
    cell: async () => ({ path: '/v0/calls', body: { mandate: careful, agent: 'gt/free', input: { do: 'ok' } } }),
    expected: { none: 401, humanA: 200, agentA: 200, humanB: 404, agentB: 404, admin: 403 },
  },
  'list-approvals': { cell: async () => ({ path: '/v0/approvals' }), expected: { none: 401, humanA: 200, agentA: 200, humanB: 200, agentB: 200, admin: 403 } },
  'read-approval': {
    cell: async () => ({ path: `/v0/approvals/${approvalId}` }),
    expected: { none: 401, humanA: 200, agentA: 200, humanB: 404, agentB: 404, admin: 403 },
  },
  'decide-approval': {
    cell: async () => ({ path: `/v0/approvals/${await pendingApproval()}`, body: { decision: 'reject' } }),
    expected: { none: 401, humanA: 200, agentA: 403, humanB: 404, agentB: 403, admin: 403 },
  },
  'list-receipts': { cell: async () => ({ path: '/v0/receipts' }), expected: { none: 401, humanA: 200, agentA: 200, humanB: 200, agentB: 200, admin: 403 } },
  'read-receipt': {
    cell: async () => ({ path: `/v0/receipts/${receiptId}` }),
    expected: { none: 401, humanA: 200, agentA: 200, humanB: 404, agentB: 404, admin: 403 },
  },
  'read-mandate': {
    cell: async () => ({ path: `/v0/mandates/${careful}` }),
    expected: { none: 401, humanA: 200, agentA: 200, humanB: 404, agentB: 404, admin: 403 },
  },
  'list-accounts': { cell: async () => ({ path: '/v0/accounts' }), expected: { none: 401, humanA: 200, agentA: 403, humanB: 200, agentB: 403, admin: 200 } },
  'list-settlements': { cell: async () => ({ path: '/v0/settlements' }), expected: { none: 401, humanA: 403, agentA: 403, humanB: 403, agentB: 403, admin: 200 } },
  signup: {
    cell: async () => {
      const handle = uniqueAccount('s');
      return { path: '/v0/signup', body: { handle, email: `${handle}@example.test` } };
    },
    expected: same(201),
  },
  'github-signin': { cell: async () => ({ path: '/v0/auth/github' }), expected: same(503) },
  'github-callback': { cell: async () => ({ path: '/v0/auth/github/callback?code=c&state=s' }), expected: same(503) },
  'github-exchange': { cell: async () => ({ path: '/v0/auth/exchange', body: { code: 'c' } }), expected: same(503) },
  'read-me': { cell: async () => ({ path: '/v0/me' }), expected: { none: 401, humanA: 200, agentA: 200, humanB: 200, agentB: 200, admin: 403 } },
  'list-mandates': { cell: async () => ({ path: '/v0/mandates' }), expected: { none: 401, humanA: 200, agentA: 403, humanB: 200, agentB: 403, admin: 403 } },
  'create-mandate': {
    cell: async () => ({
      path: '/v0/mandates',
      body: { id: `m${randomUUID().slice(0, 8)}`, grantee: `${A.handle}/bot`, allow: { agents: ['*'] }, budget: { total: '1.00' } },
    }),
    // B cannot name a grantee in A's namespace.
    expected: { none: 401, humanA: 201, agentA: 403, humanB: 422, agentB: 403, admin: 403 },
  },
  'create-key': {
    cell: async () => ({ path: '/v0/keys', body: { mandate: careful } }),
    expected: { none: 401, humanA: 201, agentA: 403, humanB: 404, agentB: 403, admin: 403 },
  },
  'revoke-key': {
    cell: async () => ({ path: `/v0/keys/${await throwawayKey()}` }),
    expected: { none: 401, humanA: 200, agentA: 403, humanB: 404, agentB: 403, admin: 403 },
  },
  'admin-credit': {
    cell: async () => ({ path: '/v0/admin/credit', body: { account: A.handle, amount: '1.00' } }),
    expected: { none: 401, humanA: 403, agentA: 403, humanB: 403, agentB: 403, admin: 200 },
  },
  // No GitHub app on this gateway: publishing answers 503 to the one principal it is for.
  'publish-agent': {
    cell: async () => ({ path: '/v0/agents', body: manifestOf(`p${randomUUID().slice(0, 8)}`) }),
    expected: { none: 401, humanA: 503, agentA: 403, humanB: 503, agentB: 403, admin: 403 },
  },
  'yank-agent': {
    cell: async () => ({ path: `/v0/agents/${await publishedByA()}` }),
    expected: { none: 401, humanA: 200, agentA: 403, humanB: 404, agentB: 403, admin: 403 },
  },
  'my-agents': { cell: async () => ({ path: '/v0/me/agents' }), expected: { none: 401, humanA: 200, agentA: 403, humanB: 200, agentB: 403, admin: 403 } },
  'admin-list-accounts': {
    cell: async () => ({ path: `/v0/admin/accounts?q=${A.handle}` }),
    expected: { none: 401, humanA: 403, agentA: 403, humanB: 403, agentB: 403, admin: 200 },
  },
  'admin-disable-account': {
    cell: async () => ({ path: `/v0/admin/accounts/${(await hosted.signup()).handle}/disable`, body: { reason: 'matrix' } }),
    expected: { none: 401, humanA: 403, agentA: 403, humanB: 403, agentB: 403, admin: 200 },
  },
  'admin-yank-agent': {
    cell: async () => ({ path: `/v0/admin/agents/${await publishedByA()}/yank`, body: { reason: 'matrix' } }),
    expected: { none: 401, humanA: 403, agentA: 403, humanB: 403, agentB: 403, admin: 200 },
  },
  'admin-log': { cell: async () => ({ path: '/v0/admin/log' }), expected: { none: 401, humanA: 403, agentA: 403, humanB: 403, agentB: 403, admin: 200 } },
  'read-journal-checkpoint': { cell: async () => ({ path: '/v0/journal/checkpoint' }), expected: { none: 401, humanA: 403, agentA: 403, humanB: 403, agentB: 403, admin: 200 } },
  // Endpoint credentials: A's namespace; B's human key gets 404 as for any other account's resource.
  'set-credential': {
    cell: async () => ({ path: `/v0/agents/${A.handle}/bot/credential`, body: { token: 'tok-123' } }),
    expected: { none: 401, humanA: 200, agentA: 403, humanB: 404, agentB: 403, admin: 403 },
  },
  'delete-credential': {
    cell: async () => ({ path: `/v0/agents/${A.handle}/bot/credential` }),
    expected: { none: 401, humanA: 200, agentA: 403, humanB: 404, agentB: 403, admin: 403 },
  },
  // A draft is always in the caller's own namespace: both humans get theirs.
  'draft-agent': {
    cell: async () => ({ path: '/v0/agents/draft', body: { name: 'drafted', endpoint: `https://127.0.0.1:${(webhook.address() as AddressInfo).port}/hook`, input: { q: 'x' } } }),
    expected: { none: 401, humanA: 200, agentA: 403, humanB: 200, agentB: 403, admin: 403 },
  },
  'upload-file': {
    cell: async () => ({ path: '/v0/files', raw: Buffer.from('a,b\n1,2\n') }),
    expected: { none: 401, humanA: 201, agentA: 201, humanB: 201, agentB: 201, admin: 403 },
  },
  // The signed link is the credential: anyone holding it downloads.
  'download-file': { cell: async () => ({ path: fileLink }), expected: same(200) },
  'read-catalog': { cell: async () => ({ path: '/v0/catalog' }), expected: same(200) },
  'read-features': { cell: async () => ({ path: '/v0/features' }), expected: same(200) },
  // Six tries from one address: within the demo's 10 per visitor.
  'try-demo': { cell: async () => ({ path: '/v0/demo/gt/free', body: { do: 'ok' } }), expected: same(200) },
};

const document = YAML.parse(readFileSync(new URL('../../openapi/gateway.yaml', import.meta.url), 'utf8'));

before(async () => {
  const { key, cert } = selfSignedCertificate();
  webhook = createServer({ key, cert }, (_req, res) => res.setHeader('content-type', 'application/json').end('{"answer":"y"}'));
  await new Promise<void>((resolve) => webhook.listen(0, '127.0.0.1', resolve));
  hosted = await startTestHosted({ ca: cert.toString('utf8'), settings: { file_secret: 'matrix-file-secret-0123456789abcdef', allow_private_endpoints: true } });
  A = await hosted.signup();
  B = await hosted.signup();
  careful = `${A.handle}/careful`;
  const created = await hosted.http
    .post('/v0/mandates')
    .set('authorization', `Bearer ${A.human}`)
    .send({ id: 'careful', grantee: `${A.handle}/bot`, allow: { agents: ['*'], capabilities: ['*'] }, approval: { above: '0.05' }, budget: { total: '3.00' } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const agentKey = await hosted.http.post('/v0/keys').set('authorization', `Bearer ${A.human}`).send({ mandate: careful });
  approvalId = await pendingApproval();
  const call = await hosted.http.post('/v0/calls').set('authorization', `Bearer ${A.human}`).send({ mandate: careful, agent: 'gt/free', input: { do: 'ok' } });
  assert.equal(call.status, 200);
  receiptId = call.body.receipt.id;
  const expiring = await hosted.http.post('/v0/keys').set('authorization', `Bearer ${A.human}`).send({ mandate: careful });
  await hosted.running.db.knex('hosted_keys').where({ prefix: expiring.body.prefix }).update({ expires_at: new Date(Date.now() - 1000) });
  const revoked = await hosted.http.post('/v0/keys').set('authorization', `Bearer ${A.human}`).send({ mandate: careful });
  assert.equal((await hosted.http.delete(`/v0/keys/${revoked.body.prefix}`).set('authorization', `Bearer ${A.human}`)).status, 200);
  const file = await hosted.http.post('/v0/files').set('authorization', `Bearer ${A.agent}`).set('content-type', 'text/csv').send(Buffer.from('a,b\n'));
  assert.equal(file.status, 201);
  fileLink = signedPath(linkKey(hosted.settings.file_secret!), file.body.id, Date.now()).path;
  keys = { none: null, humanA: A.human, agentA: agentKey.body.key, humanB: B.human, agentB: B.agent, admin: ADMIN_KEY, expired: expiring.body.key, revoked: revoked.body.key };
});

after(async () => {
  await hosted?.close();
  await new Promise<void>((resolve) => webhook.close(() => resolve()));
});

test('every operation of the document has a row in the matrix', () => {
  assert.deepEqual(operationTable.map((op) => op.operationId).sort(), Object.keys(CASES).sort());
});

for (const op of operationTable) {
  test(`${op.method.toUpperCase()} ${op.path}: every principal gets its exact status`, async () => {
    const row = CASES[op.operationId];
    const declared = Object.keys(document.paths[op.path][op.method].responses).map(Number);
    const got: Record<string, number> = {};
    const want: Record<string, number> = {};
    for (const principal of PRINCIPALS) {
      const { path, body, raw } = await row.cell();
      let request = hosted.http[op.method](path);
      if (keys[principal]) request = request.set('authorization', `Bearer ${keys[principal]}`);
      const response = await (raw ? request.set('content-type', 'application/octet-stream').send(raw) : body ? request.send(body) : request);
      got[principal] = response.status;
      want[principal] = principal === 'expired' || principal === 'revoked' ? 401 : row.expected[principal];
      assert.ok(declared.includes(want[principal]), `${op.operationId}: the document does not declare ${want[principal]}`);
      assert.equal(typeof response.body, 'object');
      if (response.status >= 400) assert.equal(typeof response.body.code, 'string', `${op.operationId} ${principal}: an {error, code} body`);
    }
    assert.deepEqual(got, want);
  });
}
