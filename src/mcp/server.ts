/**
 * The gateway's own MCP server at `/mcp` (gateway §7 "Connecting Claude Code", "Limits"), over
 * Streamable HTTP, in two revisions on the same endpoint (a dual-era server, MCP 2026-07-28
 * "Versioning"), each served by any gateway process on the same database (issue 27 §1):
 * - 2026-07-28 (`modern.ts`): stateless; a request whose `_meta` or `MCP-Protocol-Version` names
 *   a protocol version, and any request that neither opens nor continues a 2025-11-25 session;
 * - 2025-11-25 (`legacy.ts`): `initialize` opens a session, stored in the database, which later
 *   requests name in `Mcp-Session-Id`.
 * The tools are the same in both (`tools.ts`). Every error answer carries the request's `id`
 * whenever it could be read.
 */
import type Koa from 'koa';
import type { Logger } from 'pino';
import type { Gateway } from '../gateway/lifecycle.ts';
import type { Registry } from '../gateway/registry.ts';
import type { Knex } from 'knex';
import { serveLegacy } from './legacy.ts';
import { isModern, serveModern } from './modern.ts';
import { readBody, refuse } from './rpc.ts';
import type { McpSessionBinding } from './tools.ts';

/** What the MCP server needs. */
export interface McpOptions {
  db: Knex;
  gateway: Gateway;
  registry: Registry;
  /** The mandate every call runs under (until hosted keys carry one): `HOLON_MCP_MANDATE`, default `dev/sandbox`. */
  mandate: string;
  logger: Logger;
  /**
   * Hosted (gateway §7 "/mcp under keys"): binds each request to the agent key's mandate,
   * whether it may ask in the client, and an owner id; a request of a 2025-11-25 session from
   * another owner is answered as an unknown session. Absent: every request runs under `mandate`
   * and may ask.
   */
  session?: (ctx: Koa.Context) => McpSessionBinding;
}

/**
 * Koa middleware serving `/mcp` (any method); other paths pass through. It holds nothing
 * between requests (sessions and answers are rows), so there is nothing to close.
 */
export function mcpMiddleware(options: McpOptions): Koa.Middleware {
  const middleware = async (ctx: Koa.Context, next: Koa.Next) => {
    if (ctx.path !== '/mcp') return next();
    const binding = options.session?.(ctx) ?? { mandate: options.mandate, elicit: true, owner: '' };
    const read = ctx.method === 'POST' ? await readBody(ctx) : { none: true as const };
    if ('refused' in read) return refuse(ctx, read.refused.status, read.refused.code, read.refused.message, null);
    const body = 'json' in read ? read.json : undefined;
    if (ctx.method === 'POST' && body === undefined) return refuse(ctx, 400, -32600, 'a POST to /mcp carries one JSON-RPC message', null);
    if (!['POST', 'GET', 'DELETE'].includes(ctx.method)) {
      ctx.set('allow', 'POST, GET, DELETE');
      return refuse(ctx, 405, -32000, `${ctx.method} is not served at /mcp`, null);
    }
    const legacy = ctx.get('mcp-session-id') !== '' || (body as { method?: unknown } | null)?.method === 'initialize';
    if (ctx.method === 'POST' && (isModern(ctx, body) || !legacy)) return serveModern(ctx, options, binding, body);
    if (!legacy) {
      ctx.set('allow', 'POST');
      return refuse(ctx, 405, -32000, `${ctx.method} without an Mcp-Session-Id: 2026-07-28 has no GET stream and no session to delete`, null);
    }
    return serveLegacy(ctx, options, binding, body);
  };
  return middleware;
}
