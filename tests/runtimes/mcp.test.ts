/** The MCP runtime: each row of the Holon MCP agent profile (gateway §6, first table) and its failures. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createMcpRuntime, MAX_REQUESTS_PER_SESSION } from '../../src/runtimes/mcp.ts';
import type { RunOutcome } from '../../src/runtimes/types.ts';
import { waitFor } from '../helpers/gateway.ts';
import { abortedOf, deadEndpoint, remoteTarget, runRequest, startHttp, startMcpServer, type TestMcpServer } from '../helpers/runtimes.ts';

/** What the test server's tool answers next. */
let answer: () => CallToolResult | Promise<CallToolResult> = () => ({ content: [] });
let server: TestMcpServer;
before(async () => {
  server = await startMcpServer(() => answer());
});
after(async () => {
  await runtime.close();
  await server.close();
});

const runtime = createMcpRuntime();
const target = () => remoteTarget('mcp', `${server.url}/mcp`, 'echo');

/** Runs one call with the tool answering `result`. */
async function callWith(result: CallToolResult, overrides: Parameters<typeof runRequest>[1] = {}): Promise<RunOutcome> {
  answer = () => result;
  return runtime.run(runRequest(target(), { input: { q: 1 }, ...overrides }));
}

test('structuredContent is the output; the input travels as arguments', async () => {
  const outcome = await callWith({ content: [{ type: 'text', text: 'ignored' }], structuredContent: { rows: 3 } });
  assert.deepEqual(outcome, { kind: 'output', output: { rows: 3 }, units: null, quote: null });
  assert.deepEqual(server.calls.at(-1)!.arguments, { q: 1 });
});

test('without structuredContent, the first text block is parsed as JSON', async () => {
  const outcome = await callWith({ content: [{ type: 'image', data: 'AA==', mimeType: 'image/png' }, { type: 'text', text: '{"rows": 4}' }] });
  assert.deepEqual(outcome, { kind: 'output', output: { rows: 4 }, units: null, quote: null });
});

test('a first text block that is not JSON is agent_error', async () => {
  const outcome = await callWith({ content: [{ type: 'text', text: 'Here are your rows!' }] });
  assert.deepEqual(outcome, { kind: 'failure', code: 'agent_error', message: 'the first text block is not JSON: Here are your rows!' });
});

test('isError with structuredContent.error.code is an error outcome with that code, units and quote kept', async () => {
  const outcome = await callWith({
    isError: true,
    content: [{ type: 'text', text: 'not a CSV' }],
    structuredContent: { error: { code: 'not_csv', message: 'line 2 has 3 fields, the header 2' } },
    _meta: { 'holon/units': 1 },
  });
  assert.deepEqual(outcome, { kind: 'error', code: 'not_csv', message: 'line 2 has 3 fields, the header 2', units: 1, quote: null });
});

test('isError without a code is agent_error', async () => {
  const outcome = await callWith({ isError: true, content: [{ type: 'text', text: 'Traceback…' }] });
  assert.deepEqual(outcome, { kind: 'failure', code: 'agent_error', message: 'the tool failed without structuredContent.error.code: Traceback…' });
});

test('_meta holon/units and holon/quote are reported', async () => {
  const outcome = await callWith({ content: [], structuredContent: { ok: true }, _meta: { 'holon/units': 3, 'holon/quote': '0.125' } });
  assert.deepEqual(outcome, { kind: 'output', output: { ok: true }, units: 3, quote: '0.125' });
});

test('malformed units or quote are agent_error, never a guess', async () => {
  for (const meta of [{ 'holon/units': 2.5 }, { 'holon/units': '3' }, { 'holon/quote': 0.5 }, { 'holon/quote': '-1' }]) {
    const outcome = await callWith({ content: [], structuredContent: {}, _meta: meta });
    assert.equal(outcome.kind === 'failure' && outcome.code, 'agent_error', JSON.stringify(meta));
  }
});

test('the caller cap reaches the tool as _meta holon/max_cost, and only when set', async () => {
  await callWith({ content: [], structuredContent: {} }, { max_cost: { amount: '0.20', currency: 'EUR' } });
  assert.deepEqual(server.calls.at(-1)!.meta?.['holon/max_cost'], { amount: '0.20', currency: 'EUR' });
  await callWith({ content: [], structuredContent: {} });
  assert.equal(server.calls.at(-1)!.meta?.['holon/max_cost'], undefined);
});

test("the author's credential is sent as a Bearer token on every request, and nothing else of the kind", async () => {
  const before = server.received.length;
  await callWith({ content: [], structuredContent: {} }, { credential: 'tok_author' });
  const requests = server.received.slice(before);
  assert.ok(requests.length >= 3, 'initialize, initialized, tools/call');
  for (const request of requests) assert.equal(request.headers.authorization, 'Bearer tok_author');
  const plain = server.received.length;
  await callWith({ content: [], structuredContent: {} });
  for (const request of server.received.slice(plain)) {
    assert.equal(request.headers.authorization, undefined);
    assert.equal(request.headers.cookie, undefined);
  }
});

test('sessions are kept: a second call is one tools/call on the same session; closing the runtime ends it (DELETE)', async () => {
  const own = createMcpRuntime();
  const run = () => own.run(runRequest(target(), { input: { q: 1 } }));
  answer = () => ({ content: [], structuredContent: { ok: true } });
  const first = server.received.length;
  assert.equal((await run()).kind, 'output');
  const opened = server.received.slice(first);
  assert.deepEqual(opened.filter((r) => r.method === 'POST').map((r) => JSON.parse(r.body).method), ['initialize', 'notifications/initialized', 'tools/call']);
  const session = opened.at(-1)!.headers['mcp-session-id'];
  const second = server.received.length;
  assert.equal((await run()).kind, 'output');
  const reused = server.received.slice(second).filter((r) => r.method === 'POST');
  assert.deepEqual(reused.map((r) => [JSON.parse(r.body).method, r.headers['mcp-session-id']]), [['tools/call', session]]);
  const closing = server.received.length;
  await own.close();
  assert.deepEqual(server.received.slice(closing).map((r) => [r.method, r.headers['mcp-session-id']]), [['DELETE', session]]);
});

test(`a session is ended, not kept, once it has carried ${MAX_REQUESTS_PER_SESSION} requests; the next call opens a new one`, async () => {
  const own = createMcpRuntime();
  answer = () => ({ content: [], structuredContent: { ok: true } });
  const first = server.received.length;
  const sent = () => server.received.slice(first);
  const initializes = () => sent().filter((r) => r.method === 'POST' && JSON.parse(r.body).method === 'initialize').length;
  for (let call = 0; initializes() < 2; call++) {
    assert.ok(call <= MAX_REQUESTS_PER_SESSION, 'no new session after as many calls as the bound');
    assert.equal((await own.run(runRequest(target(), { input: { q: call } }))).kind, 'output');
  }
  const session = sent().find((r) => r.headers['mcp-session-id'])!.headers['mcp-session-id'];
  await waitFor(async () => sent().some((r) => r.method === 'DELETE' && r.headers['mcp-session-id'] === session), 5000);
  // Its initialize (sent before the server named the session), then every request carrying its id but the DELETE.
  const carried = sent().filter((r) => r.headers['mcp-session-id'] === session && r.method !== 'DELETE').length + 1;
  assert.equal(carried, MAX_REQUESTS_PER_SESSION);
  await own.close();
});

test('concurrent calls each get a session of their own, kept afterwards', async () => {
  const own = createMcpRuntime();
  answer = () => ({ content: [], structuredContent: { ok: true } });
  const before = server.received.length;
  const outcomes = await Promise.all(Array.from({ length: 3 }, () => own.run(runRequest(target(), { input: { q: 1 } }))));
  assert.deepEqual(outcomes.map((o) => o.kind), ['output', 'output', 'output']);
  const initializes = server.received.slice(before).filter((r) => r.method === 'POST' && JSON.parse(r.body).method === 'initialize');
  assert.equal(initializes.length, 3);
  const later = server.received.length;
  await Promise.all(Array.from({ length: 3 }, () => own.run(runRequest(target(), { input: { q: 1 } }))));
  assert.deepEqual(server.received.slice(later).filter((r) => r.method === 'POST').map((r) => JSON.parse(r.body).method), ['tools/call', 'tools/call', 'tools/call']);
  await own.close();
});

test('a kept session the server forgot (404) is replaced: the call is sent once more on a new session', async () => {
  const own = createMcpRuntime();
  answer = () => ({ content: [], structuredContent: { n: server.calls.length } });
  assert.equal((await own.run(runRequest(target(), { input: { q: 1 } }))).kind, 'output');
  server.forgetSessions();
  const calls = server.calls.length;
  const before = server.received.length;
  const outcome = await own.run(runRequest(target(), { input: { q: 2 } }));
  assert.deepEqual(outcome, { kind: 'output', output: { n: calls + 1 }, units: null, quote: null });
  assert.equal(server.calls.length, calls + 1, 'the tool ran once');
  assert.deepEqual(server.received.slice(before).filter((r) => r.method === 'POST').map((r) => JSON.parse(r.body).method), ['tools/call', 'initialize', 'notifications/initialized', 'tools/call']);
  await own.close();
});

test('the hard timeout cancels the call: the tool receives notifications/cancelled and its signal aborts', async () => {
  let release = () => {};
  const controller = new AbortController();
  // The hard timeout fires while the tool runs.
  answer = () => {
    setImmediate(() => controller.abort());
    return new Promise((resolve) => (release = () => resolve({ content: [], structuredContent: { late: true } })));
  };
  const first = server.messages.length;
  const outcome = await runtime.run(runRequest(target(), { signal: controller.signal }));
  release();
  assert.equal(outcome.kind === 'failure' && outcome.code, 'timeout');
  const call = server.calls.at(-1)!;
  await abortedOf(call.signal);
  const messages = server.messages.slice(first);
  // The last one: a kept session the server had forgotten answers 404 first, and the call goes on a new session.
  const callRequest = messages.filter((m) => 'method' in m && m.method === 'tools/call').at(-1) as { id: number };
  const cancelled = messages.filter((m) => 'method' in m && m.method === 'notifications/cancelled').map((m) => (m as unknown as { params: { requestId: unknown } }).params.requestId);
  // Only the in-flight tools/call: initialize (id 0) MUST NOT be cancelled (MCP 2025-11-25, cancellation).
  assert.deepEqual(cancelled, [callRequest.id]);
});

test('a timeout during initialize sends no notifications/cancelled at all: initialize is never cancelled', async () => {
  const controller = new AbortController();
  const silent = await startHttp((req, res, body) => {
    // Never answers initialize; the hard timeout fires meanwhile.
    if (req.method === 'POST' && body.includes('"initialize"')) return void controller.abort();
    res.writeHead(202).end();
  });
  try {
    const outcome = await runtime.run(runRequest(remoteTarget('mcp', `${silent.url}/mcp`, 'echo'), { signal: controller.signal }));
    assert.equal(outcome.kind === 'failure' && outcome.code, 'timeout');
    const methods = silent.received.map((request) => (request.body ? (JSON.parse(request.body) as { method?: string }).method : request.method));
    assert.deepEqual(methods, ['initialize']);
  } finally {
    await silent.close();
  }
});

test('a server that drops the stream mid-call is agent_error at once, not a timeout', async () => {
  answer = () => {
    setTimeout(() => server.drop(), 50);
    return new Promise(() => {});
  };
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 5000);
  const started = Date.now();
  const outcome = await runtime.run(runRequest(target(), { signal: controller.signal }));
  clearTimeout(timer);
  assert.deepEqual(outcome, { kind: 'failure', code: 'agent_error', message: 'the MCP server closed the stream without answering the call' });
  assert.ok(Date.now() - started < 2000);
});

test('an unreachable endpoint is runtime_unavailable', async () => {
  const outcome = await runtime.run(runRequest(remoteTarget('mcp', `${await deadEndpoint()}/mcp`, 'echo')));
  assert.equal(outcome.kind === 'failure' && outcome.code, 'runtime_unavailable');
  assert.match((outcome as { message: string }).message, /ECONNREFUSED/);
});

test('a redirect is agent_error and never followed', async () => {
  const elsewhere = await startHttp((_req, res) => res.writeHead(500).end());
  const redirecting = await startHttp((_req, res) => res.writeHead(307, { location: `${elsewhere.url}/mcp` }).end());
  try {
    const outcome = await runtime.run(runRequest(remoteTarget('mcp', `${redirecting.url}/mcp`, 'echo')));
    assert.equal(outcome.kind === 'failure' && outcome.code, 'agent_error');
    assert.match((outcome as { message: string }).message, /redirects are not followed/);
    assert.equal(elsewhere.received.length, 0);
  } finally {
    await Promise.all([elsewhere.close(), redirecting.close()]);
  }
});

test('a 401 from the endpoint is agent_error naming the credential', async () => {
  const locked = await startHttp((_req, res) => res.writeHead(401).end('no'));
  try {
    const outcome = await runtime.run(runRequest(remoteTarget('mcp', `${locked.url}/mcp`, 'echo')));
    assert.equal(outcome.kind === 'failure' && outcome.code, 'agent_error');
    assert.match((outcome as { message: string }).message, /HTTP 401: the endpoint refused the credential/);
  } finally {
    await locked.close();
  }
});

test('an answer over the size limit is agent_error', async () => {
  const small = createMcpRuntime({ max_answer_bytes: 64 * 1024 });
  answer = () => ({ content: [], structuredContent: { blob: 'x'.repeat(100 * 1024) } });
  const outcome = await small.run(runRequest(target()));
  assert.deepEqual(outcome, { kind: 'failure', code: 'agent_error', message: 'the answer is larger than 65536 bytes (gateway §7 "Limits")' });
});

test('an unknown tool is agent_error; a non-object input is refused before any request', async () => {
  const unknown = await runtime.run(runRequest(remoteTarget('mcp', `${server.url}/mcp`, 'nope'), { input: {} }));
  assert.equal(unknown.kind === 'failure' && unknown.code, 'agent_error');
  const before = server.received.length;
  const scalar = await runtime.run(runRequest(target(), { input: 'text' }));
  assert.equal(scalar.kind === 'failure' && scalar.code, 'agent_error');
  assert.equal(server.received.length, before);
});

/**
 * An SSE-polling server (event store, `retry` 20 ms) whose tool closes its POST stream after the
 * priming event, then answers through `then`, which may wait for `resumed`: the client's GET
 * with `Last-Event-ID`.
 */
async function pollingServer(then: (resumed: Promise<void>) => Promise<CallToolResult>): Promise<TestMcpServer> {
  let resumedNow = () => {};
  return startMcpServer(
    (call) => {
      const resumed = new Promise<void>((resolve) => (resumedNow = resolve));
      call.closeSSEStream!();
      return then(resumed);
    },
    { resumable: { retry_ms: 20, onResume: () => resumedNow() } },
  );
}

/** The `Last-Event-ID` of every GET `server` received. */
const resumptions = (server: TestMcpServer) => server.received.filter((r) => r.method === 'GET' && r.headers['last-event-id']).map((r) => r.headers['last-event-id']);

test('SSE polling: a server that closes the POST stream after its priming event is resumed with GET Last-Event-ID, and its stored result taken', async () => {
  const polling = await pollingServer(async () => ({ content: [], structuredContent: { polled: true } }));
  try {
    const outcome = await runtime.run(runRequest(remoteTarget('mcp', `${polling.url}/mcp`, 'echo'), { input: { q: 1 } }));
    assert.deepEqual(outcome, { kind: 'output', output: { polled: true }, units: null, quote: null });
    assert.equal(resumptions(polling).length, 1);
  } finally {
    await polling.close();
  }
});

test('SSE polling: a result sent only after the client resumed arrives on the resumed stream', async () => {
  const polling = await pollingServer(async (resumed) => {
    await resumed;
    return { content: [], structuredContent: { late: 'but here' }, _meta: { 'holon/units': 2 } };
  });
  try {
    const outcome = await runtime.run(runRequest(remoteTarget('mcp', `${polling.url}/mcp`, 'echo'), { input: { q: 1 } }));
    assert.deepEqual(outcome, { kind: 'output', output: { late: 'but here' }, units: 2, quote: null });
    assert.equal(resumptions(polling).length, 1);
  } finally {
    await polling.close();
  }
});

test('SSE polling: a resumed call that never answers ends at the hard timeout, cancelling only the tools/call', async () => {
  const controller = new AbortController();
  const polling = await pollingServer(async (resumed) => {
    await resumed;
    controller.abort();
    return new Promise(() => {});
  });
  try {
    const outcome = await runtime.run(runRequest(remoteTarget('mcp', `${polling.url}/mcp`, 'echo'), { input: { q: 1 }, signal: controller.signal }));
    assert.equal(outcome.kind === 'failure' && outcome.code, 'timeout');
    const call = polling.messages.find((m) => 'method' in m && m.method === 'tools/call') as { id: number };
    const cancelled = polling.messages.filter((m) => 'method' in m && m.method === 'notifications/cancelled').map((m) => (m as unknown as { params: { requestId: unknown } }).params.requestId);
    assert.deepEqual(cancelled, [call.id]);
  } finally {
    await polling.close();
  }
});

test('SSE polling: a server that refuses the resumption is agent_error at once, not a wait for the timeout', async () => {
  const polling = await pollingServer(() => new Promise(() => {}));
  // Refuse every GET that resumes (a server that lost its event store).
  const refusing = await startHttp(async (req, res, body) => {
    if (req.method === 'GET' && req.headers['last-event-id']) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}');
    const upstream = await fetch(`${polling.url}${req.url}`, { method: req.method, headers: req.headers as Record<string, string>, body: req.method === 'POST' ? body : undefined });
    res.writeHead(upstream.status, Object.fromEntries(upstream.headers));
    if (upstream.body) for await (const chunk of upstream.body) res.write(chunk);
    res.end();
  });
  const controller = new AbortController();
  const backstop = setTimeout(() => controller.abort(), 10_000);
  try {
    const outcome = await runtime.run(runRequest(remoteTarget('mcp', `${refusing.url}/mcp`, 'echo'), { input: { q: 1 }, signal: controller.signal }));
    assert.equal(controller.signal.aborted, false, 'ended before the timeout');
    assert.deepEqual(outcome, { kind: 'failure', code: 'agent_error', message: 'the MCP server closed the stream and refused to resume it (HTTP 404)' });
  } finally {
    clearTimeout(backstop);
    await Promise.all([refusing.close(), polling.close()]);
  }
});
