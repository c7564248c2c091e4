/**
 * The MCP runtime: the Holon MCP agent profile over Streamable HTTP (gateway §6, first table).
 *
 * A call takes an MCP session to `runtime.endpoint` (issue 12 §2: reused, see "Sessions" below),
 * calls `runtime.tool` with the input as `arguments` and, when the caller set a cap,
 * `_meta["holon/max_cost"] = {amount, currency}`, and reads the result.
 *
 * Sessions: a call uses a session alone (never two calls on one session at once). A session
 * whose call ended with a result is kept idle for the next call to the same endpoint with the same
 * credential, at most {@link MAX_IDLE_PER_ENDPOINT} per endpoint and {@link MAX_IDLE_SESSIONS} in
 * all, each for {@link IDLE_MS} and {@link MAX_REQUESTS_PER_SESSION} requests; past that, or
 * when the runtime closes, it is ended (HTTP `DELETE`). A session whose call failed in any way (timeout, transport error, an answer outside
 * the profile) is ended at once, so the next call starts a new one. A kept session the server has
 * since forgotten answers HTTP 404 (MCP 2025-11-25, session management: the server did not take
 * the request): the call is then sent once more on a new session; that is the only resend.
 *
 * Result → outcome:
 * - `structuredContent` → `output`; without it, the first text block parsed as JSON → `output`
 *   (no text block, or text that is not JSON → `failure agent_error`);
 * - `isError` with `structuredContent.error.code` → `error` with that code (and its `message`);
 *   `isError` without a valid code → `failure agent_error`;
 * - `_meta["holon/units"]` (integer ≥ 0) and `_meta["holon/quote"]` (decimal string) → `units` and
 *   `quote`, on an output or an error; present but malformed → `failure agent_error`.
 *
 * Failures (DESIGN open point 11): no HTTP response at all (refused, DNS, reset, TLS) →
 * `runtime_unavailable`; an HTTP answer outside the profile (any non-2xx such as 401, a redirect,
 * which is never followed, a JSON-RPC error, a malformed result, an answer over 10 MiB) →
 * `agent_error`; the hard timeout → `timeout`.
 *
 * Streams (MCP 2025-11-25, Streamable HTTP): a server may close the `tools/call` stream after an
 * event with an id (the priming event of SSE polling, `closeSSEStream`); the runtime then waits
 * the server's `retry` (else {@link RESUME_DELAY_MS}, and at least {@link MIN_RESUME_GAP_MS}
 * between two resumptions), resumes with a GET carrying `Last-Event-ID`, and takes the result
 * from there, all within the call's hard timeout. A stream that ends without the result and
 * without an event id since the last one (a crashed server: nothing to resume from), or a
 * resumption the server refuses or cannot take, is `agent_error` at once rather than a wait for
 * the timeout.
 *
 * Cancellation (DESIGN open point 12): at the hard timeout the request's AbortSignal fires, the SDK
 * sends `notifications/cancelled` for the in-flight `tools/call` only (MCP 2025-11-25; `initialize`
 * is never cancelled: a timeout while connecting just closes), the runtime waits for that
 * notification to be delivered (at most {@link CLOSE_GRACE_MS}), ends the session with an HTTP
 * `DELETE` when the server gave one, and closes the response stream (the signal later protocol
 * revisions use). No retry: a call is sent once (but for a forgotten session, above).
 *
 * Files (hosted gateway): `_meta["holon/files"]` is an object keyed by each `holon://files/…`
 * handle of the input, whose value is `{url, content_type, size, sha256, expires}`; absent when
 * the input names no file.
 *
 * Credentials (DESIGN open point 13): the only `Authorization` sent is `Bearer <author's endpoint
 * credential>`; nothing of the caller's reaches the agent but the input and the cap.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { ERROR_CODE_PATTERN, toQuote, toUnits } from './agent-context.mjs';
import { credentialHeaders, isRedirect, networkReason, redirectRefused, remoteRuntimeSettings, statusHint, tooLarge, watchBody, type Fetch, type RemoteRuntimeOptions } from './http.ts';
import { clip, failure, isObject, timedOut } from './outcome.ts';
import type { RunOutcome, RunRequest, Runtime } from './types.ts';
import { inSpan, SpanKind, traceHeaders } from '../observe/trace.ts';

/** How long closing may wait for the cancellation notification, then for the session `DELETE`, in ms. */
const CLOSE_GRACE_MS = 1000;

/**
 * How long after the `tools/call` stream (or a resumption of it) ended a result or an event id may
 * still be on its way through the SDK, in ms; past it with neither, the server closed the stream
 * without answering and without a point to resume from (`agent_error`).
 */
const STREAM_END_GRACE_MS = 100;

/** How long to wait before resuming a closed stream when the server sent no `retry`, in ms. */
const RESUME_DELAY_MS = 1000;

/** The least time between two resumptions of a call's stream, in ms, whatever `retry` the server asks (a bound on reconnections). */
const MIN_RESUME_GAP_MS = 100;

/**
 * The SDK's own request timeout, in ms: a backstop above the longest hard timeout (300 s, gateway
 * §7 "Limits"), so the gateway's signal is what ends a run. The SDK default (60 s) would cut longer runs.
 */
const BACKSTOP_TIMEOUT_MS = 305_000;

/** Idle sessions kept per endpoint (and credential), at most. */
const MAX_IDLE_PER_ENDPOINT = 16;

/** Idle sessions kept by one runtime in all, at most. */
const MAX_IDLE_SESSIONS = 256;

/** How long an idle session is kept for the next call, in ms. */
const IDLE_MS = 30_000;

/**
 * Requests sent on one session, at most, before it is ended instead of kept: each request adds a
 * listener to the session's abort signal (undici removes it only when the request is garbage
 * collected), and Node warns of a leak past 1500 listeners on one signal.
 */
export const MAX_REQUESTS_PER_SESSION = 1000;

/** An MCP runtime that keeps sessions: `close()` ends the idle ones. */
export interface McpRuntime extends Runtime {
  close(): Promise<void>;
}

/** The MCP runtime. Never throws: every problem is a `RunOutcome`. */
export function createMcpRuntime(options: RemoteRuntimeOptions = {}): McpRuntime {
  const { fetch: baseFetch, max_answer_bytes: maxBytes } = remoteRuntimeSettings(options);
  const pool = new SessionPool();
  return {
    async run(request) {
      const { endpoint, tool } = request.target.runtime;
      if (!endpoint || !tool) return failure('runtime_unavailable', 'an mcp agent needs runtime.endpoint and runtime.tool');
      if (!isObject(request.input)) {
        return failure('agent_error', 'MCP tool arguments are a JSON object: declare interface.input as an object');
      }
      if (request.signal.aborted) return timedOut();
      const key = `${endpoint}\n${request.credential ?? ''}`;
      const kept = pool.take(key);
      if (kept) {
        const outcome = await callOn(kept, request, tool, pool);
        if (outcome !== SESSION_GONE) return outcome;
      }
      const session = openSession(key, endpoint, request.credential, baseFetch, maxBytes);
      return (await callOn(session, request, tool, pool)) as RunOutcome;
    },
    close: () => pool.close(),
  };
}

/** An MCP session: its client and transport, and the watch of the call using it now. */
interface Session {
  key: string;
  client: Client;
  transport: CancellingTransport;
  /** Whether `initialize` has been answered. */
  initialized: boolean;
  watch: CallWatch;
  idle_timer: NodeJS.Timeout | null;
  /** Requests sent on this session so far (bounded by {@link MAX_REQUESTS_PER_SESSION}). */
  requests: number;
}

/** A new, not yet initialized session to `endpoint`, sending `credential` on every request. */
function openSession(key: string, endpoint: string, credential: string | null, baseFetch: Fetch, maxBytes: number): Session {
  const session = { key, initialized: false, watch: new CallWatch(), idle_timer: null, requests: 0 } as Session;
  session.transport = new CancellingTransport(new URL(endpoint), {
    requestInit: { headers: credentialHeaders(credential), redirect: 'manual' },
    fetch: watchedFetch(baseFetch, maxBytes, endpoint, () => session.watch, () => session.requests++),
    // One attempt per closed stream: a refused or failed resumption stops the call (watchedFetch).
    reconnectionOptions: { maxRetries: 1, initialReconnectionDelay: RESUME_DELAY_MS, maxReconnectionDelay: RESUME_DELAY_MS, reconnectionDelayGrowFactor: 1 },
  });
  session.client = new Client({ name: 'holon-gateway', version: '0.1.0' });
  return session;
}

/** What {@link callOn} answers when a kept session was forgotten by the server before it took the call. */
const SESSION_GONE = Symbol('session gone');

/** One `tools/call` on `session` (initializing it first if new); the session is kept after a result, else ended. */
async function callOn(session: Session, request: RunRequest, tool: string, pool: SessionPool): Promise<RunOutcome | typeof SESSION_GONE> {
  const watch = new CallWatch();
  session.watch = watch;
  const kept = session.initialized;
  const stop = AbortSignal.any([request.signal, watch.stopped]);
  let answered = false;
  try {
    // `initialize` MUST NOT be cancelled (MCP 2025-11-25, cancellation): the SDK never sees the
    // signal while connecting (it would send notifications/cancelled for it, even after it
    // answered); a stop just ends the wait, and ending the session (below) ends the request.
    if (!kept) await untilAborted(session.client.connect(session.transport, { timeout: BACKSTOP_TIMEOUT_MS }), stop);
    session.initialized = true;
    // An MCP client span (OpenTelemetry's MCP conventions); the `_meta` and the HTTP requests carry its context.
    const attributes = { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': tool, 'gen_ai.operation.name': 'execute_tool', 'mcp.session.id': session.transport.sessionId ?? '' };
    const result = await inSpan(`tools/call ${tool}`, { kind: SpanKind.CLIENT, attributes }, () =>
      session.client.callTool({ name: tool, arguments: request.input as Record<string, unknown>, _meta: requestMeta(request) }, undefined, {
        signal: stop,
        timeout: BACKSTOP_TIMEOUT_MS,
        onresumptiontoken: () => watch.events++,
      }),
    );
    answered = true;
    return outcomeOf(result);
  } catch (error) {
    if (request.signal.aborted) return timedOut();
    if (kept && error instanceof StreamableHTTPError && error.code === 404) return SESSION_GONE;
    return watch.problem ?? outcomeOfError(error);
  } finally {
    watch.settled = true;
    if (answered && watch.problem === null) pool.give(session);
    else await endSession(session);
  }
}

/** Ends a session: waits for notifications in flight (a cancellation), sends `DELETE`, closes the stream. Never throws. */
async function endSession(session: Session): Promise<void> {
  await session.transport.flush(CLOSE_GRACE_MS);
  await within(CLOSE_GRACE_MS, session.transport.terminateSession());
  await session.client.close().catch(() => {});
}

/** Idle sessions by endpoint and credential, bounded in number and idle time (see "Sessions" above). */
class SessionPool {
  readonly #idle = new Map<string, Session[]>();
  #count = 0;

  /** An idle session for `key`, now the caller's alone, or undefined. */
  take(key: string): Session | undefined {
    const sessions = this.#idle.get(key);
    const session = sessions?.pop();
    if (!session) return undefined;
    if (sessions!.length === 0) this.#idle.delete(key);
    this.#count--;
    clearTimeout(session.idle_timer!);
    session.idle_timer = null;
    return session;
  }

  /** Keeps `session` for the next call, or ends it when the pool is full. */
  give(session: Session): void {
    const sessions = this.#idle.get(session.key) ?? [];
    if (sessions.length >= MAX_IDLE_PER_ENDPOINT || this.#count >= MAX_IDLE_SESSIONS || session.requests >= MAX_REQUESTS_PER_SESSION) {
      void endSession(session);
      return;
    }
    session.idle_timer = setTimeout(() => {
      const index = sessions.indexOf(session);
      if (index < 0) return;
      sessions.splice(index, 1);
      if (sessions.length === 0 && this.#idle.get(session.key) === sessions) this.#idle.delete(session.key);
      this.#count--;
      void endSession(session);
    }, IDLE_MS).unref();
    sessions.push(session);
    this.#idle.set(session.key, sessions);
    this.#count++;
  }

  /** Ends every idle session. */
  async close(): Promise<void> {
    const all = [...this.#idle.values()].flat();
    this.#idle.clear();
    this.#count = 0;
    for (const session of all) clearTimeout(session.idle_timer!);
    await Promise.all(all.map(endSession));
  }
}

/** The request's `_meta`: the caller's cap, the input's file links and the trace context, each only when there is one; undefined when none. */
function requestMeta(request: RunRequest): Record<string, unknown> | undefined {
  const meta: Record<string, unknown> = {};
  if (request.max_cost) meta['holon/max_cost'] = { ...request.max_cost };
  if (request.files && Object.keys(request.files).length > 0) meta['holon/files'] = request.files;
  // The W3C trace context under its unprefixed keys (MCP SEP-414): the agent continues the call's trace (issue 22 §2).
  Object.assign(meta, traceHeaders());
  return Object.keys(meta).length > 0 ? meta : undefined;
}

/** `headers` with the active span's W3C trace context added (`traceparent`, `tracestate`): none when tracing is off. */
function withTraceHeaders(headers: HeadersInit | undefined): HeadersInit | undefined {
  const trace = Object.entries(traceHeaders());
  if (trace.length === 0) return headers;
  const merged = new Headers(headers);
  for (const [name, value] of trace) merged.set(name, value);
  return merged;
}

/** What the fetches of one call saw, and the means to stop the call for it. */
class CallWatch {
  /** The first problem seen, which explains a failed call better than the SDK's error. */
  problem: RunOutcome | null = null;
  /** Set once the call has its outcome: nothing stops it any more. */
  settled = false;
  /** Events with an id seen on the `tools/call` stream and its resumptions: the stream can be resumed from the last one. */
  events = 0;
  /** When the last resumption was sent (ms since the epoch). */
  resumed_ms = 0;
  readonly #controller = new AbortController();
  /** Aborted by {@link stop}. */
  readonly stopped = this.#controller.signal;

  /** Remembers `outcome` as the explanation, if none yet. */
  note(outcome: RunOutcome): void {
    this.problem ??= outcome;
  }

  /** Notes `outcome` and stops the call, for problems after which the SDK would wait for an answer that cannot come. */
  stop(outcome: RunOutcome): void {
    if (this.settled) return;
    this.note(outcome);
    this.#controller.abort();
  }
}

/**
 * The fetch the transport uses: never follows a redirect, limits every response body, and names a
 * connection failure or a redirect (the SDK's own request then fails). It stops the call when an
 * answer grows past the limit, when the `tools/call` stream (or a resumption of it) ends without
 * the result and without a new event id to resume from (a crashed server: the SDK would wait
 * until the timeout), and when a resumption is refused or fails. Resumptions are spaced by at
 * least {@link MIN_RESUME_GAP_MS}. `counted` is told of every request, before it is sent.
 */
function watchedFetch(baseFetch: Fetch, maxBytes: number, endpoint: string, current: () => CallWatch, counted: () => void): Fetch {
  return async (url, init) => {
    counted();
    // The call using the session when this request starts: late events of a request belong to it.
    const watch = current();
    const resumption = init?.method === 'GET' && new Headers(init.headers).has('last-event-id');
    if (resumption) {
      await sleep(Math.max(0, watch.resumed_ms + MIN_RESUME_GAP_MS - Date.now()), undefined, { signal: init?.signal ?? undefined });
      watch.resumed_ms = Date.now();
    }
    let response: Response;
    try {
      response = await baseFetch(url, { ...init, headers: withTraceHeaders(init?.headers), redirect: 'manual' });
    } catch (error) {
      if (!init?.signal?.aborted) {
        const unreachable = `could not reach ${endpoint} (${networkReason(error)}): is the agent's MCP server running?`;
        if (resumption) watch.stop(failure('agent_error', `the MCP server closed the stream and ${unreachable}`));
        else watch.note(failure('runtime_unavailable', unreachable));
      }
      throw error;
    }
    if (isRedirect(response.status)) watch.note(failure('agent_error', redirectRefused(endpoint, response)));
    if (resumption && !response.ok) watch.stop(failure('agent_error', `the MCP server closed the stream and refused to resume it (HTTP ${response.status})`));
    const events = watch.events;
    const unanswered = () =>
      setTimeout(() => {
        if (watch.events === events) watch.stop(failure('agent_error', 'the MCP server closed the stream without answering the call'));
      }, STREAM_END_GRACE_MS).unref();
    return watchBody(response, {
      max_bytes: maxBytes,
      onExceeded: () => watch.stop(failure('agent_error', tooLarge(maxBytes))),
      onEnd: resumption || carriesToolCall(init) ? unanswered : undefined,
    });
  };
}

/** Whether a request body is the `tools/call` request. */
function carriesToolCall(init: RequestInit | undefined): boolean {
  if (init?.method !== 'POST' || typeof init.body !== 'string') return false;
  try {
    return (JSON.parse(init.body) as { method?: unknown }).method === 'tools/call';
  } catch {
    return false;
  }
}

/** The outcome of a `tools/call` result (profile table above). */
function outcomeOf(result: Record<string, unknown>): RunOutcome {
  const meta = isObject(result._meta) ? result._meta : {};
  let units: number | null;
  let quote: string | null;
  try {
    units = meta['holon/units'] === undefined ? null : toUnits(meta['holon/units']);
    quote = meta['holon/quote'] === undefined ? null : toQuote(wireQuote(meta['holon/quote']));
  } catch (error) {
    return failure('agent_error', `malformed _meta: ${(error as Error).message}`);
  }
  const structured = result.structuredContent;
  const text = firstText(result.content);
  if (result.isError === true) {
    const error = isObject(structured) && isObject(structured.error) ? structured.error : {};
    if (typeof error.code !== 'string' || !ERROR_CODE_PATTERN.test(error.code)) {
      return failure('agent_error', `the tool failed without structuredContent.error.code: ${clip(text ?? '(no text)')}`);
    }
    const message = typeof error.message === 'string' ? error.message : text ?? error.code;
    return { kind: 'error', code: error.code, message: clip(message), units, quote };
  }
  if (structured !== undefined) return { kind: 'output', output: structured, units, quote };
  if (text === null) return failure('agent_error', 'the result has neither structuredContent nor a text block');
  try {
    return { kind: 'output', output: JSON.parse(text), units, quote };
  } catch {
    return failure('agent_error', `the first text block is not JSON: ${clip(text)}`);
  }
}

/** A quote on the wire is a decimal string, never a JSON number (binary floats are not prices). */
function wireQuote(value: unknown): string {
  if (typeof value !== 'string') throw new TypeError(`holon/quote must be a decimal string like "0.25", got ${JSON.stringify(value)}`);
  return value;
}

/** The text of the first `text` content block, or `null`. */
function firstText(content: unknown): string | null {
  if (!Array.isArray(content)) return null;
  const block = content.find((item) => isObject(item) && item.type === 'text' && typeof item.text === 'string');
  return block ? (block.text as string) : null;
}

/** The outcome of a call that threw before any result (not a timeout, no problem noted). */
function outcomeOfError(error: unknown): RunOutcome {
  if (error instanceof StreamableHTTPError) {
    return failure('agent_error', `the MCP server answered HTTP ${error.code}${statusHint(error.code ?? 0)}: ${clip(error.message)}`);
  }
  if (error instanceof McpError) {
    if (error.code === ErrorCode.RequestTimeout) return timedOut();
    return failure('agent_error', `the MCP server answered JSON-RPC error ${error.code}: ${clip(error.message)}`);
  }
  return failure('agent_error', `not an MCP answer: ${clip(error instanceof Error ? error.message : String(error))}`);
}

/** `promise`, or a rejection with the signal's reason as soon as `signal` aborts (the promise is left to settle on its own). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Waits for `promise` at most `ms`; its failure is ignored (closing is best effort). */
async function within(ms: number, promise: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([promise.catch(() => {}), expired]);
  clearTimeout(timer);
}

/**
 * The SDK's client transport, keeping track of the notifications it sends, so closing can wait
 * for `notifications/cancelled` to be delivered before the session ends.
 */
class CancellingTransport extends StreamableHTTPClientTransport {
  readonly #notifications = new Set<Promise<void>>();

  override send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const sent = super.send(message, options);
    if (!('id' in message)) {
      const tracked = sent.catch(() => {});
      this.#notifications.add(tracked);
      void tracked.then(() => this.#notifications.delete(tracked));
    }
    return sent;
  }

  /** Waits for the notifications in flight, at most `ms`. */
  async flush(ms: number): Promise<void> {
    if (this.#notifications.size > 0) await within(ms, Promise.all(this.#notifications));
  }
}
