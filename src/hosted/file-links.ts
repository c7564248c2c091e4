/**
 * Signed download links of uploaded files (gateway §7 "Files", §6 `_meta["holon/files"]`): an
 * HMAC-SHA256 over the file id and the expiry, with a key derived from `HOLON_FILE_SECRET` by
 * HKDF, so the secret itself never signs anything and the same secret can serve other purposes
 * (endpoint credentials) under other derived keys. A link is bound to one file (its id is
 * signed) and valid {@link LINK_TTL_MS}.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { HttpError } from '../http/errors.ts';

/** How long a signed link is valid, in ms (15 minutes, gateway §7 "Files"). */
export const LINK_TTL_MS = 15 * 60 * 1000;

/** The HKDF `info` of the link key: changing it invalidates every link at once. */
const LINK_KEY_INFO = 'holon file links v1';

/** The 32-byte link-signing key derived from `HOLON_FILE_SECRET` (HKDF-SHA256, no salt). */
export function linkKey(file_secret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', file_secret, Buffer.alloc(0), LINK_KEY_INFO, 32));
}

/** The signature of a link to file `id` expiring at `exp_s` (seconds since the epoch): base64url, 43 characters. */
export function signLink(key: Buffer, id: string, exp_s: number): string {
  return createHmac('sha256', key).update(`${id}\n${exp_s}`).digest('base64url');
}

/** The path and query of a signed link to file `id` issued at `now_ms`, and its expiry in seconds. */
export function signedPath(key: Buffer, id: string, now_ms: number): { path: string; exp_s: number } {
  const exp_s = Math.floor((now_ms + LINK_TTL_MS) / 1000);
  return { path: `/v0/files/${id}?exp=${exp_s}&sig=${signLink(key, id, exp_s)}`, exp_s };
}

/**
 * Checks a presented link at `now_ms`. Throws 403 `invalid_signature` when `sig` is not the
 * gateway's signature of (`id`, `exp_s`) (compared in constant time), 403 `link_expired` when it
 * is, but `exp_s` has passed. The signature is checked first, so an expired forgery learns nothing.
 */
export function verifyLink(key: Buffer, id: string, exp_s: number, sig: string, now_ms: number): void {
  const expected = Buffer.from(signLink(key, id, exp_s));
  const presented = Buffer.from(sig);
  if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
    throw new HttpError(403, 'invalid_signature', 'this link was not signed by the gateway for this file: ask the gateway for a new one by calling the agent again');
  }
  if (exp_s * 1000 <= now_ms) throw new HttpError(403, 'link_expired', `this link expired at ${new Date(exp_s * 1000).toISOString()}; links are valid 15 minutes`);
}
