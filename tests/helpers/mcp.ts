/**
 * A client of `/mcp` in MCP 2026-07-28 for tests: one raw POST per request (no SDK client speaks
 * the revision yet), with the `_meta` fields and mirrored headers the revision requires.
 */

/** The stateless revision. */
export const VERSION = '2026-07-28';

let nextId = 100;

/** POSTs a 2026-07-28 request: `_meta` and the mirrored headers as the revision requires, each overridable. */
export async function modern(
  url: string,
  method: string,
  params: Record<string, unknown> = {},
  options: { capabilities?: Record<string, unknown>; headers?: Record<string, string>; meta?: Record<string, unknown>; id?: number | string } = {},
): Promise<{ status: number; body: any }> {
  const id = options.id ?? nextId++;
  const _meta = options.meta ?? { 'io.modelcontextprotocol/protocolVersion': VERSION, 'io.modelcontextprotocol/clientCapabilities': options.capabilities ?? {}, 'io.modelcontextprotocol/clientInfo': { name: 'modern-test', version: '1' } };
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': VERSION,
    'mcp-method': method,
    ...(typeof params.name === 'string' ? { 'mcp-name': params.name } : {}),
    ...options.headers,
  };
  const response = await fetch(`${url}/mcp`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta } }) });
  return { status: response.status, body: await response.json() };
}

