/**
 * API keys of the hosted gateway (gateway §7 "Principals"): `hlk_h_…` human keys, `hlk_a_…`
 * agent keys. A key is shown once; only its SHA-256 is stored, found by its public prefix and
 * compared in constant time, so neither the database nor the timing of a refusal gives it away.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Knex } from 'knex';
import { iso } from '../db/index.ts';

/** The two kinds of account key. */
export type KeyKind = 'human' | 'agent';

/** How long a human key minted by a GitHub sign-in lives: 30 days (gateway §7 "Accounts"). */
export const SIGNIN_KEY_TTL_MS = 30 * 24 * 3600 * 1000;

/** Live keys one account may hold at once; `POST /v0/keys` refuses more (`too_many_keys`). */
export const MAX_LIVE_KEYS = 100;

const KIND_TAG: Record<KeyKind, string> = { human: 'hlk_h_', agent: 'hlk_a_' };

/** The characters of a key's prefix after its kind tag: 8 base64url characters, 48 random bits. */
const PREFIX_CHARS = 8;

/** A key as the API shows it when minted, the secret included (shown once). */
export interface NewKey {
  key: string;
  prefix: string;
  kind: KeyKind;
  mandate: string | null;
  ask_in_client: boolean;
  expires_at: string | null;
}

/** A stored key without its secret. */
export interface KeyRow {
  prefix: string;
  kind: KeyKind;
  account: string;
  mandate: string | null;
  ask_in_client: boolean;
  expires_at: string | null;
  revoked_at: string | null;
  created_at: string;
}

/** The hex SHA-256 of a secret. */
export const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** Whether two secrets are equal, in time independent of where they differ (their SHA-256s are compared). */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(Buffer.from(sha256(a), 'hex'), Buffer.from(sha256(b), 'hex'));
}

/** The kind and prefix a presented key claims (`hlk_a_x7Kq2pLm…` → agent, `hlk_a_x7Kq2pLm`), or null. */
export function parseKey(key: string): { kind: KeyKind; prefix: string } | null {
  for (const kind of ['human', 'agent'] as const) {
    const tag = KIND_TAG[kind];
    if (key.startsWith(tag) && key.length > tag.length + PREFIX_CHARS) return { kind, prefix: key.slice(0, tag.length + PREFIX_CHARS) };
  }
  return null;
}

/** A `hosted_keys` row as a {@link KeyRow}. */
export function keyView(row: Record<string, any>): KeyRow {
  return {
    prefix: row.prefix,
    kind: row.kind,
    account: row.account,
    mandate: row.mandate,
    ask_in_client: Boolean(row.ask_in_client),
    expires_at: iso(row.expires_at),
    revoked_at: iso(row.revoked_at),
    created_at: iso(row.created_at)!,
  };
}

/**
 * Mints and stores a key for `account`: an agent key acts under `mandate`, a human key under
 * none. `ttl_ms` null: it does not expire. Returns the key with its secret, shown once.
 */
export async function mintKey(
  db: Knex | Knex.Transaction,
  fields: { kind: KeyKind; account: string; mandate: string | null; ask_in_client: boolean; ttl_ms: number | null },
): Promise<NewKey> {
  const key = KIND_TAG[fields.kind] + randomBytes(30).toString('base64url');
  const prefix = key.slice(0, KIND_TAG[fields.kind].length + PREFIX_CHARS);
  const expires_at = fields.ttl_ms === null ? null : new Date(Date.now() + fields.ttl_ms).toISOString();
  await db('hosted_keys').insert({
    prefix,
    sha256: sha256(key),
    kind: fields.kind,
    account: fields.account,
    mandate: fields.mandate,
    ask_in_client: fields.ask_in_client,
    expires_at,
  });
  return { key, prefix, kind: fields.kind, mandate: fields.mandate, ask_in_client: fields.ask_in_client, expires_at };
}

/**
 * The live key `presented` is, or null when it is unknown, revoked, expired, or its account is
 * disabled. The stored hash is found by prefix and compared in constant time.
 */
export async function verifyKey(db: Knex, presented: string): Promise<KeyRow | null> {
  const claimed = parseKey(presented);
  if (!claimed) return null;
  const row = await db('hosted_keys as k')
    .join('hosted_accounts as a', 'a.handle', 'k.account')
    .where('k.prefix', claimed.prefix)
    .first('k.*', 'a.disabled_at');
  if (!row) return null;
  const matches = timingSafeEqual(Buffer.from(row.sha256, 'hex'), Buffer.from(sha256(presented), 'hex'));
  if (!matches || row.revoked_at !== null || row.disabled_at !== null) return null;
  if (row.expires_at !== null && new Date(row.expires_at).getTime() <= Date.now()) return null;
  return keyView(row);
}

/** The live keys of an account, oldest first. */
export async function liveKeys(db: Knex | Knex.Transaction, account: string): Promise<KeyRow[]> {
  const rows = await db('hosted_keys')
    .where({ account })
    .whereNull('revoked_at')
    .where((q) => q.whereNull('expires_at').orWhere('expires_at', '>', new Date()))
    .orderBy('created_at');
  return rows.map(keyView);
}
