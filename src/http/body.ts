/**
 * Reads a request's JSON body, refusing rather than guessing (issue 8 §1.7, §2): only UTF-8 JSON
 * (another charset or media type answers 415), at most a bounded number of bytes, bytes that are
 * UTF-8 (never decoded with U+FFFD in place of a bad sequence), and JSON whose strings, keys,
 * numbers and nesting pass `jsonFault`. Every refusal is an `HttpError` naming what was wrong.
 */
import type Koa from 'koa';
import bourne from '@hapi/bourne';
import getRawBody from 'raw-body';
import { HttpError, invalidRequest } from './errors.ts';
import { bytesFault, jsonFault } from './wellformed.ts';

/** The largest request body accepted by default, in bytes (1 MiB). */
export const MAX_BODY_BYTES = 1_048_576;

const unsupported = (message: string) => new HttpError(415, 'invalid_request', message);

/**
 * The body of `ctx` as parsed JSON; an empty body reads as `{}` (so `POST /v0/approvals/ID`
 * without a body approves). Throws `HttpError` 415 for a media type other than JSON, a charset
 * other than UTF-8 or a content encoding, and 422 `invalid_request` for a body over `limit_bytes`,
 * bytes that are not UTF-8, text that is not JSON, or JSON `jsonFault` refuses.
 */
export async function readJsonBody(ctx: Koa.Context, limit_bytes: number = MAX_BODY_BYTES): Promise<unknown> {
  const encoding = ctx.get('content-encoding');
  if (encoding !== '' && encoding.toLowerCase() !== 'identity') {
    throw unsupported(`the body is sent with Content-Encoding ${encoding}; only an unencoded body is accepted`);
  }
  let raw: Buffer;
  try {
    raw = await getRawBody(ctx.req, { length: ctx.get('content-length') || undefined, limit: limit_bytes });
  } catch (error) {
    const type = (error as { type?: string }).type;
    if (type === 'entity.too.large') throw invalidRequest(`invalid request: the body is larger than ${limit_bytes} bytes, the most accepted`);
    throw invalidRequest(`invalid request: the body could not be read (${(error as Error).message})`);
  }
  if (raw.length === 0) return {};
  if (!ctx.is('json')) {
    throw unsupported(`the body is sent as ${ctx.get('content-type') || 'no media type'}; send it as application/json`);
  }
  const charset = ctx.request.charset.toLowerCase();
  if (charset !== '' && charset !== 'utf-8' && charset !== 'utf8') {
    throw unsupported(`the body is sent in charset ${charset}; only UTF-8 is accepted`);
  }
  const badBytes = bytesFault(raw);
  if (badBytes) throw invalidRequest(`invalid request: ${badBytes}`);
  let body: unknown;
  try {
    // protoAction 'error': a `__proto__` key is refused, never merged into an object's prototype.
    body = bourne.parse(raw.toString('utf8'), { protoAction: 'error' });
  } catch {
    throw invalidRequest('invalid request: the body is not valid JSON');
  }
  const fault = jsonFault(body, 'body');
  if (fault) throw invalidRequest(`invalid request: ${fault}`);
  return body;
}
