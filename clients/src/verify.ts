/**
 * Checking what a Holon gateway signed (issue 23 §1, §2, §3), with nothing but its JWKS
 * (`/.well-known/jwks.json`): a mandate (`GET /v0/mandates/{issuer}/{name}` answers its `jws`),
 * a receipt tree (every receipt the gateway answers carries its `jws`: `GET /v0/receipts/{id}`,
 * `GET /v0/receipts`, `POST /v0/calls`) and a checkpoint of the journal's hash chain
 * (`GET /v0/journal/checkpoint`, the binding's `GET /internal/ledger/checkpoint`).
 *
 * Each document is a compact JWS (EdDSA, Ed25519) whose payload is the RFC 8785 canonical JSON of
 * its claims: `iss` (the gateway's public URL), `iat` (when it was signed, seconds), `sub` (the
 * document's id), the document itself (`mandate` or `receipt`), and `exp` for a mandate with an
 * expiry. A receipt's claims also list its children as `{id, sha256}`, the SHA-256 (base64url)
 * of each child's own JWS, so the root's signature covers the whole tree: a child removed,
 * added or altered is detected. Every refusal is a {@link VerificationError} with a code and a
 * sentence naming the document and the key.
 */
import canonicalize from 'canonicalize';
import { createLocalJWKSet, decodeProtectedHeader, errors, jwtVerify, type JSONWebKeySet, type JWK } from 'jose';

/** The `typ` header of a signed mandate. */
export const MANDATE_TYP = 'holon-mandate+jwt';
/** The `typ` header of a signed receipt. */
export const RECEIPT_TYP = 'holon-receipt+jwt';
/** The `typ` header of a signed checkpoint of the journal. */
export const CHECKPOINT_TYP = 'holon-checkpoint+jwt';
/** The `sub` of a signed checkpoint: what it is a point of. */
export const CHECKPOINT_SUB = 'journal';

/** A public key as a Holon JWKS lists it: an Ed25519 JWK with `kid`, and `exp` (seconds) once the key is retired and due to leave the set. */
export type HolonJwk = JWK & { kid: string; exp?: number };

/** Why a signed document was refused. */
export type VerificationCode =
  | 'malformed'
  | 'key_not_in_jwks'
  | 'key_expired'
  | 'bad_signature'
  | 'expired'
  | 'wrong_type'
  | 'wrong_issuer'
  | 'json_differs'
  | 'child_missing'
  | 'child_altered'
  | 'child_unsigned';

/** A refused document: `code` for programs, the message (the document, the key, what to do) for people. */
export class VerificationError extends Error {
  readonly code: VerificationCode;
  constructor(code: VerificationCode, message: string) {
    super(message);
    this.name = 'VerificationError';
    this.code = code;
  }
}

/** The claims every signed document carries. */
export interface SignedClaims {
  iss: string;
  iat: number;
  sub: string;
  exp?: number;
}

/** A signed mandate's claims: the mandate document as the gateway stored it. */
export interface MandateClaims extends SignedClaims {
  mandate: Record<string, unknown>;
}

/** A child of a signed receipt: its id and the SHA-256 (base64url) of its JWS. */
export interface ChildDigest {
  id: string;
  sha256: string;
}

/** A signed receipt's claims: the receipt without its expanded `calls`, and its children's digests in call order. */
export interface ReceiptClaims extends SignedClaims {
  receipt: Record<string, unknown>;
  children: ChildDigest[];
}

/**
 * A signed checkpoint's claims (issue 23 §3): `size` journal entries chained, `head` the SHA-256
 * (lower-case hex) at that position (null when `size` is 0), `signed_at` when (ISO 8601); `sub`
 * is {@link CHECKPOINT_SUB}.
 */
export interface CheckpointClaims extends SignedClaims {
  size: number;
  head: string | null;
  signed_at: string;
}

/** A receipt tree as `GET /v0/receipts/{id}` answers it: each receipt with its `jws` and its children in `calls`. */
export interface SignedReceiptTree {
  id: string;
  jws?: string;
  calls: SignedReceiptTree[];
  [field: string]: unknown;
}

/** Options of the checks: the moment to check at (default now) and the issuer to expect (default any). */
export interface VerifyOptions {
  now?: Date;
  issuer?: string;
}

/** The SHA-256 of a JWS's text, base64url without padding: what a parent receipt lists for each child. */
export async function jwsDigest(jws: string): Promise<string> {
  const digest = new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(jws)));
  let binary = '';
  for (const byte of digest) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The canonical JSON (RFC 8785) of a value, so two documents compare whatever their key order. */
export function canonicalJson(value: unknown): string {
  return canonicalize(value) ?? 'null';
}

/**
 * Verifies one compact JWS against `jwks` and answers its claims: the key must be listed (by
 * `kid`) and not past its `exp`, the signature must hold, `typ` must be `typ`, the document not
 * expired, and its issuer `options.issuer` when given. Throws {@link VerificationError}.
 */
export async function verifySigned<T extends SignedClaims>(jws: string, jwks: JSONWebKeySet, typ: string, what: string, options: VerifyOptions = {}): Promise<T> {
  let kid: string | undefined;
  try {
    kid = decodeProtectedHeader(jws).kid;
  } catch {
    throw new VerificationError('malformed', `${what} is not a compact JWS (three base64url parts)`);
  }
  const now = options.now ?? new Date();
  const key = (jwks.keys as HolonJwk[]).find((candidate) => candidate.kid === kid);
  if (!key) {
    const listed = jwks.keys.map((candidate) => candidate.kid).join(', ') || 'none';
    throw new VerificationError('key_not_in_jwks', `${what} was signed with key ${kid ?? '(no kid)'}, which the JWKS does not list (it lists ${listed}): fetch the issuer's current /.well-known/jwks.json, or the document did not come from that gateway`);
  }
  if (typeof key.exp === 'number' && key.exp * 1000 <= now.getTime()) {
    throw new VerificationError('key_expired', `${what} was signed with key ${kid}, which expired at ${new Date(key.exp * 1000).toISOString()}: fetch the document again for a signature by the current key`);
  }
  try {
    const { payload } = await jwtVerify(jws, createLocalJWKSet({ keys: [key] }), { typ, algorithms: ['EdDSA'], currentDate: now, issuer: options.issuer });
    return payload as unknown as T;
  } catch (error) {
    if (error instanceof errors.JWSSignatureVerificationFailed) {
      throw new VerificationError('bad_signature', `${what}: the signature of key ${kid} does not match the signed text: it was changed after signing`);
    }
    if (error instanceof errors.JWTExpired) {
      throw new VerificationError('expired', `${what} expired at ${new Date(Number(error.payload.exp) * 1000).toISOString()}`);
    }
    if (error instanceof errors.JWTClaimValidationFailed && error.claim === 'typ') {
      throw new VerificationError('wrong_type', `${what} is not a ${typ} document: its typ header is ${JSON.stringify(decodeProtectedHeader(jws).typ)}`);
    }
    if (error instanceof errors.JWTClaimValidationFailed && error.claim === 'iss') {
      throw new VerificationError('wrong_issuer', `${what} was issued by ${JSON.stringify(error.payload.iss)}, not ${options.issuer}`);
    }
    if (error instanceof errors.JOSEError) throw new VerificationError('malformed', `${what}: ${error.message}`);
    throw error;
  }
}

/** Verifies a signed mandate ({@link verifySigned}) and answers its claims; `json`, when given, must equal the signed mandate. */
export async function verifyMandate(jws: string, jwks: JSONWebKeySet, options: VerifyOptions & { json?: unknown } = {}): Promise<MandateClaims> {
  const claims = await verifySigned<MandateClaims>(jws, jwks, MANDATE_TYP, 'the mandate', options);
  if (options.json !== undefined && canonicalJson(options.json) !== canonicalJson(claims.mandate)) {
    throw new VerificationError('json_differs', `mandate ${claims.sub}: the JSON beside the signature differs from the signed mandate: trust only the signed one`);
  }
  return claims;
}

/**
 * Verifies a signed checkpoint ({@link verifySigned}, type {@link CHECKPOINT_TYP}) and answers its
 * claims; a payload that is not a well-formed point (a `size` of 0 or more, a 64-hex `head`, or
 * null with `size` 0, a `signed_at`) is refused `malformed`. Throws {@link VerificationError}.
 */
export async function verifyCheckpoint(jws: string, jwks: JSONWebKeySet, options: VerifyOptions = {}): Promise<CheckpointClaims> {
  const claims = await verifySigned<CheckpointClaims>(jws, jwks, CHECKPOINT_TYP, 'the checkpoint', options);
  const { size, head, signed_at, sub } = claims;
  const point = Number.isSafeInteger(size) && size >= 0 && (head === null ? size === 0 : typeof head === 'string' && /^[0-9a-f]{64}$/.test(head));
  if (sub !== CHECKPOINT_SUB || !point || typeof signed_at !== 'string' || Number.isNaN(Date.parse(signed_at))) {
    throw new VerificationError('malformed', `the checkpoint's signed claims are not a point of the journal ({sub: "${CHECKPOINT_SUB}", size, head, signed_at}): ${JSON.stringify({ sub, size, head, signed_at }).slice(0, 200)}`);
  }
  return claims;
}

/** The receipt fields a receipt's signature covers: everything but its expanded `calls` and the signatures. */
export function signedReceiptFields(tree: object): Record<string, unknown> {
  const { calls: _calls, jws: _jws, sub_mandate_jws: _sub, ...receipt } = tree as Record<string, unknown>;
  return receipt;
}

/**
 * Verifies a whole receipt tree with only the gateway's JWKS (issue 23 §2): every receipt's
 * signature, that its JSON equals what was signed, and that its signed child digests match the
 * children the tree holds, exactly and in order. Answers how many receipts were checked; throws
 * {@link VerificationError} naming the first receipt that fails.
 */
export async function verifyReceipt(tree: SignedReceiptTree, jwks: JSONWebKeySet, options: VerifyOptions = {}): Promise<{ receipts: number }> {
  const what = `receipt ${tree.id}`;
  if (typeof tree.jws !== 'string') throw new VerificationError('malformed', `${what} carries no jws: read it with GET /v0/receipts/${tree.id}`);
  const claims = await verifySigned<ReceiptClaims>(tree.jws, jwks, RECEIPT_TYP, what, options);
  if (canonicalJson(signedReceiptFields(tree)) !== canonicalJson(claims.receipt)) {
    throw new VerificationError('json_differs', `${what}: its JSON differs from the signed receipt: trust only the signed one`);
  }
  const calls = Array.isArray(tree.calls) ? tree.calls : [];
  let receipts = 1;
  for (const [index, signed] of claims.children.entries()) {
    const child = calls[index];
    if (!child || child.id !== signed.id) {
      throw new VerificationError('child_missing', `${what}'s signature covers child ${signed.id} at position ${index + 1}, which the tree does not hold there${child ? ` (it holds ${child.id})` : ''}`);
    }
    if (typeof child.jws !== 'string' || (await jwsDigest(child.jws)) !== signed.sha256) {
      throw new VerificationError('child_altered', `${what}'s signature covers child ${signed.id} with digest ${signed.sha256}; the child in the tree has another: it was altered or re-signed`);
    }
    receipts += (await verifyReceipt(child, jwks, options)).receipts;
  }
  if (calls.length > claims.children.length) {
    throw new VerificationError('child_unsigned', `${what} holds child ${calls[claims.children.length].id}, which its signature does not cover`);
  }
  return { receipts };
}
