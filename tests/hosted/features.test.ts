/**
 * `GET /v0/features` (issue 26, gateway §7 "Operating"): what the operator switched on, answered
 * to anyone without a key; a feature that is off carries the reason, and its operations answer
 * 503 with that same sentence. The console offers only what is on (`tests/hosted/console/browser.test.ts`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CREDENTIALS_OFF, featuresOf, GITHUB_SIGN_IN_OFF, PUBLISHING_OFF } from '../../src/hosted/features.ts';
import { useHostedAccount, useTestHosted } from '../helpers/hosted.ts';

/** A gateway with every optional setting left out: no GitHub app, no HOLON_FILE_SECRET. */
const hosted = useTestHosted({ settings: { github: null, file_secret: null } });
const account = useHostedAccount(hosted);

test('without a GitHub app or HOLON_FILE_SECRET, GET /v0/features says all three are off and why, to anyone, with or without a key', async () => {
  const expected = {
    github_sign_in: { on: false, reason: 'sign in with GitHub is off on this gateway: its operator has not set HOLON_GITHUB_CLIENT_ID and HOLON_GITHUB_CLIENT_SECRET' },
    publishing: { on: false, reason: 'publishing is off on this gateway: it has no GitHub app (its operator has not set HOLON_GITHUB_CLIENT_ID and HOLON_GITHUB_CLIENT_SECRET)' },
    credentials: { on: false, reason: 'endpoint credentials are off on this gateway: its operator has not set HOLON_FILE_SECRET' },
  };
  assert.deepEqual((await hosted.http.get('/v0/features').expect(200)).body, expected);
  assert.deepEqual((await hosted.http.get('/v0/features').set('authorization', `Bearer ${account.human}`).expect(200)).body, expected);
});

test('each operation of a feature that is off answers 503 with the reason /v0/features gives, then what to do instead', async () => {
  const signIn = await hosted.http.get('/v0/auth/github');
  assert.deepEqual([signIn.status, signIn.body], [503, { code: 'github_signin_off', error: `${GITHUB_SIGN_IN_OFF}: sign up with POST /v0/signup` }]);
  const manifest = {
    id: `${account.handle}/words`,
    version: '0.1.0',
    summary: 'Counts words.',
    capabilities: [],
    interface: { input: { type: 'object' }, output: { type: 'object' } },
    price: { model: 'free', currency: 'EUR' },
    runtime: { kind: 'webhook', endpoint: 'https://words.example/hook' },
    license: 'proprietary',
  };
  const publish = await hosted.http.post('/v0/agents').set('authorization', `Bearer ${account.human}`).send(manifest);
  assert.deepEqual([publish.status, publish.body], [503, { code: 'publishing_off', error: `${PUBLISHING_OFF}; calls to listed agents keep being served` }]);
  const credential = await hosted.http.put(`/v0/agents/${account.handle}/words/credential`).set('authorization', `Bearer ${account.human}`).send({ token: 't' });
  assert.deepEqual([credential.status, credential.body], [503, { code: 'credentials_unavailable', error: CREDENTIALS_OFF }]);
});

test('with a GitHub app and HOLON_FILE_SECRET every feature is on, with no reason', () => {
  const github = { client_id: 'id', client_secret: 'secret', web_url: 'https://github.com', api_url: 'https://api.github.com' };
  assert.deepEqual(featuresOf({ github, file_secret: 'x'.repeat(32) }), { github_sign_in: { on: true }, publishing: { on: true }, credentials: { on: true } });
  assert.deepEqual(featuresOf({ github: null, file_secret: 'x'.repeat(32) }), { github_sign_in: { on: false, reason: GITHUB_SIGN_IN_OFF }, publishing: { on: false, reason: PUBLISHING_OFF }, credentials: { on: true } });
});
