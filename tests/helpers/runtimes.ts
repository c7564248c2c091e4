/**
 * Fixtures for the runtime and agent tests: run requests, small HTTP servers on 127.0.0.1 port 0,
 * an MCP server whose tool answers whatever a test wants (recording what it received), and the
 * reference host `agents/host.mjs` started as a child process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport, type EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  isInitializeRequest,
  type CallToolResult,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import type { RunRequest, RuntimeTarget } from '../../src/runtimes/types.ts';

/** A run request with test defaults: call `r1`, no cap, no credential, a signal that never fires, no delegation. */
export function runRequest(target: RuntimeTarget, overrides: Partial<RunRequest> = {}): RunRequest {
  return {
    target,
    input: {},
    call_id: 'r1',
    max_cost: null,
    credential: null,
    signal: new AbortController().signal,
    delegate: () => Promise.reject(new Error('no delegation in this test')),
    ...overrides,
  };
}

/** A remote target (`mcp` or `webhook`) at `endpoint`. */
export function remoteTarget(kind: 'mcp' | 'webhook', endpoint: string, tool?: string): RuntimeTarget {
  return { id: 'acme/echo', version: '1.2.3', runtime: { kind, endpoint, ...(tool ? { tool } : {}) } };
}

/** A listening HTTP server and what it received. */
export interface TestServer {
  url: string;
  /** Every request received: method, path, headers, body text. */
  received: { method: string; path: string; headers: IncomingHttpHeaders; body: string }[];
  /** Drops every open connection at once, as a crashed server would. */
  drop(): void;
  close(): Promise<void>;
}

/** A certificate and key (PEM) a test server serves https with. */
export interface TestTls {
  key: Buffer;
  cert: Buffer;
}

/** Starts `handler` on 127.0.0.1, port 0 (https with `tls`); the body is read before the handler runs. */
export async function startHttp(handler: (req: IncomingMessage, res: ServerResponse, body: string) => unknown, tls?: TestTls): Promise<TestServer> {
  const received: TestServer['received'] = [];
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    received.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
    await handler(req, res, body);
  };
  const server: HttpServer = tls ? createTlsServer(tls, handle) : createServer(handle);
  const url = await listen(server, tls ? 'https' : 'http');
  return { url, received, drop: () => server.closeAllConnections(), close: () => closeServer(server) };
}

/** What the tool of a {@link startMcpServer} server saw. */
export interface ToolCall {
  arguments: unknown;
  meta: Record<string, unknown> | undefined;
  signal: AbortSignal;
  /** Closes the call's SSE stream after its priming event (SSE polling); only on a resumable server. */
  closeSSEStream?: () => void;
}

/** Options of {@link startMcpServer}. */
export interface McpServerOptions {
  /**
   * Resumable streams: an event store, a priming event on each POST stream, and this `retry` in
   * ms; `onResume` hears every GET that resumes a stream (`Last-Event-ID`).
   */
  resumable?: { retry_ms: number; onResume?: () => void };
  /** Serve https with this certificate (a published agent's endpoint must be https). */
  tls?: TestTls;
}

/**
 * An event store (the SDK's `EventStore`) in memory, in order: event ids are `<stream>/<n>`
 * with `n` counting up, so a replay sends exactly the events after the one named.
 */
export class TestEventStore implements EventStore {
  readonly #events: Array<{ id: string; stream: string; message: JSONRPCMessage }> = [];

  async storeEvent(stream: string, message: JSONRPCMessage): Promise<string> {
    const id = `${stream}/${this.#events.length}`;
    this.#events.push({ id, stream, message });
    return id;
  }

  async getStreamIdForEventId(id: string): Promise<string | undefined> {
    return this.#events.find((event) => event.id === id)?.stream;
  }

  async replayEventsAfter(id: string, { send }: { send: (id: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const at = this.#events.findIndex((event) => event.id === id);
    if (at < 0) throw new Error(`no event ${id}`);
    const stream = this.#events[at]!.stream;
    for (const event of this.#events.slice(at + 1)) if (event.stream === stream) await send(event.id, event.message);
    return stream;
  }
}

/** An MCP server with one tool, `echo`, answering through `answer`, and everything it received. */
export interface TestMcpServer extends TestServer {
  /** Every JSON-RPC message POSTed to it, in order. */
  messages: JSONRPCMessage[];
  calls: ToolCall[];
  /** Forgets every session, as a restarted server would: requests naming one are answered 404. */
  forgetSessions(): void;
}

/**
 * A stateful MCP server (Streamable HTTP, sessions) on 127.0.0.1 whose tool `echo` answers
 * `answer(call)`: a `CallToolResult`, raw, so tests can send results outside the profile.
 */
export async function startMcpServer(answer: (call: ToolCall) => CallToolResult | Promise<CallToolResult>, options: McpServerOptions = {}): Promise<TestMcpServer> {
  const messages: JSONRPCMessage[] = [];
  const calls: ToolCall[] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = await startHttp(async (req, res, body) => {
    const parsed = body ? (JSON.parse(body) as JSONRPCMessage) : undefined;
    if (parsed) messages.push(parsed);
    if (req.method === 'GET' && req.headers['last-event-id']) options.resumable?.onResume?.();
    const sessionId = req.headers['mcp-session-id'];
    let transport = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    if (!transport && parsed && isInitializeRequest(parsed)) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (id) => void sessions.set(id, transport!),
        onsessionclosed: (id) => void sessions.delete(id),
        ...(options.resumable ? { eventStore: new TestEventStore(), retryInterval: options.resumable.retry_ms } : {}),
      });
      const server = new Server({ name: 'test-agent', version: '1.0.0' }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [{ name: 'echo', inputSchema: { type: 'object' } }] }));
      server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
        if (request.params.name !== 'echo') throw new McpError(ErrorCode.InvalidParams, `unknown tool ${request.params.name}`);
        const call = { arguments: request.params.arguments, meta: request.params._meta, signal: extra.signal, closeSSEStream: extra.closeSSEStream };
        calls.push(call);
        return answer(call);
      });
      await server.connect(transport);
    }
    if (!transport) {
      res.writeHead(404).end();
      return;
    }
    await transport.handleRequest(req, res, parsed);
  }, options.tls);
  return { ...http, messages, calls, forgetSessions: () => sessions.clear() };
}

/** The reference host started as `node agents/host.mjs --port 0`, and the URL it printed. */
export interface TestHost {
  url: string;
  /** Everything the host wrote to stderr so far. */
  stderr(): string;
  close(): Promise<void>;
}

/** Starts `agents/host.mjs` with `args` and extra `env`; resolves once it printed its URL. */
export async function startHost(args: string[] = [], env: Record<string, string> = {}): Promise<TestHost> {
  const host = fileURLToPath(new URL('../../agents/host.mjs', import.meta.url));
  const child = spawn(process.execPath, [host, '--port', '0', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /http:\/\/\S+\/mcp/.exec(stdout);
      if (match) resolve(match[0]);
    });
    child.once('exit', (code) => reject(new Error(`host exited with ${code}: ${stderr}`)));
  });
  return { url, stderr: () => stderr, close: () => stopChild(child) };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

async function listen(server: HttpServer, scheme: 'http' | 'https' = 'http'): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function closeServer(server: HttpServer): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** An address where nothing listens: a port that was just bound, then released. */
export async function deadEndpoint(): Promise<string> {
  const server = createServer();
  const url = await listen(server);
  await closeServer(server);
  return url;
}

/** Resolves when `signal` aborts. */
export function abortedOf(signal: AbortSignal): Promise<void> {
  return signal.aborted ? Promise.resolve() : new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
