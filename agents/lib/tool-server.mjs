/**
 * The MCP side of the reference host: one MCP server per session, serving the loaded tools under
 * the Holon MCP agent profile (gateway §6):
 *
 * - `tools/list`: each tool with its manifest schemas verbatim;
 * - `tools/call`: the input checked against `inputSchema`, then `run(input, ctx)`;
 *   an output → `structuredContent` (when it is an object) and the same JSON as a text block;
 *   `throw ctx.error(code)` → `isError` with `structuredContent.error = {code, message}`;
 *   units and quote reported with `ctx` → `_meta["holon/units"]` / `_meta["holon/quote"]`;
 *   a crash or an output outside `outputSchema` → `isError` without a code (the gateway's `agent_error`);
 *   arguments outside `inputSchema` → `isError` with code `invalid_input` (undeclared: never billed);
 * - `_meta["holon/max_cost"]` of the request → `ctx.max_cost`;
 * - cancellation: `ctx.signal` aborts on `notifications/cancelled`, on the session's end, and when
 *   the client drops the response stream (`disconnected`).
 *
 * The low-level `Server` rather than `McpServer`: `McpServer.registerTool` takes zod schemas and
 * would re-derive the JSON Schema, where the profile serves the manifest's own schemas.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { AgentError, agentError, createReport } from '../../src/runtimes/agent-context.mjs';

/**
 * An MCP server for one session.
 * @param {import('./tools.mjs').Tool[]} tools
 * @param {(requestId: string | number) => AbortSignal} disconnected aborts when the client dropped the stream of that request
 * @returns {Server}
 */
export function createToolServer(tools, disconnected) {
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const server = new Server({ name: 'holon-agents', version: '0.1.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: tools.map(({ name, description, inputSchema, outputSchema }) => ({ name, description, inputSchema, outputSchema })),
  }));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    const tool = byName.get(request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${request.params.name}; this host serves ${[...byName.keys()].join(', ')}`);
    const signal = AbortSignal.any([extra.signal, disconnected(extra.requestId)]);
    return callTool(tool, request.params.arguments ?? {}, request.params._meta, signal);
  });
  return server;
}

/**
 * One `tools/call`: runs the tool and answers the profile's result.
 * @param {import('./tools.mjs').Tool} tool
 * @param {unknown} args
 * @param {Record<string, unknown> | undefined} meta the request's `_meta`
 * @param {AbortSignal} signal
 */
export async function callTool(tool, args, meta, signal) {
  if (!tool.checkInput(args)) return declared('invalid_input', `arguments do not match the input schema: ${describe(tool.checkInput.errors)}`, { units: null, quote: null });
  const report = createReport();
  const ctx = { units: report.units, quote: report.quote, error: agentError, signal, max_cost: maxCostOf(meta) };
  try {
    const output = await tool.run(args, ctx);
    if (!tool.checkOutput(output)) return crashed(tool, new Error(`output outside the output schema: ${describe(tool.checkOutput.errors)}`));
    const structured = typeof output === 'object' && output !== null && !Array.isArray(output) ? { structuredContent: output } : {};
    return { content: [{ type: 'text', text: JSON.stringify(output) }], ...structured, ...metaOf(report.totals()) };
  } catch (error) {
    if (error instanceof AgentError) return declared(error.code, error.message, report.totals());
    return crashed(tool, error);
  }
}

/** A declared failure: `isError` with `structuredContent.error.code`. */
function declared(code, message, totals) {
  return { isError: true, content: [{ type: 'text', text: message }], structuredContent: { error: { code, message } }, ...metaOf(totals) };
}

/** A crash: logged here, `isError` without a code for the caller (no stack leaves the host). */
function crashed(tool, error) {
  console.error(`${tool.id}: ${error instanceof Error ? error.stack : String(error)}`);
  return { isError: true, content: [{ type: 'text', text: `${tool.name} failed; the host log has the details` }] };
}

/** `_meta` with what the tool reported, or nothing. */
function metaOf({ units, quote }) {
  const meta = {};
  if (units !== null) meta['holon/units'] = units;
  if (quote !== null) meta['holon/quote'] = quote;
  return Object.keys(meta).length > 0 ? { _meta: meta } : {};
}

/** `_meta["holon/max_cost"]` when it is `{amount, currency}` strings, else `null`. */
function maxCostOf(meta) {
  const cap = meta?.['holon/max_cost'];
  return typeof cap?.amount === 'string' && typeof cap?.currency === 'string' ? { amount: cap.amount, currency: cap.currency } : null;
}

function describe(errors) {
  return (errors ?? []).slice(0, 5).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
}
