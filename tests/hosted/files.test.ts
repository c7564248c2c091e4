/**
 * Files on the hosted gateway (gateway §7 "Files", §6 `_meta["holon/files"]`): uploads bounded
 * per file and per account, handles only the root mandate's issuer may pass (delegated calls
 * included; else `file_not_found`, never billed), signed links bound to one file and valid 15
 * minutes, served as attachments, the sweep 24 hours after upload, all on a test clock; and
 * evaluation fixtures, served to the agent under evaluation and never passable by a caller.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sweepFiles, FILE_TTL_MS, MAX_FILE_BYTES, MAX_LIVE_FILE_BYTES, MAX_FILES_PER_CALL } from '../../src/hosted/files.ts';
import { LINK_TTL_MS } from '../../src/hosted/file-links.ts';
import { readSettings } from '../../src/hosted/settings.ts';
import { FIXTURE_AGENTS } from '../helpers/gateway.ts';
import { bearer, startTestHosted, type TestAccount, type TestHosted } from '../helpers/hosted.ts';
import { startMcpServer, type TestMcpServer, type ToolCall } from '../helpers/runtimes.ts';
import pino from 'pino';
import { Registry, type ListedAgent } from '../../src/gateway/registry.ts';
import { runtimeFor } from '../../src/runtimes/index.ts';
import { EVAL_FILES_OWNER, evaluateVersion } from '../../src/hosted/evaluation.ts';
import { linkKey } from '../../src/hosted/file-links.ts';

const FILE_AGENTS = fileURLToPath(new URL('../fixtures/file-agents', import.meta.url));

/** The test clock: starts at a fixed instant, moved by the tests. */
let now_ms = Date.parse('2026-03-01T10:00:00Z');
let hosted: TestHosted;
let reader: TestMcpServer;
let agents: string;
let alice: TestAccount;
let bob: TestAccount;
/** What the reader's downloads of its links gave: status and whether the bytes match the link's SHA-256. */
const downloads: Array<{ status: number; intact: boolean }> = [];
/** Run by the reader inside a call when set (a test's probe while an agent runs). */
let probe: ((call: ToolCall) => Promise<void>) | null = null;

before(async () => {
  // The reader downloads every link it gets and checks the bytes, as the profile asks an agent to.
  reader = await startMcpServer(async (call) => {
    for (const link of Object.values((call.meta?.['holon/files'] ?? {}) as Record<string, { url: string; sha256: string }>)) {
      const response = await fetch(link.url);
      const bytes = Buffer.from(await response.arrayBuffer());
      downloads.push({ status: response.status, intact: createHash('sha256').update(bytes).digest('hex') === link.sha256 });
    }
    await probe?.(call);
    return { content: [{ type: 'text', text: '{"read": true}' }], structuredContent: { read: true } };
  });
  agents = await mkdtemp(path.join(tmpdir(), 'holon-file-agents-'));
  await cp(FILE_AGENTS, agents, { recursive: true });
  const manifest = path.join(agents, 'gtf--reader', 'holon.yaml');
  await writeFile(manifest, (await readFile(manifest, 'utf8')).replace('http://127.0.0.1:9/mcp', reader.url));
  hosted = await startTestHosted({
    agent_dirs: [FIXTURE_AGENTS, agents],
    clock: () => now_ms,
    settings: { file_bounds: { max_file_bytes: 1000, max_live_bytes: 2500 } },
  });
  alice = await hosted.signup();
  bob = await hosted.signup();
});

after(async () => {
  await hosted?.close();
  await reader?.close();
  await rm(agents, { recursive: true, force: true });
});

/** Uploads `bytes` with `key`; answers the response. */
const upload = (key: string, bytes: Buffer, type = 'application/octet-stream') => hosted.http.post('/v0/files').set(bearer(key)).set('content-type', type).send(bytes);

/** The balance of `account` as the admin sees it, once every pending settlement is posted (posting follows the receipt, issue 12 §3). */
async function balance(account: TestAccount): Promise<string> {
  await hosted.running.outbox.drain();
  const me = await hosted.http.get('/v0/me').set(bearer(account.human)).expect(200);
  return me.body.balance.balance;
}

/** The path and query of a link URL, for supertest. */
const local = (url: string) => {
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
};

test('the default bounds are 20 MiB per file and 200 MiB live per account; files live 24 hours, links 15 minutes', () => {
  assert.deepEqual(readSettings({}).file_bounds, { max_file_bytes: 20 * 1024 * 1024, max_live_bytes: 200 * 1024 * 1024 });
  assert.equal(MAX_FILE_BYTES, 20_971_520);
  assert.equal(MAX_LIVE_FILE_BYTES, 209_715_200);
  assert.equal(FILE_TTL_MS, 86_400_000);
  assert.equal(LINK_TTL_MS, 900_000);
});

test('an upload answers the handle, size, SHA-256 and expiry; the media type is the request\'s', async () => {
  const bytes = Buffer.from('name,age\nAda,36\n');
  const response = await upload(alice.human, bytes, 'text/csv; charset=UTF-8').expect(201);
  assert.match(response.body.id, /^f_[A-Za-z0-9_-]{22}$/);
  assert.deepEqual(response.body, {
    handle: `holon://files/${response.body.id}`,
    id: response.body.id,
    content_type: 'text/csv; charset=utf-8',
    size: bytes.length,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    expires_at: new Date(now_ms + 86_400_000).toISOString(),
  });
  // Whitespace around the media type (allowed before `;` by RFC 9110 §5.6.6) is not part of it.
  const spaced = await upload(alice.human, bytes, 'text/csv ; charset=utf-8').expect(201);
  assert.equal(spaced.body.content_type, 'text/csv; charset=utf-8');
});

test('uploads past the bounds are refused and store nothing; the quota counts live files of the account, whichever key uploaded', async () => {
  const carol = await hosted.signup();
  const count = async () => Number((await hosted.running.db.knex('hosted_files').where({ owner: carol.handle }).count('* as n'))[0].n);
  const tooLarge = await upload(carol.agent, Buffer.alloc(1001, 1)).expect(413);
  assert.equal(tooLarge.body.code, 'file_too_large');
  assert.match(tooLarge.body.error, /at most 1000 bytes/);
  assert.equal(await count(), 0);
  await upload(carol.agent, Buffer.alloc(1000, 1)).expect(201);
  await upload(carol.human, Buffer.alloc(1000, 2)).expect(201);
  const over = await upload(carol.agent, Buffer.alloc(501, 3)).expect(413);
  assert.equal(over.body.code, 'files_quota_exceeded');
  assert.match(over.body.error, /at most 2500 bytes of live files; it holds 2000 and this file has 501/);
  assert.equal(await count(), 2);
  await upload(carol.agent, Buffer.alloc(500, 3)).expect(201);
  // Another account's quota is its own.
  await upload(bob.agent, Buffer.alloc(1000, 4)).expect(201);
});

test('concurrent uploads cannot together pass the quota: exactly one of two that each fit alone is stored', async () => {
  const dave = await hosted.signup();
  await upload(dave.agent, Buffer.alloc(1000, 1)).expect(201);
  const both = await Promise.all([upload(dave.agent, Buffer.alloc(1000, 2)), upload(dave.human, Buffer.alloc(1000, 3))]);
  assert.deepEqual(both.map((r) => r.status).sort(), [201, 413]);
  const [{ total }] = await hosted.running.db.knex('hosted_files').where({ owner: dave.handle }).sum({ total: 'size' });
  assert.equal(Number(total), 2000);
});

test('an upload without a body, with a Content-Encoding, or with a malformed media type is refused', async () => {
  const empty = await hosted.http.post('/v0/files').set(bearer(alice.agent)).set('content-type', 'application/octet-stream').send(Buffer.alloc(0)).expect(422);
  assert.equal(empty.body.code, 'invalid_request');
  const encoded = await hosted.http.post('/v0/files').set(bearer(alice.agent)).set('content-type', 'application/octet-stream').set('content-encoding', 'gzip').send(Buffer.from('x')).expect(415);
  assert.equal(encoded.body.code, 'invalid_request');
  const badType = await upload(alice.agent, Buffer.from('x'), 'text/html\r\nx-evil: 1'.replace(/\r\n/, ' ')).expect(422);
  assert.match(badType.body.error, /is not a media type/);
});

test('an MCP agent receives a signed link per handle; the link serves the bytes as a sandboxed attachment, bound to one file, for 15 minutes', async () => {
  const bytes = Buffer.from([0, 1, 2, 254, 255]);
  const file = (await upload(alice.agent, bytes, 'image/png').expect(201)).body;
  const other = (await upload(alice.agent, Buffer.from('other')).expect(201)).body;
  const before = await balance(alice);
  const call = await hosted.http.post('/v0/calls').set(bearer(alice.agent)).send({ mandate: alice.mandate, agent: 'gtf/reader', input: { file: file.handle } }).expect(200);
  assert.equal(call.body.receipt.cost.total, '0.01');
  const meta = reader.calls.at(-1)!.meta!['holon/files'] as Record<string, { url: string; content_type: string; size: number; sha256: string; expires: string }>;
  assert.deepEqual(Object.keys(meta), [file.handle]);
  const link = meta[file.handle];
  const exp_s = Math.floor((now_ms + 15 * 60 * 1000) / 1000);
  assert.deepEqual({ ...link, url: undefined }, { url: undefined, content_type: 'image/png', size: 5, sha256: createHash('sha256').update(bytes).digest('hex'), expires: new Date(exp_s * 1000).toISOString() });
  assert.match(link.url, new RegExp(`^${hosted.running.url}/v0/files/${file.id}\\?exp=${exp_s}&sig=[A-Za-z0-9_-]{43}$`));
  assert.notEqual(await balance(alice), before);

  const served = await hosted.http.get(local(link.url)).buffer(true).parse((res, done) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c)).on('end', () => done(null, Buffer.concat(chunks)));
  }).expect(200);
  assert.deepEqual(served.body, bytes);
  assert.equal(served.headers['content-type'], 'image/png');
  assert.equal(served.headers['content-disposition'], `attachment; filename="${file.id}"`);
  assert.equal(served.headers['x-content-type-options'], 'nosniff');
  assert.equal(served.headers['content-security-policy'], "sandbox; default-src 'none'");

  // Bound to one file: the same signature does not open another file.
  const swapped = await hosted.http.get(local(link.url).replace(file.id, other.id)).expect(403);
  assert.equal(swapped.body.code, 'invalid_signature');
  // A changed expiry breaks the signature too.
  const extended = await hosted.http.get(local(link.url).replace(`exp=${exp_s}`, `exp=${exp_s + 3600}`)).expect(403);
  assert.equal(extended.body.code, 'invalid_signature');
  // Valid until the 15th minute, not at it.
  now_ms += 15 * 60 * 1000 - 1000;
  await hosted.http.get(local(link.url)).expect(200);
  now_ms += 1000;
  const expired = await hosted.http.get(local(link.url)).expect(403);
  assert.equal(expired.body.code, 'link_expired');
});

test('a handle of another account, a deleted or unknown one: the call fails 404 file_not_found, never billed, and the agent is never called', async () => {
  const bobs = (await upload(bob.agent, Buffer.from('bob')).expect(201)).body;
  const calls = reader.calls.length;
  const before = await balance(alice);
  const receipts: string[] = [];
  for (const handle of [bobs.handle, 'holon://files/f_AAAAAAAAAAAAAAAAAAAAAA', 'holon://files/../etc/passwd']) {
    const refused = await hosted.http.post('/v0/calls').set(bearer(alice.agent)).send({ mandate: alice.mandate, agent: 'gtf/reader', input: { file: handle } }).expect(404);
    assert.equal(refused.body.code, 'file_not_found');
    const { status, error, billed, cost } = refused.body.receipt;
    assert.deepEqual({ status, code: error.code, billed, total: cost.total }, { status: 'failed', code: 'file_not_found', billed: false, total: '0.00' });
    assert.equal((await hosted.http.get(`/v0/receipts/${refused.body.receipt.id}`).set(bearer(alice.agent)).expect(200)).body.status, 'failed');
    receipts.push(refused.body.receipt.id);
  }
  assert.equal(reader.calls.length, calls);
  assert.equal(await balance(alice), before);
  // The agent never ran: its measured record does not count these calls.
  assert.deepEqual(await hosted.running.db.knex('call_events').whereIn('receipt', receipts).select('receipt'), []);
});

test('in a delegated call the owner is still the issuer of the root mandate: the orchestrator cannot pass its own author\'s or anyone else\'s file', async () => {
  const alices = (await upload(alice.agent, Buffer.from('alice')).expect(201)).body;
  const bobs = (await upload(bob.human, Buffer.from('bob')).expect(201)).body;
  const own = await hosted.http.post('/v0/calls').set(bearer(alice.agent)).send({ mandate: alice.mandate, agent: 'gtf/relay', input: { id: alices.id } }).expect(200);
  assert.equal(own.body.output.child, 'ok');
  assert.deepEqual(Object.keys(reader.calls.at(-1)!.meta!['holon/files'] as object), [alices.handle]);
  const calls = reader.calls.length;
  const theirs = await hosted.http.post('/v0/calls').set(bearer(alice.agent)).send({ mandate: alice.mandate, agent: 'gtf/relay', input: { id: bobs.id } }).expect(200);
  assert.equal(theirs.body.output.child, 'file_not_found');
  assert.equal(theirs.body.receipt.cost.total, '0.00');
  assert.equal(reader.calls.length, calls);
  // Under bob's own mandate, the same relay passes bob's file.
  const bobsCall = await hosted.http.post('/v0/calls').set(bearer(bob.agent)).send({ mandate: bob.mandate, agent: 'gtf/relay', input: { id: bobs.id } }).expect(200);
  assert.equal(bobsCall.body.output.child, 'ok');
});

test(`an input naming more than ${MAX_FILES_PER_CALL} distinct handles is refused 422 too_many_files; at the bound each is checked`, async () => {
  const handles = Array.from({ length: MAX_FILES_PER_CALL }, (_, i) => `holon://files/f_${String(i).padStart(22, 'A')}`);
  const atBound = await hosted.http.post('/v0/calls').set(bearer(alice.agent)).send({ mandate: alice.mandate, agent: 'gtf/reader', input: { file: handles[0], more: handles } }).expect(404);
  assert.equal(atBound.body.code, 'file_not_found');
  const over = await hosted.http.post('/v0/calls').set(bearer(alice.agent)).send({ mandate: alice.mandate, agent: 'gtf/reader', input: { file: 'holon://files/one-more', more: handles } }).expect(422);
  assert.equal(over.body.code, 'too_many_files');
  assert.match(over.body.error, /at most 100 file handles; this one carries 101/);
  assert.equal(over.body.receipt.billed, false);
});

test('files are deleted 24 hours after upload: not attached or served after, and the sweep removes the row', async () => {
  const file = (await upload(alice.agent, Buffer.from('short-lived')).expect(201)).body;
  await hosted.http.post('/v0/calls').set(bearer(alice.agent)).send({ mandate: alice.mandate, agent: 'gtf/reader', input: { file: file.handle } }).expect(200);
  const link = (reader.calls.at(-1)!.meta!['holon/files'] as Record<string, { url: string }>)[file.handle].url;
  const knex = hosted.running.db.knex;
  const expires_ms = Date.parse(file.expires_at);
  await sweepFiles(knex, expires_ms - 1);
  assert.ok(await knex('hosted_files').where({ id: file.id }).first('id'), 'a sweep before the 24th hour keeps the file');
  now_ms += FILE_TTL_MS;
  const late = await hosted.http.post('/v0/calls').set(bearer(alice.agent)).send({ mandate: alice.mandate, agent: 'gtf/reader', input: { file: file.handle } }).expect(404);
  assert.equal(late.body.code, 'file_not_found');
  assert.ok((await sweepFiles(knex, now_ms)) >= 1);
  assert.equal(await knex('hosted_files').where({ id: file.id }).first('id'), undefined);
  // A link signed just now for the deleted file: the signature holds, the file is gone.
  const { linkKey, signedPath } = await import('../../src/hosted/file-links.ts');
  const fresh = signedPath(linkKey(hosted.settings.file_secret!), file.id, now_ms);
  const gone = await hosted.http.get(fresh.path).expect(404);
  assert.equal(gone.body.code, 'file_not_found');
  assert.notEqual(link, fresh.path);
});

test('evaluation fixtures reach the agent under evaluation as links, and no caller can pass them, during the run or after', async () => {
  const suites = await mkdtemp(path.join(tmpdir(), 'holon-fixture-suites-'));
  try {
    const bytes = Buffer.from('a hidden fixture');
    await mkdir(path.join(suites, 'gt.file', 'files'), { recursive: true });
    await writeFile(path.join(suites, 'gt.file', 'files', 'sample.bin'), bytes);
    await writeFile(path.join(suites, 'gt.file', 'reads.json'), JSON.stringify({ input: { file: 'holon://files/fixture/sample.bin' }, expect: { output: { read: true } } }));
    const probes: Array<{ status: number; code: string }> = [];
    probe = async (call) => {
      const handle = (call.arguments as { file: string }).file;
      const refused = await hosted.http.post('/v0/calls').set(bearer(alice.agent)).send({ mandate: alice.mandate, agent: 'gtf/reader', input: { file: handle } });
      probes.push({ status: refused.status, code: refused.body.code });
    };
    const knex = hosted.running.db.knex;
    const agent = (await Registry.fromDatabase(knex)).get('gtf/reader', '1.0.0')!;
    const downloaded = downloads.length;
    const [evaluation] = await evaluateVersion(
      { db: knex, runtimeFor: (agent) => runtimeFor(agent.loaded.manifest.runtime.kind), credentialFor: async () => null, source: { dir: suites, suite: 'public' }, logger: pino({ level: 'silent' }), files: { key: linkKey(hosted.settings.file_secret!), origin: () => hosted.running.url }, clock: () => now_ms },
      agent,
    );
    probe = null;
    assert.deepEqual([evaluation.status, evaluation.passed, evaluation.total], ['done', 1, 1]);
    // The stored case shows the fixture's name, never the temporary handle.
    assert.deepEqual(evaluation.cases[0].input, { file: 'holon://files/fixture/sample.bin' });
    assert.deepEqual(downloads.slice(downloaded), [{ status: 200, intact: true }]);
    assert.deepEqual(probes, [{ status: 404, code: 'file_not_found' }]);
    const handle = reader.calls.at(-1)!.arguments as { file: string };
    assert.match(handle.file, /^holon:\/\/files\/f_[A-Za-z0-9_-]{22}$/);
    assert.equal((await knex('hosted_files').where({ owner: EVAL_FILES_OWNER })).length, 0, 'fixtures live only while their case runs');
    const after = await hosted.http.post('/v0/calls').set(bearer(alice.agent)).send({ mandate: alice.mandate, agent: 'gtf/reader', input: handle }).expect(404);
    assert.equal(after.body.code, 'file_not_found');
    // A caller naming a fixture the way a suite does gets the same answer.
    const named = await hosted.http.post('/v0/calls').set(bearer(alice.agent)).send({ mandate: alice.mandate, agent: 'gtf/reader', input: { file: 'holon://files/fixture/sample.bin' } }).expect(404);
    assert.equal(named.body.code, 'file_not_found');
  } finally {
    probe = null;
    await rm(suites, { recursive: true, force: true });
  }
});

test('a suite naming a missing fixture, or one outside its files/ directory, fails its evaluation', async () => {
  const suites = await mkdtemp(path.join(tmpdir(), 'holon-fixture-suites-'));
  try {
    await mkdir(path.join(suites, 'gt.file'), { recursive: true });
    const agent = (await Registry.fromDatabase(hosted.running.db.knex)).get('gtf/reader', '1.0.0')!;
    const deps = { db: hosted.running.db.knex, runtimeFor: (agent: ListedAgent) => runtimeFor(agent.loaded.manifest.runtime.kind), credentialFor: async () => null, source: { dir: suites, suite: 'public' as const }, logger: pino({ level: 'silent' }) };
    await writeFile(path.join(suites, 'gt.file', 'missing.json'), JSON.stringify({ input: { file: 'holon://files/fixture/absent.bin' }, expect: { output: { read: true } } }));
    const [missing] = await evaluateVersion(deps, agent);
    assert.equal(missing.status, 'failed');
    assert.match(missing.error!, /missing\.json: the fixture .*absent\.bin is not a file/);
    await rm(path.join(suites, 'gt.file', 'missing.json'));
    await writeFile(path.join(suites, 'gt.file', 'escape.json'), JSON.stringify({ input: { file: 'holon://files/fixture/../../secret' }, expect: { output: { read: true } } }));
    const [escape] = await evaluateVersion(deps, agent);
    assert.equal(escape.status, 'failed');
    assert.match(escape.error!, /a fixture is named by a plain file name of gt\.file\/files\//);
  } finally {
    await rm(suites, { recursive: true, force: true });
  }
});
