/**
 * Signed checkpoints of the journal's hash chain (issue 23 §3): `{size, head, signed_at}`, where
 * `size` is the number of chained entries and `head` the hash at that position
 * (`sql/clearing_chain_append.sql`), signed as a compact JWS (EdDSA, Ed25519) over the checkpoint's
 * canonical JSON (RFC 8785). An auditor who keeps one can check later, with `holon audit
 * --checkpoint`, that the journal still extends it: its entry at position `size` still hashes to
 * `head`.
 */
import canonicalize from 'canonicalize';
import { CompactSign, compactVerify, createLocalJWKSet, exportJWK, generateKeyPair, importJWK, type JSONWebKeySet, type JWK } from 'jose';
import type { Knex } from 'knex';
import { int } from '../db/index.ts';

/** A point of the journal's chain: how many entries it holds and the hash of the last (null when empty). */
export interface ChainPoint {
  /** Entries chained, 0 or more. */
  size: number;
  /** SHA-256 (hex) at position `size`; null when `size` is 0. */
  head: string | null;
}

/** A checkpoint as served: the point, when it was signed (ISO 8601), and the JWS whose payload is the canonical JSON of `{size, head, signed_at}`. */
export interface SignedCheckpoint extends ChainPoint {
  signed_at: string;
  jws: string;
}

/**
 * What signs checkpoints: the gateway's signing key (issue 23 §1) in a deployment, a key of its
 * own in tests. `sign` answers a compact JWS (EdDSA) over `payload`, with `kid` in its header.
 */
export interface CheckpointSigner {
  /** The key id the JWS header names, as listed in the JWKS an auditor verifies with. */
  kid: string;
  sign(payload: Uint8Array): Promise<string>;
  /** The public key as a JWK (with `kid`), for a JWKS. */
  publicJwk(): Promise<JWK>;
}

/** The chain's current point, read on `db` (a knex or a transaction). */
export async function readChainPoint(db: Knex | Knex.Transaction): Promise<ChainPoint> {
  const row = await db('clearing_journal_chain').orderBy('position', 'desc').first('position', 'hash');
  return row ? { size: int(row.position), head: row.hash } : { size: 0, head: null };
}

/** The bytes a checkpoint's JWS signs: the canonical JSON (RFC 8785) of `{size, head, signed_at}`. */
export function checkpointPayload(point: ChainPoint, signed_at: string): Uint8Array {
  return new TextEncoder().encode(canonicalize({ size: point.size, head: point.head, signed_at })!);
}

/** Reads the chain's point and signs it now with `signer`. */
export async function signedCheckpoint(db: Knex, signer: CheckpointSigner): Promise<SignedCheckpoint> {
  const point = await readChainPoint(db);
  const signed_at = new Date().toISOString();
  return { ...point, signed_at, jws: await signer.sign(checkpointPayload(point, signed_at)) };
}

/** A signer over an Ed25519 private JWK (`kty` OKP, `crv` Ed25519, `d` present); its `kid` is the JWK's, else `checkpoint`. Throws naming what is missing. */
export async function signerFromJwk(jwk: JWK): Promise<CheckpointSigner> {
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.d !== 'string') throw new Error('the checkpoint key must be an Ed25519 private JWK ({"kty":"OKP","crv":"Ed25519","x":…,"d":…})');
  const kid = jwk.kid ?? 'checkpoint';
  const key = await importJWK(jwk, 'EdDSA');
  const { d: _private, ...rest } = jwk;
  const publicJwk = { ...rest, kid, alg: 'EdDSA', use: 'sig' };
  return {
    kid,
    sign: (payload) => new CompactSign(payload).setProtectedHeader({ alg: 'EdDSA', kid, typ: 'holon-checkpoint+jws' }).sign(key),
    publicJwk: async () => publicJwk,
  };
}

/** A signer over a fresh Ed25519 key (tests, and a development binding with no key set): its checkpoints verify only against its own `publicJwk`. */
export async function ephemeralSigner(kid = 'checkpoint-ephemeral'): Promise<CheckpointSigner> {
  const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  return signerFromJwk({ ...(await exportJWK(privateKey)), kid });
}

/** The signer the environment names: `HOLON_CLEARING_CHECKPOINT_KEY`, an Ed25519 private JWK as JSON text; absent, an ephemeral key. Throws on a malformed value. */
export async function checkpointSignerFromEnv(env: NodeJS.ProcessEnv = process.env): Promise<CheckpointSigner> {
  const text = env.HOLON_CLEARING_CHECKPOINT_KEY;
  if (!text) return ephemeralSigner();
  let jwk: JWK;
  try {
    jwk = JSON.parse(text);
  } catch {
    throw new Error('HOLON_CLEARING_CHECKPOINT_KEY is not JSON: it must be an Ed25519 private JWK');
  }
  return signerFromJwk(jwk);
}

/**
 * The checkpoint a JWS signs, after checking its signature against `jwks` (EdDSA only) and that
 * its payload is exactly the canonical JSON of `{size, head, signed_at}`. Throws a sentence
 * saying why it is refused (no key of `jwks` has its `kid`, a bad signature, a malformed payload).
 */
export async function verifyCheckpoint(jws: string, jwks: JSONWebKeySet): Promise<SignedCheckpoint> {
  let payload: Uint8Array;
  try {
    ({ payload } = await compactVerify(jws, createLocalJWKSet(jwks), { algorithms: ['EdDSA'] }));
  } catch (error) {
    throw new Error(`the checkpoint's signature does not verify against the JWKS: ${(error as Error).message}`);
  }
  const text = new TextDecoder().decode(payload);
  const fields = JSON.parse(text) as Record<string, unknown>;
  const { size, head, signed_at } = fields;
  const wellFormed =
    Number.isSafeInteger(size) && (size as number) >= 0 && (head === null ? size === 0 : typeof head === 'string' && /^[0-9a-f]{64}$/.test(head)) && typeof signed_at === 'string';
  if (!wellFormed || canonicalize({ size, head, signed_at }) !== text) throw new Error(`the checkpoint's signed payload is not {size, head, signed_at} in canonical JSON: ${text.slice(0, 200)}`);
  return { size: size as number, head: head as string | null, signed_at: signed_at as string, jws };
}
