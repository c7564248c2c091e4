/**
 * The gateway's signing keys (issue 23 §1, `src/signing/`): stored sealed under the file secret,
 * the same key for every process and across restarts, one active at a time, refused under another
 * secret, and rotation: the retired key stays listed with its `exp`, then leaves the JWKS.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import canonicalize from 'canonicalize';
import { CompactSign, compactVerify, createLocalJWKSet } from 'jose';
import { verifySigned, VerificationError } from '../../clients/src/verify.ts';
import type { Database } from '../../src/db/index.ts';
import { rotateKey } from '../../src/signing/keys.ts';
import { openSigner, processSigner } from '../../src/signing/signer.ts';
import { openFreshDatabase } from '../helpers/clearing.ts';
import { setUp } from '../helpers/hooks.ts';

const SECRET = 'signing-test-file-secret-0123456789abcdef';
const ISSUER = 'https://holon.example';
let database: Database;
let dispose: () => Promise<void> = async () => {};
setUp(async () => {
  ({ db: database, dispose } = await openFreshDatabase());
});
after(() => dispose());

const TYP = 'holon-checkpoint+jwt';

test('the stored key: made once, the same for every process and after a restart, sealed, refused under another secret', async () => {
  const db = database.knex;
  const [a, b] = await Promise.all([openSigner(db, { file_secret: SECRET, issuer: ISSUER }), openSigner(db, { file_secret: SECRET, issuer: ISSUER })]);
  assert.equal(a.signingKey().kid, b.signingKey().kid);
  const again = await openSigner(db, { file_secret: SECRET, issuer: ISSUER });
  assert.equal(again.signingKey().kid, a.signingKey().kid);
  assert.equal((await db('gateway_signing_keys').count({ n: '*' }))[0].n, 1);
  // Another process's signature verifies with this one's JWKS.
  const jws = await b.sign({ sub: 'checkpoint', size: 3, head: 'abc' }, TYP);
  const claims = await verifySigned(jws, await a.jwks(), TYP, 'the checkpoint');
  assert.deepEqual({ ...claims, iat: 0 }, { sub: 'checkpoint', size: 3, head: 'abc', iss: ISSUER, iat: 0 });
  // The private key is not stored in clear.
  const row = await db('gateway_signing_keys').first('sealed_private', 'public_jwk');
  assert.match(row.sealed_private, /^[\w-]+\.\.[\w-]+\.[\w-]+\.[\w-]+$/, 'a compact JWE with direct encryption');
  assert.ok(!row.sealed_private.includes('"d"'));
  await assert.rejects(openSigner(db, { file_secret: 'another-secret-0123456789abcdef0123', issuer: ISSUER }), /refusing to start: the signing key k-[0-9a-f-]+ does not open under HOLON_FILE_SECRET/);
});

test('rotation: a new active key, the retired one listed with its exp until then, then gone', async () => {
  const db = database.knex;
  const old = await openSigner(db, { file_secret: SECRET, issuer: ISSUER });
  const signedBefore = await old.sign({ sub: 'c1' }, TYP);
  const { retired, active } = await rotateKey(db, SECRET, 30);
  assert.equal(retired, old.signingKey().kid);
  const current = await openSigner(db, { file_secret: SECRET, issuer: ISSUER });
  assert.equal(current.signingKey().kid, active);
  const { keys } = await current.jwks();
  assert.deepEqual(keys.map((key) => key.kid), [retired, active]);
  const exp = keys[0].exp!;
  assert.ok(Math.abs(exp - (Date.now() / 1000 + 30 * 86_400)) < 120, `listed 30 days: ${exp}`);
  assert.equal(keys[1].exp, undefined);
  // What the old key signed still verifies, until its exp.
  assert.equal((await compactVerify(signedBefore, createLocalJWKSet({ keys }))).protectedHeader.kid, retired);
  await assert.rejects(verifySigned(signedBefore, { keys }, TYP, 'the checkpoint', { now: new Date((exp + 1) * 1000) }), (error: unknown) => {
    assert.ok(error instanceof VerificationError);
    assert.equal(error.code, 'key_expired');
    assert.equal(error.message, `the checkpoint was signed with key ${retired}, which expired at ${new Date(exp * 1000).toISOString()}: fetch the document again for a signature by the current key`);
    return true;
  });
  // Past `listed_until`, the key leaves the set.
  await db('gateway_signing_keys').where({ kid: retired }).update({ listed_until: new Date(Date.now() - 1000) });
  assert.deepEqual((await current.jwks()).keys.map((key) => key.kid), [active]);
  await assert.rejects(verifySigned(signedBefore, await current.jwks(), TYP, 'the checkpoint'), { code: 'key_not_in_jwks' });
});

test("a signature is the compact JWS jose makes over the same claims, byte for byte (stored key and process key), and verifies", async () => {
  const stored = await openSigner(database.knex, { file_secret: SECRET, issuer: ISSUER });
  for (const signer of [stored, processSigner(ISSUER)]) {
    const claims = { iat: 1_700_000_000, sub: 'r-1', receipt: { id: 'r-1', cost: { own: '0.001' }, memo: 'café ✓' } };
    const jws = await signer.sign(claims, TYP);
    const { kid, private_key } = signer.signingKey();
    const payload = canonicalize({ ...claims, iss: ISSUER })!;
    const expected = await new CompactSign(new TextEncoder().encode(payload)).setProtectedHeader({ alg: 'EdDSA', kid, typ: TYP }).sign(private_key);
    assert.equal(jws, expected);
    const { protectedHeader } = await compactVerify(jws, createLocalJWKSet(await signer.jwks()));
    assert.deepEqual(protectedHeader, { alg: 'EdDSA', kid, typ: TYP });
  }
});
