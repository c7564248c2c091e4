/**
 * The tools of the gateway's MCP server at `/mcp` (gateway §7 "Connecting Claude Code"), the same
 * under both MCP revisions it speaks: search agents, call an agent or a capability, read
 * receipts, list approvals, every call made under the request's mandate. How a call held for
 * approval reaches the human differs by revision and is the {@link ToolScope}'s: an elicitation
 * on the call's own response stream (2025-11-25, `legacy.ts`) or an input request answered on a
 * retry (2026-07-28, `modern.ts`). Without a way to ask, a held call stays `pending_approval`.
 *
 * Another agent's output and every author-written text reach the client with `<` escaped (as
 * `&lt;`), in the structured content and the text block alike, so no text can close the wrapper
 * a client puts around a tool result.
 */
import type { Knex } from 'knex';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ElicitRequestFormParams, ElicitResult, RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { GatewayErrorCode } from '../../generated/gateway/server.ts';
import { rootMandateOf } from '../contracts/mandate.ts';
import { APPROVAL_PAGE, approvalView, pendingApprovals, type ApprovalRow } from '../gateway/approvals.ts';
import { searchAgents } from '../gateway/catalogue.ts';
import { closeExpiredApprovals, decideApproval } from '../gateway/decisions.ts';
import type { CallResult, Gateway } from '../gateway/lifecycle.ts';
import { loadMandate } from '../gateway/mandates.ts';
import { listReceiptTrees, readReceipt } from '../gateway/receipts.ts';
import type { Registry } from '../gateway/registry.ts';
import { callAgentOutput, listApprovalsOutput, readReceiptsOutput, searchAgentsOutput } from './schemas.ts';

/** The server's name and version, as `initialize` and `server/discover` report them. */
export const SERVER_INFO = { name: 'holon-gateway', version: '0.1.0' } as const;

/**
 * What a request to `/mcp` runs under. Dev: `HOLON_MCP_MANDATE`, may ask. Hosted (gateway §7
 * "/mcp under keys"): the agent key's mandate, whether it may ask in the client
 * (`ask_in_client`), and an owner id (the key's prefix) that a 2025-11-25 session is bound to.
 */
export interface McpSessionBinding {
  mandate: string;
  /** Whether a held call may be approved in the client (elicitation, or a 2026-07-28 input request). */
  elicit: boolean;
  /** Who sends the request, e.g. the key's prefix. */
  owner: string;
}

/** What the tools read and run. */
export interface ToolDeps {
  db: Knex;
  gateway: Gateway;
  registry: Registry;
}

/** What `call_agent` answers instead of a tool result when it needs the human first (2026-07-28 input request). */
export interface InputRequired {
  input_required: { inputRequests: Record<string, { method: 'elicitation/create'; params: ElicitRequestFormParams }>; requestState: string };
}

/** The request one server answers, as the revision it arrived in sets it up. */
export interface ToolScope {
  /** The mandate every call runs under. */
  mandate: string;
  /**
   * The held call this request continues, if it continues one (2026-07-28: the retry carrying
   * the `requestState` of an input request): its result once the human's answer is applied.
   */
  resume?: () => Promise<CallResult | InputRequired>;
  /** Puts a held call to the human, from the handler of request `request` (its id and abort signal); absent: a held call stays `pending_approval`. */
  ask?: (held: CallResult, question: ElicitRequestFormParams, request: { requestId: RequestId; signal: AbortSignal }) => Promise<CallResult | InputRequired>;
  /** Where `call_agent` leaves an input request; the revision's handler answers it instead of the tool result. */
  interim?: InputRequired['input_required'];
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

/**
 * An MCP server with the gateway's four tools registered, answering one request (or one
 * 2025-11-25 `initialize`) under `scope`.
 */
export function buildServer(deps: ToolDeps, scope: ToolScope): McpServer {
  const { db, gateway, registry } = deps;
  const server = new McpServer(SERVER_INFO);

  server.registerTool(
    'search_agents',
    {
      description: 'Search the agents this gateway lists, ranked by cost per successful run, priced and admitted under the session mandate.',
      inputSchema: { q: z.string().optional().describe('words to match'), capability: z.string().optional().describe('a capability class, e.g. extraction.table') },
      outputSchema: searchAgentsOutput,
    },
    async ({ q, capability }) => {
      const mandate = await loadMandate(db, scope.mandate);
      return result({ mandate: scope.mandate, agents: searchAgents(registry, await gateway.measured(), mandate, { q, capability }) });
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
    async ({ agent, capability, input, max_cost }, extra) => {
      const answer = scope.resume
        ? await scope.resume()
        : await gateway.call({ mandate: scope.mandate, input, ...(agent === undefined ? {} : { agent }), ...(capability === undefined ? {} : { capability }), ...(max_cost === undefined ? {} : { max_cost }) });
      const settled = 'input_required' in answer || answer.http !== 202 || !scope.ask ? answer : await scope.ask(answer, approvalQuestion(answer), extra);
      if (!('input_required' in settled)) return callResult(gateway, settled);
      // An input request is not a tool result: the revision's handler answers it (this placeholder is never sent).
      scope.interim = settled.input_required;
      return { content: [], isError: true };
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
      if (id === undefined) return result({ receipts: await gateway.signed((await listReceiptTrees(db, { mandate: scope.mandate, limit: limit ?? 10 })).receipts) });
      const receipt = await readReceipt(db, id);
      if (!receipt || rootMandateOf(receipt.mandate) !== scope.mandate) return result({ error: { code: 'no_such_receipt' satisfies GatewayErrorCode, message: `there is no receipt ${id} under ${scope.mandate}` } }, true);
      return result({ receipt: await gateway.tree(receipt) });
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
      const approvals = await pendingApprovals(db, { roots: [scope.mandate] }, limit ?? APPROVAL_PAGE.default);
      return result({ approvals: approvals.map((row) => approvalView(row, 'EUR')) });
    },
  );
  return server;
}

/** The form that asks the human to approve held call `held` (its message escaped like every author-written text). */
export function approvalQuestion(held: CallResult): ElicitRequestFormParams {
  const approval = held.approval!;
  return {
    mode: 'form',
    message: escapeAngles(`Approve ${approval.agent} under ${approval.mandate}? Worst case ${approvalView(approval, held.receipt.currency).worst_case} ${held.receipt.currency}. ${approval.reason}.`) as string,
    requestedSchema: { type: 'object', properties: { approve: { type: 'boolean', title: 'Approve this call', description: 'Run it and pay for it' } }, required: ['approve'] },
  };
}

/**
 * Applies the human's answer to the form of {@link approvalQuestion} to held approval
 * `approval`. Accepted with `approve: true`: the call runs. `decline`, or accepted with
 * `approve: false`: the human said no, the call is rejected. `cancel` (the human dismissed the
 * form without choosing), no answer, or an answer of another shape: nobody decided, so the
 * approval stays pending for the human to decide later (`list_approvals`,
 * `POST /v0/approvals/{id}`) until it expires; `held` is answered again.
 */
export async function applyAnswer(deps: ToolDeps, approval: ApprovalRow, held: CallResult, answer: ElicitResult | undefined): Promise<CallResult> {
  if (!answer || answer.action === 'cancel') return held;
  if (answer.action === 'accept' && typeof answer.content?.approve !== 'boolean') return held;
  const approve = answer.action === 'accept' && answer.content?.approve === true;
  const decided = await decideApproval(deps.db, deps.gateway, approval.id, approve ? 'approve' : 'reject');
  if ('run' in decided) return decided.run;
  const receipt = (await readReceipt(deps.db, held.receipt.id))!;
  return { http: 403, receipt, error: receipt.error!, total_micros: 0 };
}
