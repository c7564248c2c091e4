/**
 * JSON-RPC at `/mcp`, for both MCP revisions: reading a request body (bounded) and answering an
 * error that carries the request's `id` whenever it could be read (JSON-RPC 2.0 §5: `null` only
 * when the id could not be determined).
 */
import type Koa from 'koa';
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';

/** The largest `/mcp` request body read, bytes (the SDK transport's own bound is 4 MB). */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** The `id` of a JSON-RPC request body (the first of a batch) when it is a string or an integer, else null. */
export function requestIdOf(body: unknown): RequestId | null {
  const first = Array.isArray(body) ? body[0] : body;
  const id = first !== null && typeof first === 'object' ? (first as { id?: unknown }).id : undefined;
  return typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : null;
}

/** Answers a JSON-RPC error with HTTP `status`: `code`, `message`, optional `data`, and the request's `id`. */
export function refuse(ctx: Koa.Context, status: number, code: number, message: string, id: RequestId | null, data?: unknown): void {
  ctx.status = status;
  ctx.body = { jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } };
}

/** The outcome of reading a body: the parsed JSON, nothing (no body), or why it was refused. */
export type ReadBody = { json: unknown } | { none: true } | { refused: { status: number; code: number; message: string } };

/** Reads and parses the request body, at most {@link MAX_BODY_BYTES}. */
export async function readBody(ctx: Koa.Context): Promise<ReadBody> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return { refused: { status: 413, code: -32600, message: `the request body is over ${MAX_BODY_BYTES} bytes` } };
    chunks.push(chunk);
  }
  if (size === 0) return { none: true };
  try {
    return { json: JSON.parse(Buffer.concat(chunks).toString('utf8')) };
  } catch {
    return { refused: { status: 400, code: -32700, message: 'Parse error: the body is not JSON' } };
  }
}
