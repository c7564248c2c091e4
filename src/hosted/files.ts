/**
 * Uploaded files (gateway §7 "Files"): stored whole in `hosted_files` (the bytes in the database,
 * see migration 012 for why), bounded per file and per account, deleted 24 hours after upload by
 * {@link sweepFiles}, and handed to MCP agents as signed links (`_meta["holon/files"]`, §6) for
 * the handles a call's input carries, when the call's root mandate was issued by the files' owner.
 *
 * Time is read from an injected clock (ms since the epoch), so expiry and the sweep are tested
 * without waiting.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { components } from '../../generated/gateway/types.ts';
import { int } from '../db/index.ts';
import { HttpError } from '../http/errors.ts';
import type { FilesAttached } from '../gateway/lifecycle.ts';
import type { FileLink } from '../runtimes/types.ts';
import { signedPath } from './file-links.ts';

/** The handle of a file, as a call's input carries it: `holon://files/<id>`. */
export const FILE_HANDLE_PREFIX = 'holon://files/';

/** A file id: `f_` then 22 base64url characters (128 random bits). */
export const FILE_ID_PATTERN = /^f_[A-Za-z0-9_-]{22}$/;

/** Largest file accepted, in bytes (20 MiB, gateway §7 "Files"). */
export const MAX_FILE_BYTES = 20 * 1024 * 1024;

/** Most bytes of live (not yet deleted) files an account may hold (200 MiB). */
export const MAX_LIVE_FILE_BYTES = 200 * 1024 * 1024;

/** How long a file lives after its upload, in ms (24 hours). */
export const FILE_TTL_MS = 24 * 60 * 60 * 1000;

/** Most distinct file handles one call's input may carry; more is refused 422 `too_many_files`. */
export const MAX_FILES_PER_CALL = 100;

/** The bounds of uploads, in bytes (defaults above; tests lower them). */
export interface FileBounds {
  max_file_bytes: number;
  max_live_bytes: number;
}

/** A stored file as the API shows it (`FileHandle` in `openapi/gateway.yaml`). */
export type FileView = components['schemas']['FileHandle'];

/** A media type token (RFC 9110 §5.6.2). */
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}$`);
const CHARSET = new RegExp(`^${TOKEN}$`);

/** Longest media type stored, in characters. */
const MAX_CONTENT_TYPE_CHARS = 255;

/**
 * The media type a file is stored and served with: `type/subtype` (lower case) and its charset
 * when one is given; `application/octet-stream` when the request has none. Throws 422
 * `invalid_request` for one that is not a media type, so nothing but a media type ever reaches
 * the `Content-Type` header of a download.
 */
export function storedContentType(type: string, charset: string): string {
  const media = type.trim().toLowerCase();
  if (media === '') return 'application/octet-stream';
  const full = charset === '' ? media : `${media}; charset=${charset.toLowerCase()}`;
  if (!MEDIA_TYPE.test(media) || (charset !== '' && !CHARSET.test(charset)) || full.length > MAX_CONTENT_TYPE_CHARS) {
    throw new HttpError(422, 'invalid_request', `invalid request: Content-Type ${JSON.stringify(type)} is not a media type of at most ${MAX_CONTENT_TYPE_CHARS} characters; send the file as application/octet-stream if unsure`);
  }
  return full;
}

function view(row: { id: string; content_type: string; size: unknown; sha256: string; expires_at: Date | string }): FileView {
  return { handle: `${FILE_HANDLE_PREFIX}${row.id}`, id: row.id, content_type: row.content_type, size: int(row.size as number), sha256: row.sha256, expires_at: new Date(row.expires_at).toISOString() };
}

/**
 * Stores `bytes` as a file of `owner` (an account handle) at `now_ms`, in one transaction that
 * locks the owner's account row, so concurrent uploads cannot together pass the quota. Throws
 * 413 `files_quota_exceeded` when the owner's live files plus this one would pass
 * `bounds.max_live_bytes` (the size check per file is the reader's, before anything is buffered).
 */
export async function storeFile(db: Knex, file: { owner: string; content_type: string; bytes: Buffer; now_ms: number }, bounds: FileBounds): Promise<FileView> {
  const now = new Date(file.now_ms);
  return db.transaction(async (trx) => {
    await trx('hosted_accounts').where({ handle: file.owner }).forUpdate().first('handle');
    const [{ live }] = await trx('hosted_files').where({ owner: file.owner }).where('expires_at', '>', now).sum({ live: 'size' });
    const live_bytes = live === null ? 0 : int(live);
    if (live_bytes + file.bytes.length > bounds.max_live_bytes) {
      throw new HttpError(413, 'files_quota_exceeded', `an account holds at most ${bounds.max_live_bytes} bytes of live files; it holds ${live_bytes} and this file has ${file.bytes.length}: wait for older files to be deleted (24 hours after upload)`);
    }
    const row = {
      id: `f_${randomBytes(16).toString('base64url')}`,
      owner: file.owner,
      content_type: file.content_type,
      size: file.bytes.length,
      sha256: createHash('sha256').update(file.bytes).digest('hex'),
      bytes: file.bytes,
      created_at: now,
      expires_at: new Date(file.now_ms + FILE_TTL_MS),
    };
    await trx('hosted_files').insert(row);
    return view(row);
  });
}

/** A live file's bytes and how to serve them, or null when it does not exist or has expired at `now_ms`. */
export async function readFileBytes(db: Knex, id: string, now_ms: number): Promise<{ content_type: string; bytes: Buffer } | null> {
  const row = await db('hosted_files').where({ id }).where('expires_at', '>', new Date(now_ms)).first('content_type', 'bytes');
  return row ? { content_type: row.content_type, bytes: Buffer.from(row.bytes) } : null;
}

/** Deletes every file expired at `now_ms` (24 hours after its upload); answers how many. */
export async function sweepFiles(db: Knex, now_ms: number): Promise<number> {
  return (await db('hosted_files').where('expires_at', '<=', new Date(now_ms)).delete().returning('id')).length;
}

/**
 * Every distinct string of `input` that starts with `holon://files/`, in order of appearance.
 * The walk visits each value once; the input was already bounded by the request body limit.
 */
export function fileHandles(input: unknown): string[] {
  const found = new Set<string>();
  const walk = (value: unknown): void => {
    if (typeof value === 'string') {
      if (value.startsWith(FILE_HANDLE_PREFIX)) found.add(value);
    } else if (Array.isArray(value)) value.forEach(walk);
    else if (value !== null && typeof value === 'object') Object.values(value).forEach(walk);
  };
  walk(input);
  return [...found];
}

/**
 * The signed links for the handles of a call's input, keyed by handle (gateway §6
 * `_meta["holon/files"]`), when every handle names a live file of `owner` (the issuer of the
 * call's root mandate, gateway §7 "Files"); else the refusal. A handle naming someone else's
 * file, a deleted one or none at all gets the same answer, `file_not_found`, so a caller learns
 * nothing of other accounts' files. More than {@link MAX_FILES_PER_CALL} handles: `too_many_files`.
 */
export async function attachFiles(
  db: Knex,
  link: { key: Buffer; origin: () => string },
  input: unknown,
  owner: string,
  now_ms: number,
): Promise<FilesAttached> {
  const handles = fileHandles(input);
  if (handles.length > MAX_FILES_PER_CALL) return { ok: false, code: 'too_many_files', message: `an input carries at most ${MAX_FILES_PER_CALL} file handles; this one carries ${handles.length}` };
  if (handles.length === 0) return { ok: true, links: {} };
  const ids = handles.map((handle) => handle.slice(FILE_HANDLE_PREFIX.length));
  const rows = await db('hosted_files')
    .whereIn('id', ids.filter((id) => FILE_ID_PATTERN.test(id)))
    .where({ owner })
    .where('expires_at', '>', new Date(now_ms))
    .select('id', 'content_type', 'size', 'sha256');
  const byId = new Map(rows.map((row) => [row.id as string, row]));
  const links: Record<string, FileLink> = {};
  for (const [i, handle] of handles.entries()) {
    const row = byId.get(ids[i]);
    if (!row) return { ok: false, code: 'file_not_found', message: `${handle} is not a live file of ${owner}, the issuer of this call's root mandate: upload it with POST /v0/files (files are deleted 24 hours after upload)` };
    const signed = signedPath(link.key, row.id, now_ms);
    links[handle] = { url: `${link.origin()}${signed.path}`, content_type: row.content_type, size: int(row.size), sha256: row.sha256, expires: new Date(signed.exp_s * 1000).toISOString() };
  }
  return { ok: true, links };
}
