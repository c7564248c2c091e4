/**
 * The gateway's signer (issue 23 §1, §2; §3 signs checkpoints with it, `checkpoint.ts`): a compact JWS (EdDSA,
 * Ed25519) over the RFC 8785 canonical JSON of a document's claims, with `iss` (the gateway's
 * public URL), `iat` (seconds) and the header's `kid` and `typ`. Its public keys are the JWKS of
 * `/.well-known/jwks.json`. Ed25519 signatures are deterministic: the same claims signed by the
 * same key in the same second give the same JWS.
 *
 *     const signer = await openSigner(db, { file_secret, issuer: 'https://holon.example' });
 *     const jws = await signer.sign({ sub: mandate.id, mandate }, 'holon-mandate+jwt');
 *     const { keys } = await signer.jwks();
 */
import { KeyObject, sign as signBytes } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Knex } from 'knex';
import { activeKey, listedKeys, processKey, type PublicJwk, type SigningKey } from './keys.ts';

/** What {@link openSigner} needs: the database holding the keys and `HOLON_FILE_SECRET` (null: a key of this process only), and the issuer. */
export interface SignerOptions {
  /** `HOLON_FILE_SECRET`, or null (development: a key made for this process, gone at a restart). */
  file_secret: string | null;
  /** The gateway's public URL, the `iss` of everything it signs. */
  issuer: string;
}

/** A JWKS as `/.well-known/jwks.json` serves it. */
export interface Jwks {
  keys: PublicJwk[];
}

/** Signs documents with the gateway's active key and lists its public keys. */
export class Signer {
  readonly issuer: string;
  readonly #key: SigningKey;
  /** The private key as node:crypto signs with it (a stored key is a WebCrypto key: its node key, still never exported). */
  readonly #private: KeyObject;
  readonly #listed: () => Promise<PublicJwk[]>;

  constructor(issuer: string, key: SigningKey, listed: () => Promise<PublicJwk[]>) {
    this.issuer = issuer;
    this.#key = key;
    this.#private = key.private_key instanceof KeyObject ? key.private_key : KeyObject.from(key.private_key);
    this.#listed = listed;
  }

  /** The key this signer signs with: its `kid` and its (non-exportable) private key, for a caller that builds its own JWS. */
  signingKey(): SigningKey {
    return this.#key;
  }

  /**
   * Signs `claims` (a JSON object; `sub`, `exp` and the document as the caller names them) as a
   * compact JWS of type `typ` (RFC 7515 §7.1): the payload is the canonical JSON of the claims
   * with `iss` and `iat` (now, seconds, unless the claims give it) added; the protected header is
   * `{"alg":"EdDSA","kid","typ"}`. Signed in this thread with node:crypto (Ed25519, RFC 8032):
   * WebCrypto's `subtle.sign`, which jose uses, queues each signature on the libuv thread pool,
   * and every call's answer waited for that hop (issue 21). The bytes are those jose makes.
   */
  async sign(claims: Record<string, unknown>, typ: string): Promise<string> {
    const payload = canonicalize({ iat: Math.floor(Date.now() / 1000), ...claims, iss: this.issuer })!;
    const header = JSON.stringify({ alg: 'EdDSA', kid: this.#key.kid, typ });
    const input = `${Buffer.from(header).toString('base64url')}.${Buffer.from(payload).toString('base64url')}`;
    return `${input}.${signBytes(null, Buffer.from(input), this.#private).toString('base64url')}`;
  }

  /** The public keys to verify with: the active one and the retired ones still listed. */
  async jwks(): Promise<Jwks> {
    return { keys: await this.#listed() };
  }
}

/** A signer over a key of this process only, listed nowhere else and gone at a restart (development, tests, a binding app built without one). */
export function processSigner(issuer: string): Signer {
  const { key, public_jwk } = processKey();
  return new Signer(issuer, key, async () => [public_jwk]);
}

/**
 * The signer of a gateway (or of a binding with its own database) on `db`: with a file secret,
 * the stored active key (made at the first start), shared by every process on that database;
 * without, a key of this process only ({@link processSigner}). `db` may still be opening: it is
 * awaited only for a stored key, so a start can open its stores while a process key is made
 * (issue 21 §4).
 */
export async function openSigner(db: Knex | Promise<Knex>, options: SignerOptions): Promise<Signer> {
  if (options.file_secret === null) return processSigner(options.issuer);
  const knex = await db;
  return new Signer(options.issuer, await activeKey(knex, options.file_secret), () => listedKeys(knex));
}
