/**
 * Endpoint credentials (gateway §6 "Authentication"): the token an author's server requires,
 * set once per agent id (`ns/name`) and sent as `Authorization: Bearer <token>` to that agent's
 * `runtime.endpoint` on every call of every version, evaluations and drafts included, and to
 * nothing else.
 *
 * Write-only: nothing answers the token back; the author's view asks {@link credentialStatus}.
 * Stored sealed with AES-256-GCM under a key derived from `HOLON_FILE_SECRET` by HKDF-SHA-256;
 * the agent id is the additional authenticated data, so a sealed token copied onto another
 * agent's row does not open. Changing the secret means authors set their tokens again: a token
 * that no longer opens is treated as unset.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { HttpError } from '../http/errors.ts';

/** The longest token accepted, in characters. */
export const MAX_TOKEN_CHARS = 4096;

/** A token is visible ASCII (0x21-0x7E): it travels in an HTTP header, so no space, control character or line break. */
const TOKEN_PATTERN = /^[\x21-\x7e]+$/;

/** The format tag of a sealed token: `v1.<base64url(iv ‖ tag ‖ ciphertext)>`. */
const SEALED_PREFIX = 'v1.';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The AES-256 key of endpoint credentials, derived from `HOLON_FILE_SECRET` (HKDF-SHA-256, 32 bytes). */
export type CredentialKey = Buffer & { readonly __credentialKey: true };

/** Derives the credential key from the file secret. */
export function credentialKey(file_secret: string): CredentialKey {
  return Buffer.from(hkdfSync('sha256', file_secret, 'holon', 'holon endpoint credential v1', 32)) as CredentialKey;
}

/** Checks a token's shape; throws 422 `invalid_request` naming the bound. */
export function checkToken(token: unknown): string {
  if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_CHARS || !TOKEN_PATTERN.test(token)) {
    throw new HttpError(422, 'invalid_request', `token must be 1 to ${MAX_TOKEN_CHARS} visible ASCII characters (no spaces or line breaks): it is sent as an HTTP header`);
  }
  return token;
}

/** Seals `token` for agent `agent` (`ns/name`). */
export function sealCredential(key: CredentialKey, agent: string, token: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(agent));
  const ciphertext = Buffer.concat([cipher.update(token, 'utf8'), cipher.final()]);
  return SEALED_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url');
}

/** Opens a sealed token of `agent`; null when it does not open (another key, another agent, tampered). */
export function openCredential(key: CredentialKey, agent: string, sealed: string): string | null {
  if (!sealed.startsWith(SEALED_PREFIX)) return null;
  const bytes = Buffer.from(sealed.slice(SEALED_PREFIX.length), 'base64url');
  if (bytes.length <= IV_BYTES + TAG_BYTES) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(agent));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}

/** Sets (or replaces) the token of `agent`, owned by `account`, in one write. */
export async function storeCredential(db: Knex, key: CredentialKey, account: string, agent: string, token: string): Promise<void> {
  const row = { agent, account, sealed: sealCredential(key, agent, checkToken(token)), updated_at: db.fn.now() };
  await db('hosted_endpoint_credentials').insert(row).onConflict('agent').merge();
}

/** Removes the token of `agent`; answers whether one was set. */
export async function removeCredential(db: Knex, agent: string): Promise<boolean> {
  return (await db('hosted_endpoint_credentials').where({ agent }).delete()) > 0;
}

/**
 * Whether an endpoint credential is set for `ns/name`, for the author's view (gateway §6: the
 * view says only that). True even when the file secret changed since; the gateway then sends none.
 */
export async function credentialStatus(db: Knex, ns: string, name: string): Promise<boolean> {
  return (await db('hosted_endpoint_credentials').where({ agent: `${ns}/${name}` }).first('agent')) !== undefined;
}

/** The token to send to `agent`'s endpoint, or null when none is set or it no longer opens under `key`. */
export async function readCredential(db: Knex, key: CredentialKey, agent: string): Promise<string | null> {
  const row = await db('hosted_endpoint_credentials').where({ agent }).first('sealed');
  return row ? openCredential(key, agent, row.sealed as string) : null;
}
