/**
 * The gateway's signing keys (issue 23 §1): Ed25519 key pairs, one active at a time, stored in
 * `gateway_signing_keys` (migration 021) with the private key sealed as a JWE (`dir`, A256GCM)
 * under a key derived from `HOLON_FILE_SECRET` (HKDF-SHA-256), so every process sharing the
 * database signs with the same key and a restart keeps it. Without the secret (development only:
 * production refuses to start without it, `src/hosted/settings.ts`), a key made for the process
 * signs, listed nowhere else, and it is gone at a restart.
 *
 * Rotation retires the active key and makes a new one in one transaction; the retired key stays
 * in the JWKS until `listed_until`: `HOLON_SIGNING_KEY_RETAIN_DAYS` after its retirement, or the
 * latest expiry of a stored mandate, whichever is later, so whatever it signed still verifies
 * until then (a document fetched again is signed by the active key).
 */
import { generateKeyPairSync, hkdfSync, randomUUID, type KeyObject } from 'node:crypto';
import type { Knex } from 'knex';
import { compactDecrypt, CompactEncrypt, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import type { NumberVariable } from '../config/env.ts';

/** How long a retired key stays listed at least, days (`HOLON_SIGNING_KEY_RETAIN_DAYS`, 1 to 3650, default 365). */
export const SIGNING_KEY_RETAIN_DAYS: NumberVariable = { name: 'HOLON_SIGNING_KEY_RETAIN_DAYS', what: 'days a retired signing key stays in the JWKS', default: 365, min: 1, max: 3650, integer: true };

/** A public key as the JWKS lists it: Ed25519, `kid`, and `exp` (seconds) once retired: it leaves the set then. */
export interface PublicJwk {
  kty: 'OKP';
  crv: 'Ed25519';
  /** The public key, base64url. */
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig';
  exp?: number;
}

/** The key that signs: its id and its private key (a WebCrypto key or, for a key of this process, a node KeyObject; never exported). */
export interface SigningKey {
  kid: string;
  private_key: CryptoKey | KeyObject;
}

/** The AES-256 key sealing private keys, derived from `HOLON_FILE_SECRET` (HKDF-SHA-256, 32 bytes). */
function sealingKey(file_secret: string): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', file_secret, 'holon', 'holon signing key v1', 32));
}

/** A new Ed25519 key pair: its public JWK and its private JWK (to seal), with a fresh `kid`. */
async function newKeyPair(): Promise<{ public_jwk: PublicJwk; private_jwk: JWK }> {
  const pair = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const kid = `k-${randomUUID()}`;
  const { x } = await exportJWK(pair.publicKey);
  return {
    public_jwk: { kty: 'OKP', crv: 'Ed25519', x: x!, kid, alg: 'EdDSA', use: 'sig' },
    private_jwk: { ...(await exportJWK(pair.privateKey)), kid },
  };
}

/** Imports a private JWK as a signing key that cannot be exported again. */
async function signingKeyOf(private_jwk: JWK & { kid?: string }): Promise<SigningKey> {
  return { kid: private_jwk.kid!, private_key: (await importJWK(private_jwk, 'EdDSA', { extractable: false })) as CryptoKey };
}

/**
 * A key made for this process only (no `HOLON_FILE_SECRET`): the signing key and its public JWK.
 * Made synchronously, so a binding app built without a signer (tests, an embedded binding) still
 * signs its checkpoints.
 */
export function processKey(): { key: SigningKey; public_jwk: PublicJwk } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const kid = `k-${randomUUID()}`;
  const { x } = publicKey.export({ format: 'jwk' });
  return { key: { kid, private_key: privateKey }, public_jwk: { kty: 'OKP', crv: 'Ed25519', x: x!, kid, alg: 'EdDSA', use: 'sig' } };
}

/** Inserts a new active key sealed under `file_secret`, unless one is active already (the unique index settles a race). */
async function insertKey(db: Knex | Knex.Transaction, file_secret: string): Promise<void> {
  const pair = await newKeyPair();
  const sealed_private = await new CompactEncrypt(new TextEncoder().encode(JSON.stringify(pair.private_jwk)))
    .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: pair.public_jwk.kid })
    .encrypt(sealingKey(file_secret));
  await db('gateway_signing_keys').insert({ kid: pair.public_jwk.kid, public_jwk: JSON.stringify(pair.public_jwk), sealed_private }).onConflict().ignore();
}

/**
 * The active stored key, made first when there is none (several processes starting at once agree
 * on one: at most one is active). Throws when the stored key does not open under `file_secret`
 * (the secret changed): signing with another key would orphan every signature already handed out.
 */
export async function activeKey(db: Knex, file_secret: string): Promise<SigningKey> {
  let row = await db('gateway_signing_keys').whereNull('retired_at').first('kid', 'sealed_private');
  if (!row) {
    await insertKey(db, file_secret);
    row = await db('gateway_signing_keys').whereNull('retired_at').first('kid', 'sealed_private');
  }
  try {
    const { plaintext } = await compactDecrypt(row.sealed_private, sealingKey(file_secret));
    return await signingKeyOf(JSON.parse(new TextDecoder().decode(plaintext)));
  } catch {
    throw new Error(`refusing to start: the signing key ${row.kid} does not open under HOLON_FILE_SECRET; set the secret it was sealed with`);
  }
}

/** The stored keys still listed at `now` (the active one, and retired ones until `listed_until`), oldest first, each with its `exp` once retired. */
export async function listedKeys(db: Knex, now: Date = new Date()): Promise<PublicJwk[]> {
  const rows = await db('gateway_signing_keys')
    .where((q) => q.whereNull('listed_until').orWhere('listed_until', '>', now))
    .orderBy([{ column: 'created_at' }, { column: 'kid' }])
    .select('public_jwk', 'listed_until');
  return rows.map((row) => {
    const jwk: PublicJwk = typeof row.public_jwk === 'string' ? JSON.parse(row.public_jwk) : row.public_jwk;
    return row.listed_until === null ? jwk : { ...jwk, exp: Math.floor(new Date(row.listed_until).getTime() / 1000) };
  });
}

/**
 * Rotates the stored key in one transaction: the active key is retired, listed until
 * `retain_days` from now or the latest mandate expiry, whichever is later, and a new key becomes
 * active. Processes already running keep signing with the key they loaded (still listed) until
 * they restart. Answers the retired and the new `kid`.
 */
export async function rotateKey(db: Knex, file_secret: string, retain_days: number): Promise<{ retired: string | null; active: string }> {
  return db.transaction(async (trx) => {
    const [latest] = (await trx.raw(`SELECT max((document->>'expires_at')::timestamptz) AS at FROM gateway_mandates`)).rows;
    const retain = new Date(Date.now() + retain_days * 86_400_000);
    const until = latest?.at && new Date(latest.at) > retain ? new Date(latest.at) : retain;
    const retired = await trx('gateway_signing_keys').whereNull('retired_at').update({ retired_at: trx.fn.now(), listed_until: until }).returning('kid');
    await insertKey(trx, file_secret);
    const active = await trx('gateway_signing_keys').whereNull('retired_at').first('kid');
    return { retired: retired[0]?.kid ?? null, active: active.kid };
  });
}
