/**
 * Endpoint credentials (gateway §6 "Authentication", issue 10 §3) on a hosted gateway: set and
 * removed by the namespace's owner, write-only and sealed, sent as `Authorization: Bearer` to
 * that agent's endpoint for every version and to no other agent's, never past a redirect; and
 * published agents reached through the guarded client (refused on loopback without
 * HOLON_ALLOW_PRIVATE_ENDPOINTS=1). Endpoints are local servers on loopback.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { credentialKey, credentialStatus, openCredential, sealCredential } from '../../src/hosted/credentials.ts';
import { holon, jsonDocuments } from '../helpers/cli.ts';
import { freshStore } from '../helpers/gateway.ts';
import { startTestHosted, type TestAccount, type TestHosted } from '../helpers/hosted.ts';

const FILE_SECRET = 'credentials-test-secret-0123456789abcdef';
const TOKEN = 'author-token-7f3a9c';

/** A loopback webhook recording the headers of every request it gets. */
interface Recorder {
  server: Server;
  url: string;
  seen: IncomingHttpHeaders[];
}

async function recorder(answer: (url: string) => { status: number; headers?: Record<string, string>; body: string }): Promise<Recorder> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    req.on('end', () => {
      const { status, headers, body } = answer(req.url ?? '/');
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, seen };
}

let hosted: TestHosted;
let A: TestAccount;
let B: TestAccount;
let own: Recorder;
let other: Recorder;
let hopper: Recorder;
const store = await freshStore();

/** A free webhook manifest of `id@version` at `endpoint`. */
function webhookManifest(id: string, version: string, endpoint: string): Record<string, unknown> {
  return {
    id,
    version,
    summary: 'a test webhook',
    capabilities: [],
    interface: { input: { type: 'object' }, output: { type: 'object' } },
    price: { model: 'free', currency: 'EUR' },
    runtime: { kind: 'webhook', endpoint },
    license: 'proprietary',
  };
}

const settings = (allow_private_endpoints: boolean) => ({ file_secret: FILE_SECRET, allow_private_endpoints });
const put = (account: TestAccount, path: string, body: unknown) => hosted.http.put(path).set('authorization', `Bearer ${account.human}`).send(body as object);
const call = (account: TestAccount, agent: string) => hosted.http.post('/v0/calls').set('authorization', `Bearer ${account.human}`).send({ mandate: account.mandate, agent, input: { q: 1 } });

before(async () => {
  own = await recorder(() => ({ status: 200, body: '{"ok":true}' }));
  other = await recorder(() => ({ status: 200, body: '{"ok":"other"}' }));
  hopper = await recorder(() => ({ status: 307, headers: { location: other.url }, body: '{}' }));
  hosted = await startTestHosted({ store, settings: settings(true) });
  A = await hosted.signup();
  B = await hosted.signup();
  // Published versions (the publishing endpoint is another module's): rows as it writes them, loaded at the restart below.
  const rows = [
    webhookManifest(`${A.handle}/hook`, '1.0.0', own.url),
    webhookManifest(`${A.handle}/hook`, '1.1.0', own.url),
    webhookManifest(`${A.handle}/hopper`, '1.0.0', hopper.url),
    webhookManifest(`${B.handle}/plain`, '1.0.0', other.url),
  ].map((manifest) => ({ id: manifest.id, version: manifest.version, manifest: JSON.stringify(manifest), source: 'published', published: true, listed: true }));
  await hosted.running.db.knex('gateway_agents').insert(rows);
  await hosted.close({ keep: true });
  hosted = await startTestHosted({ store, settings: settings(true) });
});

after(async () => {
  await hosted?.close();
  for (const { server } of [own, other, hopper]) await new Promise<void>((resolve) => server.close(() => resolve()));
});

test('the owner sets a credential before any version of that name is published; the answer and the stored row never hold the token', async () => {
  const response = await put(A, `/v0/agents/${A.handle}/unpublished/credential`, { token: TOKEN });
  assert.equal(response.status, 200);
  assert.deepEqual(response.body, { agent: `${A.handle}/unpublished`, set: true });
  const row = await hosted.running.db.knex('hosted_endpoint_credentials').where({ agent: `${A.handle}/unpublished` }).first();
  assert.equal(row.account, A.handle);
  assert.ok(!JSON.stringify(row).includes(TOKEN));
  assert.match(row.sealed, /^v1\./);
  assert.equal(await credentialStatus(hosted.running.db.knex, A.handle, 'unpublished'), true);
  assert.equal(await credentialStatus(hosted.running.db.knex, A.handle, 'never-set'), false);
});

test('another account gets 404 for the namespace and nothing changes; a malformed token is 422 and changes nothing', async () => {
  const foreign = await put(B, `/v0/agents/${A.handle}/hook/credential`, { token: 'b-token' });
  assert.equal(foreign.status, 404);
  assert.equal(foreign.body.code, 'no_such_agent');
  const removeForeign = await hosted.http.delete(`/v0/agents/${A.handle}/unpublished/credential`).set('authorization', `Bearer ${B.human}`);
  assert.equal(removeForeign.status, 404);
  assert.equal(await credentialStatus(hosted.running.db.knex, A.handle, 'unpublished'), true);
  for (const token of ['', 'with space', 'line\nbreak', 'é', 'x'.repeat(4097)]) {
    const refused = await put(A, `/v0/agents/${A.handle}/badtoken/credential`, { token });
    assert.equal(refused.status, 422, JSON.stringify(token));
  }
  assert.equal(await credentialStatus(hosted.running.db.knex, A.handle, 'badtoken'), false);
  const malformed = await put(A, `/v0/agents/${A.handle}/Bad_Name/credential`, { token: TOKEN });
  assert.equal(malformed.status, 422);
});

test('the credential reaches every version of its agent as a Bearer header, and no other agent', async () => {
  assert.equal((await put(A, `/v0/agents/${A.handle}/hook/credential`, { token: TOKEN })).status, 200);
  own.seen.length = 0;
  other.seen.length = 0;
  for (const version of ['1.0.0', '1.1.0']) {
    const response = await call(A, `${A.handle}/hook@${version}`);
    assert.equal(response.status, 200, JSON.stringify(response.body));
    assert.deepEqual(response.body.output, { ok: true });
  }
  assert.deepEqual(own.seen.map((headers) => headers.authorization), [`Bearer ${TOKEN}`, `Bearer ${TOKEN}`]);
  const plain = await call(A, `${B.handle}/plain`);
  assert.equal(plain.status, 200, JSON.stringify(plain.body));
  assert.equal(other.seen.length, 1);
  assert.equal(other.seen[0].authorization, undefined);
  assert.ok(!JSON.stringify(other.seen).includes(TOKEN));
});

test('a redirect from the credentialed endpoint is not followed: its target never sees the request or the token', async () => {
  assert.equal((await put(A, `/v0/agents/${A.handle}/hopper/credential`, { token: TOKEN })).status, 200);
  other.seen.length = 0;
  const response = await call(A, `${A.handle}/hopper`);
  assert.equal(response.status, 502);
  assert.equal(response.body.code, 'agent_error');
  assert.match(response.body.error, /redirects are not followed/);
  assert.equal(hopper.seen[0].authorization, `Bearer ${TOKEN}`);
  assert.equal(other.seen.length, 0);
});

test('after DELETE the endpoint gets no Authorization header; deleting again answers set: false', async () => {
  const removed = await hosted.http.delete(`/v0/agents/${A.handle}/hook/credential`).set('authorization', `Bearer ${A.human}`);
  assert.equal(removed.status, 200);
  assert.deepEqual(removed.body, { agent: `${A.handle}/hook`, set: false });
  own.seen.length = 0;
  assert.equal((await call(A, `${A.handle}/hook`)).status, 200);
  assert.equal(own.seen[0].authorization, undefined);
  const again = await hosted.http.delete(`/v0/agents/${A.handle}/hook/credential`).set('authorization', `Bearer ${A.human}`);
  assert.deepEqual(again.body, { agent: `${A.handle}/hook`, set: false });
});

test('without HOLON_ALLOW_PRIVATE_ENDPOINTS a published agent on loopback is refused at connect: runtime_unavailable, not billed, never contacted', async () => {
  await hosted.close({ keep: true });
  hosted = await startTestHosted({ store, settings: settings(false) });
  own.seen.length = 0;
  const response = await call(A, `${A.handle}/hook`);
  assert.equal(response.status, 502);
  assert.equal(response.body.code, 'runtime_unavailable');
  assert.match(response.body.error, /127\.0\.0\.1 is a loopback address/);
  assert.equal(response.body.receipt.billed, false);
  assert.equal(own.seen.length, 0);
  await hosted.close({ keep: true });
  hosted = await startTestHosted({ store, settings: settings(true) });
});

test('without HOLON_FILE_SECRET credentials are off: PUT answers 503 credentials_unavailable', async () => {
  await hosted.close({ keep: true });
  hosted = await startTestHosted({ store, settings: { file_secret: null, allow_private_endpoints: true } });
  const response = await put(A, `/v0/agents/${A.handle}/hook/credential`, { token: TOKEN });
  assert.equal(response.status, 503);
  assert.equal(response.body.code, 'credentials_unavailable');
  await hosted.close({ keep: true });
  hosted = await startTestHosted({ store, settings: settings(true) });
});

test('holon credential set reads the token from stdin and sets it; delete removes it; no token is bad usage', async () => {
  const env = { HOLON_API_KEY: A.human, HOLON_GATEWAY_URL: hosted.running.url };
  const set = await holon(['credential', 'set', `${A.handle}/from-cli`], { env, stdin: `${TOKEN}\n` });
  assert.equal(set.code, 0, set.stderr);
  assert.deepEqual(jsonDocuments(set.stdout), [{ agent: `${A.handle}/from-cli`, set: true }]);
  assert.ok(!set.stdout.includes(TOKEN));
  const row = await hosted.running.db.knex('hosted_endpoint_credentials').where({ agent: `${A.handle}/from-cli` }).first('sealed');
  assert.equal(openCredential(credentialKey(FILE_SECRET), `${A.handle}/from-cli`, row.sealed), TOKEN);
  const removed = await holon(['credential', 'delete', `${A.handle}/from-cli`], { env });
  assert.equal(removed.code, 0, removed.stderr);
  assert.deepEqual(jsonDocuments(removed.stdout), [{ agent: `${A.handle}/from-cli`, set: false }]);
  const empty = await holon(['credential', 'set', `${A.handle}/from-cli`], { env, stdin: '' });
  assert.equal(empty.code, 2);
  assert.match(empty.stderr, /give the token on stdin/);
  const foreign = await holon(['credential', 'set', `${B.handle}/x`], { env, stdin: TOKEN });
  assert.equal(foreign.code, 1);
  assert.equal((jsonDocuments(foreign.stdout)[0] as { code: string }).code, 'no_such_agent');
});

test('sealing: a sealed token opens only with the same secret and for the same agent', () => {
  const key = credentialKey(FILE_SECRET);
  const sealed = sealCredential(key, 'a/x', TOKEN);
  assert.equal(openCredential(key, 'a/x', sealed), TOKEN);
  assert.equal(openCredential(key, 'b/x', sealed), null);
  assert.equal(openCredential(credentialKey(`${FILE_SECRET}-rotated`), 'a/x', sealed), null);
  assert.notEqual(sealCredential(key, 'a/x', TOKEN), sealed, 'a fresh IV every time');
});
