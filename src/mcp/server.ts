/**
 * The gateway's own MCP server at `/mcp` (gateway §7 "Connecting Claude Code", "Limits"):
 * Streamable HTTP, stateful (a session per client, so elicitation answers reach the server that
 * asked), every call made under one mandate. Tools: search agents, call an agent or a
 * capability, read receipts, list approvals. A call held for approval asks the human through
 * elicitation when the client supports it; otherwise, or when the human dismisses the form
 * (`cancel`) or the elicitation fails, it stays `pending_approval`; only a `decline` (or an
 * accepted form saying no) rejects it.
 *
 * Another agent's output and every author-written text reach the client with `<` escaped (as
 * `&lt;`), in the structured content and the text block alike, so no text can close the wrapper
 * a client puts around a tool result.
 */
import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { GatewayErrorCode } from '../../generated/gateway/server.ts';
import { rootMandateOf } from '../contracts/mandate.ts';
import { APPROVAL_PAGE, approvalView, pendingApprovals } from '../gateway/approvals.ts';
import { searchAgents } from '../gateway/catalogue.ts';
import { closeExpiredApprovals, decideApproval } from '../gateway/decisions.ts';
import type { CallResult, Gateway } from '../gateway/lifecycle.ts';
import { loadMandate } from '../gateway/mandates.ts';
import { listReceiptTrees, readReceipt, treeOf } from '../gateway/receipts.ts';
import { callAgentOutput, listApprovalsOutput, readReceiptsOutput, searchAgentsOutput } from './schemas.ts';
import type { Registry } from '../gateway/registry.ts';

/** What the MCP server needs. */
export interface McpOptions {
  db: Knex;
  gateway: Gateway;
  registry: Registry;
  /** The mandate every call runs under (until hosted keys carry one): `HOLON_MCP_MANDATE`, default `dev/sandbox`. */
  mandate: string;
  logger: Logger;
  /**
   * Hosted (gateway §7 "/mcp under keys"): binds each session to the request that opens it (the
   * agent key's mandate, whether it may ask in the client, and an owner id); a later request of
   * the session from another owner is answered as an unknown session. Absent: every session runs
   * under `mandate` and may ask.
   */
  session?: (ctx: Koa.Context) => McpSessionBinding;
}

/** What a session runs under (see {@link McpOptions.session}). */
export interface McpSessionBinding {
  mandate: string;
  /** Whether a held call may be approved through elicitation (`ask_in_client`). */
  elicit: boolean;
  /** Who opened the session, e.g. the key's prefix. */
  owner: string;
}

/** Replaces `<` with `&lt;` in every string of a JSON value. */
export function escapeAngles(value: unknown): unknown {
  if (typeof value === 'string') return value.replaceAll('<', '&lt;');
  if (Array.isArray(value)) return value.map(escapeAngles);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, escapeAngles(v)]));
  return value;
}

/** A tool result carrying `content` as structured content and as one JSON text block, escaped. */
function result(content: Record<string, unknown>, isError = false): CallToolResult {
  const escaped = escapeAngles(content) as Record<string, unknown>;
  return { structuredContent: escaped, content: [{ type: 'text', text: JSON.stringify(escaped) }], isError };
}

/** A call's result as a tool result: `status`, then `output` or `error`, the approval if held, and the receipt tree. */
async function callResult(gateway: Gateway, call: CallResult): Promise<CallToolResult> {
  const receipt = await gateway.tree(call.receipt);
  const currency = call.receipt.currency;
  return result(
    {
      status: call.receipt.status,
      ...(call.http === 200 ? { output: call.output } : {}),
      ...(call.error ? { error: call.error } : {}),
      ...(call.approval ? { approval: approvalView(call.approval, currency) } : {}),
      receipt,
    },
    call.http !== 200 && call.http !== 202,
  );
}

/** One MCP server per session, with the gateway's tools registered; `elicit: false` leaves held calls pending. */
function buildServer(options: McpOptions & { elicit?: boolean }): McpServer {
  const { db, gateway, registry } = options;
  const server = new McpServer({ name: 'holon-gateway', version: '0.1.0' });

  server.registerTool(
    'search_agents',
    {
      description: 'Search the agents this gateway lists, ranked by cost per successful run, priced and admitted under the session mandate.',
      inputSchema: { q: z.string().optional().describe('words to match'), capability: z.string().optional().describe('a capability class, e.g. extraction.table') },
      outputSchema: searchAgentsOutput,
    },
    async ({ q, capability }) => {
      const mandate = await loadMandate(db, options.mandate);
      return result({ mandate: options.mandate, agents: searchAgents(registry, await gateway.measured(), mandate, { q, capability }) });
    },
  );

  server.registerTool(
    'call_agent',
    {
      description:
        'Call an agent (ns/name[@range]) or the best implementer of a capability under the session mandate. Answers the output and the receipt; a call that needs approval asks you, or stays pending_approval.',
      inputSchema: {
        agent: z.string().optional().describe('ns/name or ns/name@range'),
        capability: z.string().optional().describe('a capability class, instead of agent'),
        input: z.unknown().describe("the agent's input"),
        max_cost: z.string().optional().describe("a ceiling in the mandate's currency, e.g. \"0.20\""),
      },
      outputSchema: callAgentOutput,
    },
    async ({ agent, capability, input, max_cost }) => {
      const call = await gateway.call({ mandate: options.mandate, input, ...(agent === undefined ? {} : { agent }), ...(capability === undefined ? {} : { capability }), ...(max_cost === undefined ? {} : { max_cost }) });
      if (call.http !== 202 || options.elicit === false || !server.server.getClientCapabilities()?.elicitation) return callResult(gateway, call);
      return callResult(gateway, await askHuman(server, options, call));
    },
  );

  server.registerTool(
    'read_receipts',
    {
      description: 'Read one receipt tree by id, or the newest receipt trees under the session mandate.',
      inputSchema: { id: z.string().optional().describe('a receipt id such as r4'), limit: z.number().int().min(1).max(100).optional() },
      outputSchema: readReceiptsOutput,
    },
    async ({ id, limit }) => {
      if (id === undefined) return result({ receipts: (await listReceiptTrees(db, { mandate: options.mandate, limit: limit ?? 10 })).receipts });
      const receipt = await readReceipt(db, id);
      if (!receipt || rootMandateOf(receipt.mandate) !== options.mandate) return result({ error: { code: 'no_such_receipt' satisfies GatewayErrorCode, message: `there is no receipt ${id} under ${options.mandate}` } }, true);
      return result({ receipt: await treeOf(db, receipt) });
    },
  );

  server.registerTool(
    'list_approvals',
    {
      description: `List the calls under the session mandate that wait for a human decision, newest first (at most limit, default ${APPROVAL_PAGE.default}).`,
      inputSchema: { limit: z.number().int().min(1).max(APPROVAL_PAGE.max).optional() },
      outputSchema: listApprovalsOutput,
    },
    async ({ limit }) => {
      await closeExpiredApprovals(db);
      const approvals = await pendingApprovals(db, { roots: [options.mandate] }, limit ?? APPROVAL_PAGE.default);
      return result({ approvals: approvals.map((row) => approvalView(row, 'EUR')) });
    },
  );
  return server;
}

/**
 * Asks the human at the client to approve a held call (MCP elicitation). Accepted with
 * `approve: true`: the call runs. `decline`, or accepted with `approve: false`: the human said no,
 * the call is rejected. `cancel` (the human dismissed the form without choosing) or a failed
 * elicitation: nobody decided, so the approval stays pending for the human to decide later
 * (`list_approvals`, `POST /v0/approvals/{id}`) until it expires.
 */
async function askHuman(server: McpServer, options: McpOptions, held: CallResult): Promise<CallResult> {
  const approval = held.approval!;
  let answer;
  try {
    answer = await server.server.elicitInput({
      mode: 'form',
      message: escapeAngles(`Approve ${approval.agent} under ${approval.mandate}? Worst case ${approvalView(approval, held.receipt.currency).worst_case} ${held.receipt.currency}. ${approval.reason}.`) as string,
      requestedSchema: { type: 'object', properties: { approve: { type: 'boolean', title: 'Approve this call', description: 'Run it and pay for it' } }, required: ['approve'] },
    });
  } catch (error) {
    options.logger.warn({ err: error, approval: approval.id }, 'elicitation failed; the approval stays pending');
    return held;
  }
  if (answer.action === 'cancel') return held;
  const approve = answer.action === 'accept' && answer.content?.approve === true;
  const decided = await decideApproval(options.db, options.gateway, approval.id, approve ? 'approve' : 'reject');
  if ('run' in decided) return decided.run;
  const receipt = (await readReceipt(options.db, held.receipt.id))!;
  return { http: 403, receipt, error: receipt.error!, total_micros: 0 };
}

/** At most this many MCP sessions at once; a new client beyond it is asked to retry. */
export const MAX_SESSIONS = 256;

/** A session without a request for this long is closed (the client initializes again). */
export const SESSION_IDLE_MS = 30 * 60_000;

/**
 * Koa middleware serving `/mcp` (any method), one stateful transport per session, bounded by
 * {@link MAX_SESSIONS} and {@link SESSION_IDLE_MS}; other paths pass through. `close()` ends
 * every session and the idle sweep; `sessions_open()` counts the sessions open (`holon_mcp_sessions_open`).
 */
export function mcpMiddleware(options: McpOptions): Koa.Middleware & { close(): Promise<void>; sessions_open(): number } {
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; seen_ms: number; owner: string }>();
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const session of sessions.values()) if (now - session.seen_ms > SESSION_IDLE_MS) void session.transport.close();
  }, 60_000);
  sweep.unref();
  const refuse = (ctx: Koa.Context, status: number, message: string) => {
    ctx.status = status;
    ctx.body = { jsonrpc: '2.0', error: { code: -32000, message }, id: null };
  };
  const middleware = async (ctx: Koa.Context, next: Koa.Next) => {
    if (ctx.path !== '/mcp') return next();
    const sessionId = ctx.get('mcp-session-id');
    const binding = options.session?.(ctx) ?? { mandate: options.mandate, elicit: true, owner: '' };
    const found = sessionId ? sessions.get(sessionId) : undefined;
    const session = found?.owner === binding.owner ? found : undefined;
    let transport = session?.transport;
    if (session) session.seen_ms = Date.now();
    if (!transport) {
      if (sessionId) return refuse(ctx, 404, `no MCP session ${sessionId}: initialize again`);
      if (ctx.method !== 'POST') return refuse(ctx, 400, 'start with an initialize request');
      if (sessions.size >= MAX_SESSIONS) return refuse(ctx, 503, `${MAX_SESSIONS} MCP sessions are open: try again shortly`);
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, { transport: created, seen_ms: Date.now(), owner: binding.owner }),
      });
      created.onclose = () => {
        if (created.sessionId) sessions.delete(created.sessionId);
      };
      await buildServer({ ...options, mandate: binding.mandate, elicit: binding.elicit }).connect(created);
      transport = created;
    }
    ctx.respond = false;
    await transport.handleRequest(ctx.req, ctx.res);
  };
  return Object.assign(middleware, {
    sessions_open: () => sessions.size,
    async close() {
      clearInterval(sweep);
      await Promise.all([...sessions.values()].map((session) => session.transport.close()));
    },
  });
}
