/**
 * The author's whole story on the hosted gateway (issue 10, "Done when"): an author signs in
 * through the GitHub stand-in, sets endpoint credentials before publishing, publishes an MCP
 * agent and a webhook agent served by local https servers (private endpoints allowed, as in
 * development), a caller calls both with a file, each endpoint sees the author's credential and
 * the MCP agent a signed link to exactly that file, the new MCP version is evaluated in the
 * background on the suite of the capability it claims, and the author sees what each version
 * earned.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { startGithubStandin, signInWithStandin, standinSettings, type GithubStandin } from '../helpers/github-standin.ts';
import { selfSignedCertificate } from '../helpers/https-agent.ts';
import { bearer, startTestHosted, type TestHosted } from '../helpers/hosted.ts';
import { startHttp, startMcpServer, type TestMcpServer, type TestServer } from '../helpers/runtimes.ts';

let github: GithubStandin;
let mcp: TestMcpServer;
let webhook: TestServer;
let hosted: TestHosted;

const MCP_TOKEN = 'mcp-endpoint-token-1';
const WEBHOOK_TOKEN = 'webhook-endpoint-token-2';

before(async () => {
  const tls = selfSignedCertificate();
  github = await startGithubStandin();
  // Answers what it was given: the files it was linked to, by handle.
  mcp = await startMcpServer((call) => ({ content: [], structuredContent: { linked: Object.keys((call.meta?.['holon/files'] as object | undefined) ?? {}) } }), { tls });
  webhook = await startHttp((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true }));
  }, tls);
  hosted = await startTestHosted({ settings: { ...standinSettings(github), allow_private_endpoints: true }, ca: tls.cert.toString('utf8') });
});

after(async () => {
  await hosted?.close();
  await mcp?.close();
  await webhook?.close();
  await github?.close();
});


/** Polls `read` (each poll bounded by the request; 200 polls of 50 ms at most) until `done` holds of its answer. */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (let poll = 0; poll < 200; poll += 1) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the condition did not hold after 200 polls');
}

test('sign in, set credentials, publish an MCP and a webhook agent, a caller calls both with a file, the author sees evaluations and earnings', async () => {
  const author = await signInWithStandin(hosted.http, github, { id: 9101, login: 'Story-Author', emails: [{ email: 'story@example.test', primary: true, verified: true }] });
  const ns = author.handle;
  for (const [name, token] of [['tables', MCP_TOKEN], ['hook', WEBHOOK_TOKEN]] as const) {
    await hosted.http.put(`/v0/agents/${ns}/${name}/credential`).set(bearer(author.human)).send({ token }).expect(200);
  }
  const manifest = (name: string, runtime: object, capability: string, price: string) => ({
    id: `${ns}/${name}`,
    version: '1.0.0',
    summary: `${name}, for the story.`,
    capabilities: [capability],
    interface: { input: { type: 'object' }, output: { type: 'object' } },
    price: { model: 'per_run', amount: price, currency: 'EUR' },
    runtime,
    license: 'proprietary',
  });
  for (const document of [
    manifest('tables', { kind: 'mcp', endpoint: `${mcp.url}/mcp`, tool: 'echo' }, 'extraction.table', '0.02'),
    manifest('hook', { kind: 'webhook', endpoint: `${webhook.url}/hook` }, 'story.hook', '0.03'),
  ]) {
    const published = await hosted.http.post('/v0/agents').set(bearer(author.human)).send(document);
    assert.equal(published.status, 201, JSON.stringify(published.body));
  }

  const caller = await hosted.signup();
  const bytes = Buffer.from('a,b\n1,2\n');
  const file = await hosted.http.post('/v0/files').set(bearer(caller.agent)).set('content-type', 'text/csv').send(bytes).expect(201);
  const handle = `holon://files/${file.body.id}`;
  const viaMcp = await hosted.http.post('/v0/calls').set(bearer(caller.agent)).send({ mandate: caller.mandate, agent: `${ns}/tables`, input: { file: handle } });
  assert.equal(viaMcp.status, 200, JSON.stringify(viaMcp.body));
  assert.deepEqual(viaMcp.body.output, { linked: [handle] });
  const viaWebhook = await hosted.http.post('/v0/calls').set(bearer(caller.agent)).send({ mandate: caller.mandate, agent: `${ns}/hook`, input: { file: handle } });
  assert.equal(viaWebhook.status, 200, JSON.stringify(viaWebhook.body));

  // The call's link serves exactly the uploaded file; each endpoint saw its own author's token, never the other's.
  const call = mcp.calls.find((seen) => (seen.arguments as { file?: string }).file === handle)!;
  const link = (call.meta!['holon/files'] as Record<string, { url: string; sha256: string; size: number }>)[handle];
  assert.deepEqual([link.size, link.sha256], [bytes.length, createHash('sha256').update(bytes).digest('hex')]);
  const downloaded = await fetch(link.url);
  assert.equal(downloaded.status, 200);
  assert.deepEqual(Buffer.from(await downloaded.arrayBuffer()), bytes);
  assert.equal(mcp.received.every((request) => request.headers.authorization === `Bearer ${MCP_TOKEN}`), true);
  assert.deepEqual(webhook.received.map((request) => [request.path, request.headers.authorization]), [['/hook', `Bearer ${WEBHOOK_TOKEN}`]]);

  // The MCP version claims extraction.table: its suite runs in the background, never billed.
  const view = await until(
    async () => (await hosted.http.get('/v0/me/agents').set(bearer(author.human)).expect(200)).body,
    // Earnings count posted settlements: wait for both calls' too.
    (body) => body.total === '0.045' && body.versions.some((version: any) => version.agent === `${ns}/tables@1.0.0` && version.evaluations[0]?.status === 'done'),
  );
  const byAgent = Object.fromEntries(view.versions.map((version: any) => [version.agent, version]));
  const evaluation = byAgent[`${ns}/tables@1.0.0`].evaluations[0];
  assert.deepEqual([evaluation.capability, evaluation.suite, evaluation.total], ['extraction.table', 'public', 5]);
  assert.deepEqual(byAgent[`${ns}/hook@1.0.0`].evaluations, []);
  // Per call: the price less the platform's 10% fee (gateway §2 "Split").
  assert.deepEqual(byAgent[`${ns}/tables@1.0.0`].earned, { calls: 1, share: '0.018', royalties: '0.00', total: '0.018' });
  assert.deepEqual(byAgent[`${ns}/hook@1.0.0`].earned, { calls: 1, share: '0.027', royalties: '0.00', total: '0.027' });
  assert.deepEqual([byAgent[`${ns}/tables@1.0.0`].credential_set, byAgent[`${ns}/hook@1.0.0`].credential_set], [true, true]);
  assert.equal(view.total, '0.045');
});
