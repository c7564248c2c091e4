/**
 * Moderation (gateway §7 "Moderation"): the operator disables an account (every key revoked at
 * once, the email and the GitHub account never get back in, `yank_agents` withdraws its listed
 * versions), yanks any published version but no shipped agent, lists accounts, reads the log;
 * every action is logged with its reason and the database refuses to change or delete the log.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { signInWithStandin, standinSettings, useGithubStandin, type StandinUser } from '../helpers/github-standin.ts';
import { ADMIN_KEY, useTestHosted } from '../helpers/hosted.ts';

const github = useGithubStandin();
const hosted = useTestHosted(() => ({
  settings: standinSettings(github),
  publishing: { checkEndpoint: async () => undefined },
}));
let nextId = 9000;

const admin = (method: 'get' | 'post', path: string) => hosted.http[method](path).set('authorization', `Bearer ${ADMIN_KEY}`);

/** A GitHub user signed in, with `names` published as proprietary webhook agents. */
async function authorWith(...names: string[]) {
  const id = nextId++;
  const user: StandinUser = { id, login: `Mod-${id}`, emails: [{ email: `mod-${id}@example.test`, primary: true, verified: true }] };
  const author = await signInWithStandin(hosted.http, github, user);
  for (const name of names) {
    const manifest = {
      id: `${author.handle}/${name}`,
      version: '1.0.0',
      summary: `${name}.`,
      capabilities: ['mod.test'],
      interface: { input: { type: 'object' }, output: { type: 'object' } },
      price: { model: 'free', currency: 'EUR' },
      runtime: { kind: 'webhook', endpoint: 'https://agents.example/run' },
      license: 'proprietary',
    };
    await hosted.http.post('/v0/agents').set('authorization', `Bearer ${author.human}`).send(manifest).expect(201);
  }
  return { ...author, user };
}

const versionsOf = async (id: string) => {
  const answer = await hosted.http.get(`/v0/agents/${id}`);
  return answer.status === 404 ? [] : answer.body.versions;
};

test('disabling an account revokes every key at once, withdraws its agents, and its email and GitHub account never get back in', async () => {
  const author = await authorWith('one', 'two');
  const agentKey = await hosted.http.post('/v0/keys').set('authorization', `Bearer ${author.human}`).send({ mandate: `${author.handle}/sandbox` }).expect(201);
  const disabled = await admin('post', `/v0/admin/accounts/${author.handle}/disable`).send({ reason: 'spam listings', yank_agents: true });
  assert.equal(disabled.status, 200, JSON.stringify(disabled.body));
  // Keys: the sign-in human key, the sign-in agent key, the one minted above.
  assert.deepEqual(disabled.body, { handle: author.handle, disabled: true, keys_revoked: 3, yanked: [`${author.handle}/one@1.0.0`, `${author.handle}/two@1.0.0`] });
  for (const key of [author.human, agentKey.body.key]) {
    const refused = await hosted.http.get('/v0/me').set('authorization', `Bearer ${key}`);
    assert.deepEqual([refused.status, refused.body.code], [401, 'invalid_key']);
  }
  assert.deepEqual([await versionsOf(`${author.handle}/one`), await versionsOf(`${author.handle}/two`)], [[], []]);

  const signup = await hosted.http.post('/v0/signup').send({ handle: `again-${author.user.id}`, email: author.user.emails[0].email.toUpperCase() });
  assert.deepEqual([signup.status, signup.body.code], [403, 'email_disabled']);
  const sameGithub = await signInWithStandin(hosted.http, github, author.user).catch((error: Error) => error.message);
  assert.match(String(sameGithub), /login_error=account_disabled/);
  const otherGithubSameEmail = await signInWithStandin(hosted.http, github, { ...author.user, id: nextId++, login: `Other-${author.user.id}` }).catch((error: Error) => error.message);
  assert.match(String(otherGithubSameEmail), /login_error=account_disabled/);

  const twice = await admin('post', `/v0/admin/accounts/${author.handle}/disable`).send({ reason: 'again' });
  assert.deepEqual([twice.status, twice.body.code], [409, 'account_disabled']);
  const unknown = await admin('post', '/v0/admin/accounts/no-such-handle-x/disable').send({ reason: 'x' });
  assert.deepEqual([unknown.status, unknown.body.code], [404, 'no_such_account']);
  const noReason = await admin('post', `/v0/admin/accounts/${author.handle}/disable`).send({ reason: '' });
  assert.deepEqual([noReason.status, noReason.body.code], [422, 'invalid_request']);
});

test('without yank_agents the versions stay listed; the operator yanks one with a reason, never a shipped agent', async () => {
  const author = await authorWith('kept', 'pulled');
  await admin('post', `/v0/admin/accounts/${author.handle}/disable`).send({ reason: 'chargebacks' }).expect(200);
  assert.deepEqual(await versionsOf(`${author.handle}/kept`), ['1.0.0']);
  const yank = await admin('post', `/v0/admin/agents/${author.handle}/pulled@1.0.0/yank`).send({ reason: 'malware reported' });
  assert.equal(yank.status, 200, JSON.stringify(yank.body));
  assert.deepEqual([yank.body.listed, yank.body.yanked_by, yank.body.yank_reason], [false, 'operator', 'malware reported']);
  assert.deepEqual(await versionsOf(`${author.handle}/pulled`), []);
  const again = await admin('post', `/v0/admin/agents/${author.handle}/pulled@1.0.0/yank`).send({ reason: 'x' });
  assert.deepEqual([again.status, again.body.code], [409, 'already_yanked']);
  const shipped = await admin('post', '/v0/admin/agents/gt/free@1.0.0/yank').send({ reason: 'x' });
  assert.deepEqual([shipped.status, shipped.body.code], [422, 'not_moderated']);
  assert.deepEqual(await versionsOf('gt/free'), ['1.0.0']);
  const none = await admin('post', '/v0/admin/agents/gt/free@9.9.9/yank').send({ reason: 'x' });
  assert.deepEqual([none.status, none.body.code], [404, 'no_such_agent']);
});

test('accounts are found by handle, email or GitHub login; the log lists every action with its reason, newest first', async () => {
  const author = await authorWith('listed');
  const found = await admin('get', `/v0/admin/accounts?q=MOD-${author.user.id}`).expect(200);
  assert.deepEqual(found.body.accounts.map((a: any) => [a.handle, a.email, a.github_login, a.disabled, a.listed_versions]), [
    [author.handle, `mod-${author.user.id}@example.test`, `Mod-${author.user.id}`, false, 1],
  ]);
  const wildcard = await admin('get', '/v0/admin/accounts?q=%25').expect(200);
  assert.deepEqual(wildcard.body.accounts, []);
  const bounded = await admin('get', '/v0/admin/accounts?limit=501');
  assert.deepEqual([bounded.status, bounded.body.code], [422, 'invalid_request']);

  await admin('post', `/v0/admin/agents/${author.handle}/listed@1.0.0/yank`).send({ reason: 'trademark' }).expect(200);
  await admin('post', `/v0/admin/accounts/${author.handle}/disable`).send({ reason: 'repeat offender' }).expect(200);
  const log = await admin('get', '/v0/admin/log?limit=2').expect(200);
  assert.deepEqual(log.body.entries.map((e: any) => [e.action, e.target, e.reason, e.detail]), [
    ['disable_account', author.handle, 'repeat offender', { keys_revoked: 2, yanked: [] }],
    ['yank_agent', `${author.handle}/listed@1.0.0`, 'trademark', {}],
  ]);
  const older = await admin('get', `/v0/admin/log?limit=1&before=${log.body.entries[1].id}`).expect(200);
  assert.ok(older.body.entries.every((e: any) => e.id < log.body.entries[1].id));
});

test('the database refuses to change, delete or truncate the moderation log', async () => {
  const knex = hosted.running.db.knex;
  await knex('hosted_moderation_log').insert({ action: 'yank_agent', target: 'x/y@1.0.0', reason: 'test entry' });
  await assert.rejects(knex('hosted_moderation_log').update({ reason: 'rewritten' }), /append-only/);
  await assert.rejects(knex('hosted_moderation_log').delete(), /append-only/);
  await assert.rejects(knex.raw('TRUNCATE hosted_moderation_log'), /append-only/);
  assert.ok(Number((await knex('hosted_moderation_log').where({ reason: 'test entry' }).count({ n: '*' }))[0].n) === 1);
});
