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

/** Largest request body read, in bytes (the benchmark sends a few dozen). */
const BODY_MAX_BYTES = 64 * 1024;

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0 || port > 65_535) throw new Error(`usage: agent.ts <port>; got ${process.argv[2]}`);

/** Reads a request body up to BODY_MAX_BYTES; rejects beyond it. */
function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      text += chunk;
      if (text.length > BODY_MAX_BYTES) reject(new Error(`request body over ${BODY_MAX_BYTES} bytes`));
    });
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}

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
