/**
 * Publishing (gateway §7 "Publishing agents"): every condition, each refusal with its exact code
 * and nothing stored; listed at once, reachable by `POST /v0/calls` (by capability only under
 * `allow.published`); versions immutable, a yank never frees the number (the database refuses
 * it too); `proprietary` labelled wherever it is listed; the network check and the evaluation are
 * injected hooks (fakes here). GitHub is the local stand-in; the agent an https server of the test.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { signInWithStandin, standinSettings, useGithubStandin } from '../helpers/github-standin.ts';
import { useHttpsAgent } from '../helpers/https-agent.ts';
import { useTestHosted } from '../helpers/hosted.ts';
import type { PublishedVersion } from '../../src/hosted/publish.ts';
import { MAX_LINEAGE_LEVELS } from '../../src/contracts/lineage.ts';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { holon } from '../helpers/cli.ts';
import { EXIT } from '../../src/cli/client-commands.ts';
import { setUp } from '../helpers/hooks.ts';

const github = useGithubStandin();
const server = useHttpsAgent((_path, body) => ({ echo: body }));
const hosted = useTestHosted(() => ({
  // The agent serves on loopback: the guarded client may reach it (development setting); publish-time refusals come from the check below.
  settings: { ...standinSettings(github), allow_private_endpoints: true },
  ca: server.ca,
  publishing: {
    checkEndpoint: async (url) => {
      if (refusedEndpoints.has(url)) throw new Error('intranet.example resolves to 10.0.0.8, a private address');
    },
    onPublished: (version) => {
      published.push(version);
    },
  },
}));
let author: { handle: string; human: string; github_id: number };
const published: PublishedVersion[] = [];
const refusedEndpoints = new Set(['https://intranet.example/']);
let nextId = 7000;

/** A publishable manifest of `handle/<name>` at the test's https server; `extra` overrides fields. */
function manifest(handle: string, name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: `${handle}/${name}`,
    version: '1.0.0',
    summary: `The ${name} agent.`,
    capabilities: [`pub.${name}`],
    interface: { input: { type: 'object' }, output: { type: 'object', required: ['echo'] } },
    price: { model: 'per_run', amount: '0.01', currency: 'EUR' },
    runtime: { kind: 'webhook', endpoint: `${server.url}/${name}` },
    license: 'MIT',
    source: { repository: `https://github.com/${handle}/${name}` },
    ...extra,
  };
}

const publish = (key: string, body: object) => hosted.http.post('/v0/agents').set('authorization', `Bearer ${key}`).send(body);

/** A new GitHub user signed in (account linked), with a public repository `<login>/<repo>` per name given. */
async function newAuthor(...repos: string[]): Promise<{ handle: string; human: string; github_id: number }> {
  const id = nextId++;
  const login = `Author-${id}`;
  for (const repo of repos) github.addRepository({ owner: { id, login, type: 'User' }, name: repo, private: false });
  const signedIn = await signInWithStandin(hosted.http, github, { id, login, emails: [{ email: `${login}@example.test`, primary: true, verified: true }] });
  return { ...signedIn, github_id: id };
}

setUp(async () => {
  author = await newAuthor('echo', 'again', 'yanked', 'cap');
});

test('an open-source agent of the author is listed at once, found by search, labelled, and evaluated once through the hook', async () => {
  const answer = await publish(author.human, manifest(author.handle, 'echo'));
  assert.equal(answer.status, 201, JSON.stringify(answer.body));
  assert.deepEqual(
    { agent: answer.body.agent, license: answer.body.license, proprietary: answer.body.proprietary, listed: answer.body.listed, yanked_at: answer.body.yanked_at },
    { agent: `${author.handle}/echo@1.0.0`, license: 'MIT', proprietary: false, listed: true, yanked_at: null },
  );
  const search = await hosted.http.get(`/v0/agents?q=${author.handle}`).expect(200);
  assert.deepEqual(search.body.agents.map((a: any) => [a.id, a.license, a.proprietary, a.published]), [[`${author.handle}/echo`, 'MIT', false, true]]);
  const record = await hosted.http.get(`/v0/agents/${author.handle}/echo`).expect(200);
  assert.deepEqual([record.body.versions, record.body.proprietary, record.body.published], [['1.0.0'], false, true]);
  assert.deepEqual(published.filter((p) => p.id === `${author.handle}/echo`).map((p) => [p.agent, p.account, p.proprietary]), [[`${author.handle}/echo@1.0.0`, author.handle, false]]);
});

test('a published agent is reached by name; by capability only under a mandate with allow.published: true', async () => {
  await publish(author.human, manifest(author.handle, 'cap')).expect(201);
  const caller = await hosted.signup();
  const byName = await hosted.http.post('/v0/calls').set('authorization', `Bearer ${caller.human}`).send({ mandate: caller.mandate, agent: `${author.handle}/cap`, input: { n: 1 } });
  assert.equal(byName.status, 200, JSON.stringify(byName.body));
  assert.deepEqual(byName.body.output, { echo: { n: 1 } });
  const hit = server.received.at(-1)!;
  assert.deepEqual([hit.path, hit.headers['x-holon-agent'], hit.headers.authorization], ['/cap', `${author.handle}/cap@1.0.0`, undefined]);

  const capability = { mandate: caller.mandate, capability: 'pub.cap', input: { n: 2 } };
  const refused = await hosted.http.post('/v0/calls').set('authorization', `Bearer ${caller.human}`).send(capability);
  assert.deepEqual([refused.status, refused.body.code], [403, 'no_allowed_implementer']);
  assert.match(refused.body.error, /published_not_allowed|does not set allow\.published/);
  const open = await hosted.http
    .post('/v0/mandates')
    .set('authorization', `Bearer ${caller.human}`)
    .send({ id: 'open', grantee: `${caller.handle}/bot`, allow: { agents: ['*'], capabilities: ['*'], published: true }, budget: { total: '1.00' } })
    .expect(201);
  const allowed = await hosted.http.post('/v0/calls').set('authorization', `Bearer ${caller.human}`).send({ ...capability, mandate: open.body.mandate.id });
  assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
  assert.equal(allowed.body.receipt.agent, `${author.handle}/cap@1.0.0`);
});

test('each condition refuses with its code and stores nothing', async () => {
  const other = await newAuthor('theirs');
  const org = 'Acme-Org';
  github.addRepository({ owner: { id: 1, login: org, type: 'Organization' }, name: 'shared', private: false });
  github.addRepository({ owner: { id: other.github_id, login: `Author-${other.github_id}`, type: 'User' }, name: 'secret', private: true });
  const h = author.handle;
  const cases: Array<[string, Record<string, unknown>, number, string]> = [
    ['not your namespace', manifest(other.handle, 'theirs'), 403, 'not_your_namespace'],
    ['a body that is not a manifest', { ...manifest(h, 'bad'), price: { model: 'per_run', currency: 'EUR' } }, 422, 'invalid_request'],
    ['a manifest breaking a rule', manifest(h, 'rule', { price: { model: 'quote', max: '1.00', currency: 'EUR' } }), 422, 'invalid_manifest'],
    ['a dev runtime', manifest(h, 'dev1', { runtime: { kind: 'dev' } }), 422, 'runtime_not_publishable'],
    ['http endpoint', manifest(h, 'plain', { runtime: { kind: 'webhook', endpoint: 'http://agents.example/run' } }), 422, 'endpoint_refused'],
    ['credentials in the endpoint', manifest(h, 'creds', { runtime: { kind: 'webhook', endpoint: 'https://me:pw@agents.example/run' } }), 422, 'endpoint_refused'],
    ['a private endpoint', manifest(h, 'intra', { license: 'proprietary', source: undefined, runtime: { kind: 'webhook', endpoint: 'https://intranet.example/' } }), 422, 'endpoint_not_public'],
    ['open source without a source', manifest(h, 'nosrc', { source: undefined }), 422, 'source_required'],
    ['a source outside GitHub', manifest(h, 'gitlab', { source: { repository: `https://gitlab.com/${h}/gitlab` } }), 422, 'source_not_github'],
    ['an unknown repository', manifest(h, 'ghost'), 422, 'source_not_public'],
    ['a private repository', manifest(h, 'secret', { source: { repository: `https://github.com/Author-${other.github_id}/secret` } }), 422, 'source_not_public'],
    ["another user's repository", manifest(h, 'theirs', { source: { repository: `https://github.com/Author-${other.github_id}/theirs` } }), 403, 'source_not_yours'],
    ['an organisation not listing the author publicly', manifest(h, 'shared', { source: { repository: `https://github.com/${org}/shared` } }), 403, 'source_not_yours'],
    ['a fork of an unlisted version', manifest(h, 'fork0', { lineage: { fork_of: 'nobody/base@1.0.0', royalty: '0.1' } }), 422, 'invalid_lineage'],
  ];
  for (const [what, body, status, code] of cases) {
    const answer = await publish(author.human, body);
    assert.deepEqual([answer.status, answer.body.code], [status, code], `${what}: ${JSON.stringify(answer.body)}`);
  }
  const ids = cases.map(([, body]) => body.id as string);
  assert.deepEqual(await hosted.running.db.knex('gateway_agents').whereIn('id', ids).select('id'), []);

  github.addOrgMember(org, `Author-${author.github_id}`, true);
  const viaOrg = await publish(author.human, manifest(h, 'shared', { source: { repository: `https://github.com/${org}/shared` } }));
  assert.equal(viaOrg.status, 201, JSON.stringify(viaOrg.body));
});

test('GitHub down answers 503 github_unavailable; an email account is refused until linked', async () => {
  github.failWith = 502;
  try {
    const down = await publish(author.human, manifest(author.handle, 'again'));
    assert.deepEqual([down.status, down.body.code], [503, 'github_unavailable']);
  } finally {
    github.failWith = null;
  }
  const emailOnly = await hosted.signup();
  const unlinked = await publish(emailOnly.human, manifest(emailOnly.handle, 'x'));
  assert.deepEqual([unlinked.status, unlinked.body.code], [403, 'github_link_required']);
  const agentKey = await publish(emailOnly.agent, manifest(emailOnly.handle, 'x'));
  assert.deepEqual([agentKey.status, agentKey.body.code], [403, 'wrong_principal']);
});

test('a proprietary agent needs no source and is labelled as proprietary in search, record and the author view', async () => {
  const answer = await publish(author.human, manifest(author.handle, 'closed', { license: 'proprietary', source: undefined }));
  assert.equal(answer.status, 201, JSON.stringify(answer.body));
  assert.equal(answer.body.proprietary, true);
  const listing = (await hosted.http.get(`/v0/agents?q=${author.handle}/closed`).expect(200)).body.agents;
  assert.deepEqual(listing.map((a: any) => [a.id, a.license, a.proprietary]), [[`${author.handle}/closed`, 'proprietary', true]]);
  assert.equal((await hosted.http.get(`/v0/agents/${author.handle}/closed`).expect(200)).body.proprietary, true);
  const mine = await hosted.http.get('/v0/me/agents').set('authorization', `Bearer ${author.human}`).expect(200);
  assert.equal(mine.body.versions.find((v: any) => v.id === `${author.handle}/closed`).proprietary, true);
});

test('versions are immutable: the same number twice is 409, a yank stops the listing and never frees the number', async () => {
  const body = manifest(author.handle, 'yanked');
  await publish(author.human, body).expect(201);
  const twice = await publish(author.human, { ...body, summary: 'Changed.' });
  assert.deepEqual([twice.status, twice.body.code], [409, 'version_exists']);
  await publish(author.human, { ...body, version: '1.1.0' }).expect(201);

  const stranger = await hosted.signup();
  const notTheirs = await hosted.http.delete(`/v0/agents/${author.handle}/yanked@1.1.0`).set('authorization', `Bearer ${stranger.human}`);
  assert.deepEqual([notTheirs.status, notTheirs.body.code], [404, 'no_such_agent']);
  const yank = await hosted.http.delete(`/v0/agents/${author.handle}/yanked@1.1.0`).set('authorization', `Bearer ${author.human}`);
  assert.equal(yank.status, 200, JSON.stringify(yank.body));
  assert.deepEqual([yank.body.listed, yank.body.yanked_by, yank.body.yank_reason], [false, 'author', null]);
  assert.deepEqual((await hosted.http.get(`/v0/agents/${author.handle}/yanked`).expect(200)).body.versions, ['1.0.0']);
  const again = await hosted.http.delete(`/v0/agents/${author.handle}/yanked@1.1.0`).set('authorization', `Bearer ${author.human}`);
  assert.deepEqual([again.status, again.body.code], [409, 'already_yanked']);
  const reuse = await publish(author.human, { ...body, version: '1.1.0' });
  assert.deepEqual([reuse.status, reuse.body.code], [409, 'version_exists']);
  const shipped = await hosted.http.delete('/v0/agents/gt/free@1.0.0').set('authorization', `Bearer ${author.human}`);
  assert.deepEqual([shipped.status, shipped.body.code], [404, 'no_such_agent']);
});

test('the database refuses to change or delete a published version, and to list a yanked one again', async () => {
  const knex = hosted.running.db.knex;
  const where = { id: `${author.handle}/yanked`, version: '1.0.0' };
  await assert.rejects(knex('gateway_agents').where(where).delete(), /never be deleted/);
  await assert.rejects(knex('gateway_agents').where(where).update({ manifest: JSON.stringify({ changed: true }) }), /immutable/);
  await assert.rejects(knex('gateway_agents').where({ ...where, version: '1.1.0' }).update({ listed: true }), /immutable/);
  assert.equal((await knex('gateway_agents').where(where).first('listed')).listed, true);
});

test(`a fork names a listed version; a chain longer than ${MAX_LINEAGE_LEVELS} levels is refused`, async () => {
  const proprietary = { license: 'proprietary', source: undefined };
  await publish(author.human, manifest(author.handle, 'level1', proprietary)).expect(201);
  for (let level = 2; level <= MAX_LINEAGE_LEVELS; level += 1) {
    const answer = await publish(author.human, manifest(author.handle, `level${level}`, { ...proprietary, lineage: { fork_of: `${author.handle}/level${level - 1}@1.0.0`, royalty: '0.1' } }));
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
  }
  const tooLong = await publish(author.human, manifest(author.handle, 'toolong', { ...proprietary, lineage: { fork_of: `${author.handle}/level${MAX_LINEAGE_LEVELS}@1.0.0`, royalty: '0.1' } }));
  assert.deepEqual([tooLong.status, tooLong.body.code], [422, 'invalid_lineage']);
  assert.match(tooLong.body.error, new RegExp(`longer than ${MAX_LINEAGE_LEVELS} levels`));
});

test('holon publish holon.yaml publishes with the human key of HOLON_API_KEY; holon earnings lists the version; a file that is not YAML is bad usage', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'holon-publish-'));
  try {
    const file = path.join(dir, 'holon.yaml');
    await writeFile(file, YAML.stringify(manifest(author.handle, 'fromcli', { license: 'proprietary', source: undefined })));
    const env = { HOLON_API_KEY: author.human, HOLON_GATEWAY_URL: hosted.running.url };
    const published = await holon(['publish', file], { env });
    assert.equal(published.code, EXIT.ok, published.stderr);
    assert.deepEqual([JSON.parse(published.stdout).agent, JSON.parse(published.stdout).proprietary], [`${author.handle}/fromcli@1.0.0`, true]);
    const again = await holon(['publish', file], { env });
    assert.deepEqual([again.code, JSON.parse(again.stdout).code], [EXIT.refused, 'version_exists']);
    const earnings = await holon(['earnings'], { env });
    assert.equal(earnings.code, EXIT.ok, earnings.stderr);
    assert.ok(JSON.parse(earnings.stdout).versions.some((v: { agent: string }) => v.agent === `${author.handle}/fromcli@1.0.0`));
    await writeFile(file, 'id: [unclosed');
    const broken = await holon(['publish', file], { env });
    assert.equal(broken.code, EXIT.usage);
    assert.match(broken.stderr, /holon\.yaml: /);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
