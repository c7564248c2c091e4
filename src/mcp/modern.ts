/**
 * `/mcp` in MCP 2026-07-28 (stateless): no `initialize`, no session; each POST carries one
 * request whose `_meta` names its protocol version and the client's capabilities, and any
 * gateway process answers it alone. Written from the revision's text (the SDK of the toolchain,
 * 1.32, speaks up to 2025-11-25): basic §`_meta`, versioning, `server/discover`, Streamable
 * HTTP "Request Metadata" and "Server Validation", and Multi Round-Trip Requests (MRTR). The
 * tools themselves are the SDK server's of `tools.ts`, driven in process for one request.
 *
 * The steps of a request, in order (the first that refuses answers, with the request's `id`):
 * 1. `shape`: one JSON-RPC request (a notification is accepted, 202, and ignored);
 * 2. `meta`: `_meta` carries `io.modelcontextprotocol/protocolVersion` and `.../clientCapabilities`
 *    (else -32602, 400);
 * 3. `version`: a version this server speaks (else -32022 UnsupportedProtocolVersion, 400, with
 *    the supported list);
 * 4. `headers`: `MCP-Protocol-Version`, `Mcp-Method` and, for `tools/call`, `Mcp-Name` equal the
 *    body's values (else -32020 HeaderMismatch, 400);
 * 5. `dispatch`: `server/discover`, `tools/list`, `tools/call` (else -32601, 404).
 *
 * An approval (gateway §1 "Admit") travels as an input request: a held `tools/call` is answered
 * `resultType: "input_required"` with one `elicitation/create` form (`approve`) and a
 * `requestState` naming the approval; the client retries the same call with `inputResponses`
 * and that state, and whichever process gets the retry decides the approval (a row in the
 * database) and runs the call. The state is not signed: on the retry the server checks that the
 * approval is under the request's mandate, that the request may approve in the client, and that
 * the retried input is the held one (its SHA-256), so a forged state can do nothing the caller
 * could not do by answering its own form, and approving twice runs nothing twice (an approval is
 * decided once).
 */
import type Koa from 'koa';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { ElicitResult, JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { inputHash, readApproval, type ApprovalRow } from '../gateway/approvals.ts';
import type { CallResult } from '../gateway/lifecycle.ts';
import { readReceipt } from '../gateway/receipts.ts';
import { refuse, requestIdOf } from './rpc.ts';
import { applyAnswer, approvalQuestion, buildServer, SERVER_INFO, type InputRequired, type McpSessionBinding, type ToolDeps, type ToolScope } from './tools.ts';

/** The stateless revision this server speaks. */
export const MODERN_VERSION = '2026-07-28';

/** Every revision `/mcp` speaks, newest first (`server/discover`, UnsupportedProtocolVersion). */
export const SUPPORTED_VERSIONS = [MODERN_VERSION, '2025-11-25'] as const;

/** How long a client may cache `tools/list` and `server/discover` (`ttlMs`): the tools change only with a new release. */
export const LIST_TTL_MS = 300_000;

/** The key of the one input request of a held call. */
const APPROVE = 'approve';

const META = { version: 'io.modelcontextprotocol/protocolVersion', capabilities: 'io.modelcontextprotocol/clientCapabilities', serverInfo: 'io.modelcontextprotocol/serverInfo' } as const;

/** Error codes of MCP 2026-07-28 (basic §Error Codes) and JSON-RPC. */
const CODE = { invalidRequest: -32600, methodNotFound: -32601, invalidParams: -32602, headerMismatch: -32020, unsupportedVersion: -32022 } as const;

type Params = Record<string, unknown> & { _meta?: Record<string, unknown> };
type Refusal = { status: number; code: number; message: string; data?: unknown };

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** Whether a POST body is a 2026-07-28 request: its `_meta` names a protocol version, or its header names this revision. */
export function isModern(ctx: Koa.Context, body: unknown): boolean {
  if (ctx.get('mcp-protocol-version') === MODERN_VERSION) return true;
  const params = isObject(body) ? body.params : undefined;
  return isObject(params) && isObject(params._meta) && META.version in params._meta;
}

/** Serves one 2026-07-28 request at `/mcp` (see the module comment for its steps). */
export async function serveModern(ctx: Koa.Context, deps: ToolDeps, binding: McpSessionBinding, body: unknown): Promise<void> {
  const id = requestIdOf(body);
  if (!isObject(body) || body.jsonrpc !== '2.0' || typeof body.method !== 'string') return refuse(ctx, 400, CODE.invalidRequest, 'send one JSON-RPC 2.0 request per POST', id);
  if (!('id' in body)) {
    ctx.status = 202; // a notification: 2026-07-28 defines none over Streamable HTTP; nothing to do
    ctx.body = '';
    return;
  }
  if (id === null) return refuse(ctx, 400, CODE.invalidRequest, 'a request id is a string or an integer', null);
  const params: Params = isObject(body.params) ? (body.params as Params) : {};
  const refusal = checkMeta(params) ?? checkHeaders(ctx, body.method, params);
  if (refusal) return refuse(ctx, refusal.status, refusal.code, refusal.message, id, refusal.data);
  const answer = await dispatch(deps, binding, id, body.method, params);
  if ('refused' in answer) return refuse(ctx, answer.refused.status, answer.refused.code, answer.refused.message, id, answer.refused.data);
  ctx.status = 200;
  ctx.body = { jsonrpc: '2.0', id, result: { ...answer.result, _meta: { ...(answer.result._meta as object | undefined), [META.serverInfo]: SERVER_INFO } } };
}

/** Step `meta` and `version`: the per-request protocol fields. */
function checkMeta(params: Params): Refusal | undefined {
  const meta = params._meta;
  if (!isObject(meta) || typeof meta[META.version] !== 'string' || !isObject(meta[META.capabilities]))
    return { status: 400, code: CODE.invalidParams, message: `_meta must carry ${META.version} (a string) and ${META.capabilities} (an object) on every request` };
  const requested = meta[META.version] as string;
  if (requested !== MODERN_VERSION) return { status: 400, code: CODE.unsupportedVersion, message: `Unsupported protocol version ${requested.slice(0, 40)}: this server speaks ${SUPPORTED_VERSIONS.join(', ')}`, data: { supported: SUPPORTED_VERSIONS, requested } };
  return undefined;
}

/** Decodes a header value in the Base64 sentinel form (`=?base64?...?=`), else returns it as sent. */
function decodeHeader(value: string): string {
  const sentinel = /^=\?base64\?([A-Za-z0-9+/=]*)\?=$/.exec(value);
  return sentinel ? Buffer.from(sentinel[1]!, 'base64').toString('utf8') : value;
}

/** Step `headers`: the mirrored headers equal the body (Streamable HTTP "Server Validation"). */
function checkHeaders(ctx: Koa.Context, method: string, params: Params): Refusal | undefined {
  const mismatch = (message: string): Refusal => ({ status: 400, code: CODE.headerMismatch, message: `Header mismatch: ${message}` });
  const version = ctx.get('mcp-protocol-version');
  if (version !== params._meta![META.version]) return mismatch(`MCP-Protocol-Version header ${JSON.stringify(version.slice(0, 40))} is not the _meta protocol version ${MODERN_VERSION}`);
  const header = ctx.get('mcp-method');
  if (header !== method) return mismatch(`Mcp-Method header ${JSON.stringify(header.slice(0, 80))} is not the body's method ${JSON.stringify(method.slice(0, 80))}`);
  if (method === 'tools/call') {
    const name = decodeHeader(ctx.get('mcp-name'));
    if (name !== params.name) return mismatch(`Mcp-Name header ${JSON.stringify(name.slice(0, 80))} is not the body's tool name`);
  }
  return undefined;
}

/** Step `dispatch`: the result of a request, or why it is refused. */
async function dispatch(deps: ToolDeps, binding: McpSessionBinding, id: RequestId, method: string, params: Params): Promise<{ result: Record<string, unknown> } | { refused: Refusal }> {
  if (method === 'server/discover') {
    return { result: { resultType: 'complete', supportedVersions: SUPPORTED_VERSIONS, capabilities: { tools: {} }, ttlMs: LIST_TTL_MS, cacheScope: 'public' } };
  }
  if (method === 'tools/list') {
    const answer = await runSdk(deps, { mandate: binding.mandate }, { jsonrpc: '2.0', id, method, params: {} });
    return 'result' in answer ? { result: { ...answer.result, resultType: 'complete', ttlMs: LIST_TTL_MS, cacheScope: 'public' } } : { refused: { status: 400, ...answer.error } };
  }
  if (method === 'tools/call') {
    const scope = await scopeOfCall(deps, binding, params);
    if ('refused' in scope) return scope;
    const answer = await runSdk(deps, scope, { jsonrpc: '2.0', id, method, params: { name: params.name, arguments: params.arguments, ...(params._meta ? { _meta: params._meta } : {}) } });
    if (scope.interim) return { result: { resultType: 'input_required', ...scope.interim } };
    return 'result' in answer ? { result: { ...answer.result, resultType: 'complete' } } : { refused: { status: 400, ...answer.error } };
  }
  return { refused: { status: 404, code: CODE.methodNotFound, message: `Method not found: ${method.slice(0, 80)} (this server answers server/discover, tools/list and tools/call)` } };
}

/** The `requestState` of a held call: the approval's id, base64url JSON. */
function stateOf(approval: ApprovalRow): string {
  return Buffer.from(JSON.stringify({ approval: approval.id })).toString('base64url');
}

/**
 * The scope of a `tools/call`: a first call may be held and asked as an input request (when the
 * binding may ask and this request's client declares elicitation); a retry carrying a
 * `requestState` continues the held call it names, once the checks of the module comment pass.
 */
async function scopeOfCall(deps: ToolDeps, binding: McpSessionBinding, params: Params): Promise<ToolScope | { refused: Refusal }> {
  const capabilities = params._meta![META.capabilities] as { elicitation?: unknown };
  const scope: ToolScope = { mandate: binding.mandate };
  const canAsk = binding.elicit && isObject(capabilities.elicitation);
  const ask = (held: CallResult): InputRequired => ({ input_required: { inputRequests: { [APPROVE]: { method: 'elicitation/create', params: approvalQuestion(held) } }, requestState: stateOf(held.approval!) } });
  if (canAsk) scope.ask = async (held) => ask(held);
  if (params.requestState === undefined) return scope;
  const invalid = (message: string) => ({ refused: { status: 400, code: CODE.invalidParams, message } });
  if (typeof params.requestState !== 'string' || params.requestState.length > 512) return invalid('requestState is not one this server issued');
  let named: unknown;
  try {
    named = JSON.parse(Buffer.from(params.requestState, 'base64url').toString('utf8'));
  } catch {
    return invalid('requestState is not one this server issued');
  }
  const approvalId = isObject(named) && typeof named.approval === 'string' ? named.approval : null;
  const approval = approvalId && canAsk ? await readApproval(deps.db, approvalId, { roots: [binding.mandate] }) : null;
  if (!approval) return invalid(`requestState names no approval this request may answer under ${binding.mandate}`);
  const input = isObject(params.arguments) ? params.arguments.input : undefined;
  if (inputHash(input) !== approval.input_sha256) return invalid(`requestState is for approval ${approval.id}, whose input is not this call's: retry the call it was issued for`);
  const responses = isObject(params.inputResponses) ? params.inputResponses : {};
  scope.resume = async () => {
    const held = { ...(await heldNow(deps, approval.receipt)), approval };
    if (approval.status !== 'pending') return held;
    // No answer to the form: ask again (MRTR "Error Handling").
    if (!isObject(responses[APPROVE])) return ask(held);
    return applyAnswer(deps, approval, held, responses[APPROVE] as ElicitResult);
  };
  return scope;
}

/** Call `receipt` as it stands now: held (202), or how it ended. */
async function heldNow(deps: ToolDeps, id: string): Promise<CallResult> {
  const receipt = (await readReceipt(deps.db, id))!;
  const http = receipt.status === 'pending_approval' || receipt.status === 'running' ? 202 : receipt.status === 'succeeded' ? 200 : 403;
  return { http, receipt, ...(receipt.error ? { error: receipt.error } : {}), total_micros: 0 };
}

/** A one-request transport: hands one message to the SDK server and resolves with its answer. */
class OneRequest implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private settle!: (message: JSONRPCMessage) => void;
  readonly answered = new Promise<JSONRPCMessage>((resolve) => (this.settle = resolve));
  async start(): Promise<void> {}
  async send(message: JSONRPCMessage): Promise<void> {
    if ('result' in message || 'error' in message) this.settle(message); // notifications of the request are not streamed
  }
  async close(): Promise<void> {
    this.onclose?.();
  }
}

/** Runs one request through an SDK server built for `scope`. */
async function runSdk(deps: ToolDeps, scope: ToolScope, request: JSONRPCMessage): Promise<{ result: Record<string, unknown> } | { error: { code: number; message: string; data?: unknown } }> {
  const server = buildServer(deps, scope);
  const transport = new OneRequest();
  await server.connect(transport);
  try {
    transport.onmessage!(request);
    return (await transport.answered) as never;
  } finally {
    await server.close();
  }
}
