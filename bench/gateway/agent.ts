/**
 * The gateway benchmark's trivial MCP agent (issue 12 §2): one tool, `echo`, that answers its
 * arguments as `structuredContent` at once. Stateless Streamable HTTP (a server and transport per
 * request, no session), so the agent costs as little as an MCP agent can.
 *
 *   node --import tsx bench/gateway/agent.ts <port>
 *
 * Prints `listening on http://127.0.0.1:<port>/mcp` once it accepts connections.
 */
import http from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { readBody } from './http-body.ts';

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0 || port > 65_535) throw new Error(`usage: agent.ts <port>; got ${process.argv[2]}`);

const server = http.createServer(async (req, res) => {
  try {
    const body = await readBody(req);
    const agent = new Server({ name: 'bench-echo', version: '1.0.0' }, { capabilities: { tools: {} } });
    agent.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [{ name: 'echo', inputSchema: { type: 'object' } }] }));
    agent.setRequestHandler(CallToolRequestSchema, (request) => ({ content: [], structuredContent: { echo: request.params.arguments ?? {} } }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close());
    await agent.connect(transport);
    await transport.handleRequest(req, res, body ? JSON.parse(body) : undefined);
  } catch (error) {
    if (!res.headersSent) res.writeHead(400, { 'content-type': 'text/plain' });
    res.end(String((error as Error).message));
  }
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${port}/mcp`));
