#!/usr/bin/env node
/**
 * The reference host (gateway §6): serves every `agents/<name>/tool.mjs` over one Streamable HTTP
 * MCP endpoint, `/mcp`, following the Holon MCP agent profile (see `lib/tool-server.mjs`).
 *
 *   node agents/host.mjs [--port 4300] [--host 127.0.0.1] [--dir agents]
 *
 * prints `holon agents host: http://<host>:<port>/mcp (<tools>)` once it listens (`--port 0`: a
 * free port). Started with an IPC channel (as the gateway starts it), it exits when the channel
 * closes, i.e. when its parent dies. `HOLON_EXCLUDE`
 * (comma-separated agent ids, default `holon-labs/summarize`, which spends the operator's Anthropic
 * credits, and `holon-labs/sec-company`) leaves agents out; `HOLON_EXCLUDE=` serves them all but
 * sec-company without `HOLON_SEC_CONTACT` (the rule the gateway lists by, `src/gateway/shipped-agents.mjs`).
 *
 * Sessions: stateful, so that a `notifications/cancelled` reaches the running tool (in stateless
 * mode it would reach a fresh server). At most {@link MAX_SESSIONS} at once; a session idle for
 * {@link SESSION_IDLE_MS} is closed, which also stops its running tools. Requests carrying an
 * `Origin` header are refused: the host serves the gateway and MCP clients, never browser pages
 * (DNS rebinding). A request body weighs at most {@link MAX_BODY_BYTES}.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { createToolServer } from './lib/tool-server.mjs';
import { loadTools } from './lib/tools.mjs';
import { excludedAgents, leftOut } from '../src/gateway/shipped-agents.mjs';

/** Open sessions at most; an initialize beyond it gets 503. */
const MAX_SESSIONS = 256;
/** A session without a request for this long is closed, in ms (above the 300 s longest run). */
const SESSION_IDLE_MS = 10 * 60_000;
/** The largest request body, in bytes (a 5 MiB CSV fits, JSON-escaped). */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '4300' },
    host: { type: 'string', default: '127.0.0.1' },
    dir: { type: 'string', default: fileURLToPath(new URL('.', import.meta.url)) },
  },
});
const exclude = new Set(leftOut(excludedAgents()));
const tools = await loadTools(values.dir, exclude);

/** @type {Map<string, { transport: StreamableHTTPServerTransport, lastSeen: number, streams: Map<string | number, AbortController> }>} */
const sessions = new Map();

const server = createServer((req, res) => {
  handle(req, res).catch((error) => {
    console.error(error);
    if (!res.headersSent) refuse(res, 500, 'internal error');
  });
});

/** One HTTP request to the host. */
async function handle(req, res) {
  if (new URL(req.url ?? '/', 'http://host').pathname !== '/mcp') return refuse(res, 404, 'the MCP endpoint is /mcp');
  if (req.headers.origin !== undefined) return refuse(res, 403, 'requests from browser pages are refused');
  const body = req.method === 'POST' ? await readJson(req) : undefined;
  if (body instanceof Error) return refuse(res, body.status, body.message);
  const sessionId = req.headers['mcp-session-id'];
  let session = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
  if (sessionId !== undefined && !session) return refuse(res, 404, 'unknown session: initialize again');
  if (!session) {
    if (!isInitializeRequest(body)) return refuse(res, 400, 'no session: send initialize first');
    if (sessions.size >= MAX_SESSIONS) return refuse(res, 503, `${MAX_SESSIONS} sessions open: try again shortly`);
    session = await openSession();
  }
  session.lastSeen = Date.now();
  watchStream(session, body, res);
  await session.transport.handleRequest(req, res, body);
}

/** A new session: its transport and its own MCP server. */
async function openSession() {
  const session = { transport: null, lastSeen: Date.now(), streams: new Map() };
  session.transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: randomUUID,
    onsessioninitialized: (id) => void sessions.set(id, session),
  });
  session.transport.onclose = () => void sessions.delete(session.transport.sessionId);
  const never = new AbortController().signal;
  await createToolServer(tools, (requestId) => session.streams.get(requestId)?.signal ?? never).connect(session.transport);
  return session;
}

/** For a `tools/call`: aborts its tool when the client drops the response stream before the answer. */
function watchStream(session, body, res) {
  if (body?.method !== 'tools/call' || body.id === undefined) return;
  const controller = new AbortController();
  session.streams.set(body.id, controller);
  res.on('close', () => {
    if (!res.writableFinished) controller.abort(new Error('the client closed the stream'));
    session.streams.delete(body.id);
  });
}

/** The parsed JSON body, or an Error with the HTTP `status` to answer. */
async function readJson(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return Object.assign(new Error(`request body over ${MAX_BODY_BYTES} bytes`), { status: 413 });
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return Object.assign(new Error('the body is not JSON'), { status: 400 });
  }
}

/** A JSON-RPC error answer with an HTTP status. */
function refuse(res, status, message) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

const sweep = setInterval(() => {
  const now = Date.now();
  for (const session of sessions.values()) if (now - session.lastSeen > SESSION_IDLE_MS) void session.transport.close();
}, 60_000);
sweep.unref();

let stopping = false;
/** Ends every session, closes the server and exits 0. */
async function shutdown() {
  if (stopping) return;
  stopping = true;
  await Promise.all([...sessions.values()].map((session) => session.transport.close()));
  server.close(() => process.exit(0));
  server.closeAllConnections();
}
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => void shutdown());
// Started by a gateway with an IPC channel: the channel closes when the gateway dies, however it
// dies (kill -9 included), and the host goes with it, freeing its port (see src/agents-host/host.ts).
if (process.channel) {
  process.once('disconnect', () => void shutdown());
  process.channel.unref();
}

server.listen(Number(values.port), values.host, () => {
  const { address, port } = server.address();
  console.log(`holon agents host: http://${address}:${port}/mcp (${tools.map((tool) => tool.name).join(', ') || 'no tools'})`);
});
