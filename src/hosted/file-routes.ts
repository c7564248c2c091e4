/**
 * The two file operations of the hosted API (gateway §7 "Files"): `POST /v0/files` reads the
 * request body as the file's raw bytes, bounded while it streams in, and stores it for the key's
 * account; `GET /v0/files/{id}?exp&sig` serves a file through a signed link, as an attachment the
 * browser never renders.
 */
import type Koa from 'koa';
import type { Knex } from 'knex';
import getRawBody from 'raw-body';
import { HttpError, invalidRequest } from '../http/errors.ts';
import { verifyLink } from './file-links.ts';
import { readFileBytes, storeFile, storedContentType, type FileBounds, type FileView } from './files.ts';

/** What the file operations need: the database, the link key, the bounds and the clock (ms since the epoch). */
export interface FileRouteDeps {
  db: Knex;
  link_key: Buffer;
  bounds: FileBounds;
  now_ms: () => number;
}

/**
 * Reads the request body as a file of at most `max_bytes`. Throws 415 for a Content-Encoding
 * (the bytes stored must be the bytes sent), 413 `file_too_large` past the bound (refused from a
 * declared Content-Length before reading, else as soon as the stream passes it), 422 for an
 * empty body or one that could not be read.
 */
async function readFileBody(ctx: Koa.Context, max_bytes: number): Promise<Buffer> {
  const encoding = ctx.get('content-encoding');
  if (encoding !== '' && encoding.toLowerCase() !== 'identity') {
    throw new HttpError(415, 'invalid_request', `the file is sent with Content-Encoding ${encoding}; send its bytes unencoded`);
  }
  let bytes: Buffer;
  try {
    bytes = await getRawBody(ctx.req, { length: ctx.get('content-length') || undefined, limit: max_bytes });
  } catch (error) {
    if ((error as { type?: string }).type === 'entity.too.large') {
      throw new HttpError(413, 'file_too_large', `a file is at most ${max_bytes} bytes; split it or send a smaller one`);
    }
    throw invalidRequest(`invalid request: the file could not be read (${(error as Error).message})`);
  }
  if (bytes.length === 0) throw invalidRequest('invalid request: the body is empty; send the file\'s bytes as the body');
  return bytes;
}

/** `POST /v0/files` for `owner` (the key's account): 201 with the stored file's handle. */
export async function uploadFile(deps: FileRouteDeps, ctx: Koa.Context, owner: string): Promise<FileView> {
  const content_type = storedContentType(ctx.request.type, ctx.request.charset);
  const bytes = await readFileBody(ctx, deps.bounds.max_file_bytes);
  const stored = await storeFile(deps.db, { owner, content_type, bytes, now_ms: deps.now_ms() }, deps.bounds);
  ctx.status = 201;
  return stored;
}

/**
 * `GET /v0/files/{id}?exp&sig`: the file's bytes. The link is checked before the database is
 * read (403 `invalid_signature`, `link_expired`); a valid link to a deleted file is 404
 * `file_not_found`.
 */
export async function downloadFile(deps: FileRouteDeps, ctx: Koa.Context, request: { params: { id: string }; query: { exp: number; sig: string } }): Promise<Buffer> {
  const now_ms = deps.now_ms();
  verifyLink(deps.link_key, request.params.id, request.query.exp, request.query.sig, now_ms);
  const file = await readFileBytes(deps.db, request.params.id, now_ms);
  if (!file) throw new HttpError(404, 'file_not_found', `the file ${request.params.id} was deleted (files live 24 hours after upload)`);
  ctx.type = file.content_type;
  ctx.set('content-disposition', `attachment; filename="${request.params.id}"`);
  ctx.set('x-content-type-options', 'nosniff');
  ctx.set('content-security-policy', "sandbox; default-src 'none'");
  ctx.set('cache-control', 'private, no-store');
  return file.bytes;
}
