/**
 * `/mcp` in MCP 2025-11-25 (Streamable HTTP with sessions), served by any gateway process: the
 * session is a row in the database (`sessions.ts`), not a transport in one process's memory, so
 * each request gets a fresh SDK server and transport wherever the balancer sends it.
 *
 * - `initialize` (no `Mcp-Session-Id`): the SDK answers it; the session id it hands out and the
 *   client's declared capabilities are stored.
 * - A later POST of the session: served statelessly by the SDK under the session's row. A call
 *   held for approval asks the human with an elicitation related to the `tools/call` (so it
 *   travels on that call's own SSE response stream: a client needs no GET stream). The client's
 *   answer is a POST the balancer may give to any process: it is kept in `mcp_answers`, and the
 *   process that asked polls for it every {@link ANSWER_POLL_MS} while it waits.
 * - GET: 405 (the server sends nothing outside a request's own stream, which the revision allows);
 *   DELETE ends the session.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type Koa from 'koa';
import type { Logger } from 'pino';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ElicitResultSchema, isJSONRPCRequest, JSONRPCMessageSchema, SUPPORTED_PROTOCOL_VERSIONS, type ClientCapabilities, type ElicitResult, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { applyAnswer, buildServer, type McpSessionBinding, type ToolDeps, type ToolScope } from './tools.ts';
import { claimAnswers, closeSession, depositAnswer, MAX_SESSIONS, MAX_WAITING_ANSWERS, openSession, touchSession } from './sessions.ts';
import { refuse, requestIdOf } from './rpc.ts';

/** How often a process waiting for a client's answer looks for it in the database. */
export const ANSWER_POLL_MS = 100;

/** How long a held call waits for the human's answer to its elicitation before it stays pending. */
export const ELICIT_TIMEOUT_MS = 60_000;

/** What a 2025-11-25 request needs besides the tools' own dependencies. */
export interface LegacyDeps extends ToolDeps {
  logger: Logger;
}

/** Serves one HTTP request of MCP 2025-11-25 at `/mcp`; `body` is the parsed POST body. */
export async function serveLegacy(ctx: Koa.Context, deps: LegacyDeps, binding: McpSessionBinding, body: unknown): Promise<void> {
  const sessionId = ctx.get('mcp-session-id');
  const id = requestIdOf(body);
  const refusal = ctx.method === 'POST' ? checkPost(ctx, body, sessionId !== '') : undefined;
  if (refusal) return refuse(ctx, refusal.status, refusal.code, refusal.message, id);
  if (!sessionId) return initialize(ctx, deps, binding, body);
  const session = await touchSession(deps.db, sessionId, binding.owner);
  if (!session) return refuse(ctx, 404, -32001, `no MCP session ${sessionId.slice(0, 80)}: initialize again`, id);
  if (ctx.method === 'GET') {
    ctx.set('allow', 'POST, DELETE');
    return refuse(ctx, 405, -32000, 'this server sends every message on the response stream of the request it belongs to: no GET stream', id);
  }
  if (ctx.method === 'DELETE') {
    await closeSession(deps.db, sessionId);
    ctx.status = 200;
    ctx.body = '';
    return;
  }
  const messages = (Array.isArray(body) ? body : [body]) as JSONRPCMessage[];
  if (!messages.some(isJSONRPCRequest)) return keepAnswers(ctx, deps, sessionId, messages);
  await serveStatelessly(ctx, deps, binding, session.client_capabilities, sessionId, body);
}

/**
 * The refusals the SDK transport would answer with `"id": null`, made here first so that they
 * carry the request's id: the Accept and Content-Type headers of 2025-11-25 Streamable HTTP, a
 * body that is not JSON-RPC, and (after `initialize`) a protocol version the SDK does not speak.
 */
function checkPost(ctx: Koa.Context, body: unknown, inSession: boolean): { status: number; code: number; message: string } | undefined {
  const accept = ctx.get('accept');
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return { status: 406, code: -32000, message: 'Not Acceptable: accept both application/json and text/event-stream' };
  if (!ctx.is('application/json')) return { status: 415, code: -32000, message: 'Unsupported Media Type: Content-Type must be application/json' };
  const messages = Array.isArray(body) ? body : [body];
  if (messages.length === 0 || !messages.every((message) => JSONRPCMessageSchema.safeParse(message).success)) return { status: 400, code: -32600, message: 'Invalid Request: the body is not a JSON-RPC message' };
  const version = ctx.get('mcp-protocol-version');
  if (inSession && version !== '' && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return { status: 400, code: -32000, message: `Bad Request: unsupported protocol version ${version.slice(0, 40)} (supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})` };
  return undefined;
}

/** Opens a session: the SDK answers `initialize` under a session id we mint and store first (refused beyond {@link MAX_SESSIONS}). */
async function initialize(ctx: Koa.Context, deps: LegacyDeps, binding: McpSessionBinding, body: unknown): Promise<void> {
  const id = requestIdOf(body);
  if (ctx.method !== 'POST' || (body as { method?: unknown } | null)?.method !== 'initialize') return refuse(ctx, 400, -32000, 'start with an initialize request, or send a 2026-07-28 request with its _meta', id);
  const sessionId = randomUUID();
  const declared = (body as { params?: { capabilities?: unknown } }).params?.capabilities;
  const client_capabilities = declared !== null && typeof declared === 'object' && !Array.isArray(declared) ? (declared as ClientCapabilities) : {};
  if (!(await openSession(deps.db, { id: sessionId, owner: binding.owner, client_capabilities }))) return refuse(ctx, 503, -32000, `${MAX_SESSIONS} MCP sessions are open: try again shortly`, id);
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => sessionId });
  await handle(ctx, transport, buildServer(deps, { mandate: binding.mandate }), body);
}

/** Keeps the client's answers (JSON-RPC responses) for the process that asked; notifications need nothing. 202, or 429 past {@link MAX_WAITING_ANSWERS}. */
async function keepAnswers(ctx: Koa.Context, deps: LegacyDeps, sessionId: string, messages: JSONRPCMessage[]): Promise<void> {
  for (const message of messages) {
    if (!('id' in message) || typeof message.id !== 'string') continue; // a notification, or an answer to nothing this server asked
    if (!(await depositAnswer(deps.db, sessionId, message.id, message))) return refuse(ctx, 429, -32000, `${MAX_WAITING_ANSWERS} answers of this session wait to be read: try again shortly`, message.id);
  }
  ctx.status = 202;
  ctx.body = '';
}

/**
 * Serves a request of session `sessionId` with a fresh SDK server and a transport without a
 * session of its own. A held call is put to the human when the binding may ask and the client
 * declared elicitation at `initialize`.
 */
async function serveStatelessly(ctx: Koa.Context, deps: LegacyDeps, binding: McpSessionBinding, capabilities: ClientCapabilities, sessionId: string, body: unknown): Promise<void> {
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  // Requests this server sends the client (elicitations), by the id they travel under: unique
  // over every process, so an answer in the database finds the one request it answers.
  const asked = new Map<string, string | number>();
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    if (!isJSONRPCRequest(message)) return send(message, options);
    const wire = randomUUID();
    asked.set(wire, message.id);
    return send({ ...message, id: wire }, options);
  };
  const scope: ToolScope = { mandate: binding.mandate };
  const server = buildServer(deps, scope);
  if (binding.elicit && capabilities.elicitation) {
    scope.ask = async (held, question, request) => {
      let answer: ElicitResult | undefined;
      let waiting = true;
      const pump = (async () => {
        while (waiting) {
          await sleep(ANSWER_POLL_MS);
          try {
            for (const message of (await claimAnswers(deps.db, sessionId, [...asked.keys()])) as Array<JSONRPCMessage & { id: string }>) {
              const original = asked.get(message.id)!;
              asked.delete(message.id);
              transport.onmessage?.({ ...message, id: original });
            }
          } catch (error) {
            deps.logger.warn({ err: error, session: sessionId }, 'reading an MCP answer failed; trying again');
          }
        }
      })();
      try {
        answer = await server.server.request({ method: 'elicitation/create', params: question }, ElicitResultSchema, { relatedRequestId: request.requestId, signal: request.signal, timeout: ELICIT_TIMEOUT_MS });
      } catch (error) {
        deps.logger.warn({ err: error, approval: held.approval!.id }, 'elicitation failed; the approval stays pending');
      } finally {
        waiting = false;
        await pump;
      }
      return applyAnswer(deps, held.approval!, held, answer);
    };
  }
  await handle(ctx, transport, server, body);
}

/** Hands the request to the SDK; the server and transport end with the response. */
async function handle(ctx: Koa.Context, transport: StreamableHTTPServerTransport, server: ReturnType<typeof buildServer>, body: unknown): Promise<void> {
  ctx.res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  ctx.respond = false;
  await transport.handleRequest(ctx.req, ctx.res, body);
}
