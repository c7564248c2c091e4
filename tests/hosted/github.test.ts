/**
 * Sign in with GitHub (gateway §7 "Accounts") against a local stand-in of GitHub: the state is
 * accepted once, from the browser holding its cookie, within 10 minutes; the one-time code is
 * traded once for a human key expiring after 30 days; the first sign-in creates the account or
 * links the one with the same verified email; GitHub's token is never kept; a disabled account
 * gets no new key.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useGithubStandin, type StandinUser } from '../helpers/github-standin.ts';
import { uniqueAccount, useTestHosted } from '../helpers/hosted.ts';

const github = useGithubStandin();
const hosted = useTestHosted(() => ({
  settings: { github: { client_id: github.client_id, client_secret: github.client_secret, web_url: github.url, api_url: github.url } },
}));
let nextId = 1000;

const user = (email: string | null, verified = true): StandinUser => {
  const login = uniqueAccount('GH');
  return { id: nextId++, login, emails: email ? [{ email, primary: true, verified }] : [] };
};

/** Starts sign-in: the state GitHub is sent and the cookie set for it. */
async function start(): Promise<{ state: string; cookie: string }> {
  const response = await hosted.http.get('/v0/auth/github').expect(302);
  const location = new URL(response.headers.location);
  assert.equal(`${location.origin}${location.pathname}`, `${github.url}/login/oauth/authorize`);
  assert.equal(location.searchParams.get('client_id'), github.client_id);
  // Without HOLON_PUBLIC_URL, GitHub is sent back to the origin the browser used (Koa 3's ctx.origin is the Origin header, often absent).
  assert.equal(location.searchParams.get('redirect_uri'), `${new URL(hosted.running.url).origin}/v0/auth/github/callback`);
  const setCookie = (response.headers['set-cookie'] as unknown as string[])[0];
  assert.match(setCookie, /httponly/i);
  assert.match(setCookie, /samesite=lax/i);
  return { state: location.searchParams.get('state')!, cookie: setCookie.split(';')[0] };
}

/** GitHub's return with `code`: the fragment the browser is sent to. */
async function callback(code: string, state: string, cookie: string | null): Promise<string> {
  const request = hosted.http.get(`/v0/auth/github/callback?code=${code}&state=${state}`);
  const response = await (cookie ? request.set('cookie', cookie) : request).expect(302);
  const location = response.headers.location as string;
  assert.match(location, /^\/console#login(_error)?=/);
  return location.slice('/console#'.length);
}

const exchange = (code: string) => hosted.http.post('/v0/auth/exchange').send({ code });

test('a first sign-in creates the account (handle = login lowercased) with credit; the code is traded once for a 30-day human key and an agent key', async () => {
  const person = user(`${uniqueAccount()}@example.test`);
  const { state, cookie } = await start();
  const fragment = await callback(github.authorize(person), state, cookie);
  const code = fragment.replace('login=', '');
  const traded = await exchange(code).expect(200);
  assert.equal(traded.body.handle, person.login.toLowerCase());
  const days = (Date.parse(traded.body.human_key.expires_at) - Date.now()) / 86_400_000;
  assert.ok(days > 29.99 && days <= 30, `expires in ${days} days`);
  assert.equal(traded.body.agent_key.mandate, `${person.login.toLowerCase()}/sandbox`);
  const me = await hosted.http.get('/v0/me').set('authorization', `Bearer ${traded.body.human_key.key}`).expect(200);
  assert.equal(me.body.balance.balance, '5.00');
  assert.deepEqual([(await exchange(code)).status, (await exchange(code)).body.code], [404, 'no_such_login_code']);
  // GitHub's token is kept nowhere.
  const rows = JSON.stringify(await Promise.all(['hosted_accounts', 'hosted_keys', 'hosted_login_codes', 'hosted_login_states'].map((t) => hosted.running.db.knex(t).select('*'))));
  for (const token of github.tokens) assert.ok(!rows.includes(token));
});

test('the state is accepted once, from the browser holding its cookie, within 10 minutes', async () => {
  const person = user(null);
  const other = await start();
  assert.equal(await callback(github.authorize(person), other.state, null), 'login_error=invalid_state');
  const fresh = await start();
  assert.equal(await callback(github.authorize(person), fresh.state, other.cookie), 'login_error=invalid_state');
  const once = await start();
  assert.match(await callback(github.authorize(person), once.state, once.cookie), /^login=/);
  assert.equal(await callback(github.authorize(person), once.state, once.cookie), 'login_error=invalid_state');
  const late = await start();
  await hosted.running.db.knex('hosted_login_states').whereNull('used_at').update({ expires_at: new Date(Date.now() - 1) });
  assert.equal(await callback(github.authorize(person), late.state, late.cookie), 'login_error=invalid_state');
});

test('an account with the same verified email is linked; an unverified email links nothing', async () => {
  const account = await hosted.signup();
  const email = `${account.handle}@example.test`;
  const unverified = user(email, false);
  const first = await start();
  const created = await exchange((await callback(github.authorize(unverified), first.state, first.cookie)).replace('login=', '')).expect(200);
  assert.equal(created.body.handle, unverified.login.toLowerCase());
  const verified = user(email);
  const second = await start();
  const linked = await exchange((await callback(github.authorize(verified), second.state, second.cookie)).replace('login=', '')).expect(200);
  assert.deepEqual([linked.body.handle, linked.body.agent_key], [account.handle, undefined]);
  const row = await hosted.running.db.knex('hosted_accounts').where({ handle: account.handle }).first();
  assert.deepEqual([Number(row.github_id), row.github_login], [verified.id, verified.login]);
});

test('a disabled account gets no new key', async () => {
  const person = user(`${uniqueAccount()}@example.test`);
  const first = await start();
  const created = await exchange((await callback(github.authorize(person), first.state, first.cookie)).replace('login=', '')).expect(200);
  await hosted.running.db.knex('hosted_accounts').where({ handle: created.body.handle }).update({ disabled_at: new Date() });
  const again = await start();
  assert.equal(await callback(github.authorize(person), again.state, again.cookie), 'login_error=account_disabled');
});
