/**
 * Issue 23 §1 on the hosted gateway: the starter mandate and a mandate from `POST /v0/mandates`
 * are signed with `iss` its public URL, by a key stored sealed under `HOLON_FILE_SECRET`, which a
 * restart keeps; `/.well-known/jwks.json` needs no key.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { verifyMandate } from '../../clients/src/verify.ts';
import { bearer, startTestHosted } from '../helpers/hosted.ts';

const PUBLIC_URL = 'https://holon.example';

test('hosted mandates are signed by the stored key, with iss the public URL; a restart keeps the key', async () => {
  const first = await startTestHosted({ settings: { public_url: PUBLIC_URL } });
  let store = first.store;
  let starter: { mandate: Record<string, unknown>; jws: string };
  let kid: string;
  try {
    const account = await first.signup();
    const jwks = (await first.http.get('/.well-known/jwks.json').expect(200)).body;
    assert.equal(jwks.keys.length, 1);
    kid = jwks.keys[0].kid;
    starter = (await first.http.get(`/v0/mandates/${account.mandate}`).set(bearer(account.human)).expect(200)).body;
    const claims = await verifyMandate(starter.jws, jwks, { json: starter.mandate, issuer: PUBLIC_URL });
    assert.equal(claims.sub, account.mandate);
    await first.http.post('/v0/mandates').set(bearer(account.human)).send({ id: 'q4', grantee: `${account.handle}/bot`, allow: { agents: ['*'] }, budget: { total: '1.00' } }).expect(201);
    const created = (await first.http.get(`/v0/mandates/${account.handle}/q4`).set(bearer(account.human)).expect(200)).body;
    assert.equal((await verifyMandate(created.jws, jwks, { json: created.mandate, issuer: PUBLIC_URL })).sub, `${account.handle}/q4`);
    assert.equal(JSON.parse(Buffer.from(created.jws.split('.')[0], 'base64url').toString()).kid, kid);
  } finally {
    await first.close({ keep: true });
  }
  const second = await startTestHosted({ store, settings: { public_url: PUBLIC_URL } });
  try {
    const jwks = (await second.http.get('/.well-known/jwks.json').expect(200)).body;
    assert.deepEqual(jwks.keys.map((key: { kid: string }) => key.kid), [kid]);
    assert.equal((await verifyMandate(starter.jws, jwks, { json: starter.mandate })).iss, PUBLIC_URL);
  } finally {
    await second.close();
  }
});
