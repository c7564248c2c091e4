/** The webhook runtime: each row of the webhook table (gateway §6) and DESIGN open points 11-13. */
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { after, before, test } from 'node:test';
import { MAX_ANSWER_BYTES } from '../../src/runtimes/http.ts';
import type { RunOutcome } from '../../src/runtimes/types.ts';
import { createWebhookRuntime } from '../../src/runtimes/webhook.ts';
import { deadEndpoint, remoteTarget, runRequest, startHttp, type TestServer } from '../helpers/runtimes.ts';

/** How the test endpoint answers the next call. */
let respond: (req: IncomingMessage, res: ServerResponse, body: string) => void = (_req, res) => res.end('{}');
let server: TestServer;
before(async () => {
  server = await startHttp((req, res, body) => respond(req, res, body));
});
after(() => server.close());

const runtime = createWebhookRuntime();

/** Calls the endpoint with `respond` answering. */
function callWith(answer: typeof respond, overrides: Parameters<typeof runRequest>[1] = {}): Promise<RunOutcome> {
  respond = answer;
  return runtime.run(runRequest(remoteTarget('webhook', `${server.url}/hook`), { input: { text: 'hi' }, call_id: 'r42', ...overrides }));
}

const json = (status: number, body: unknown) => (_req: IncomingMessage, res: ServerResponse) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

test('POST with the input as JSON, x-holon-agent, x-holon-call and the Bearer credential', async () => {
  await callWith(json(200, {}), { credential: 'tok_author' });
  const request = server.received.at(-1)!;
  assert.equal(request.method, 'POST');
  assert.equal(request.path, '/hook');
  assert.deepEqual(JSON.parse(request.body), { text: 'hi' });
  assert.equal(request.headers['content-type'], 'application/json');
  assert.equal(request.headers['x-holon-agent'], 'acme/echo@1.2.3');
  assert.equal(request.headers['x-holon-call'], 'r42');
  assert.equal(request.headers.authorization, 'Bearer tok_author');
});

test('no credential set: no Authorization, and no other credential header of any kind (open point 13)', async () => {
  await callWith(json(200, {}));
  const names = Object.keys(server.received.at(-1)!.headers).sort();
  const fetchDefaults = ['accept-encoding', 'accept-language', 'connection', 'content-length', 'host', 'sec-fetch-mode', 'user-agent'];
  assert.deepEqual(
    names.filter((name) => !fetchDefaults.includes(name)),
    ['accept', 'content-type', 'x-holon-agent', 'x-holon-call'],
  );
});

test('a 2xx JSON body is the output', async () => {
  assert.deepEqual(await callWith(json(201, { words: 2 })), { kind: 'output', output: { words: 2 }, units: null, quote: null });
});

test('an {"error": {code, message}} body is an error outcome, with a 2xx or any other status (open point 11)', async () => {
  for (const status of [200, 422, 500]) {
    const outcome = await callWith(json(status, { error: { code: 'not_found', message: 'no such invoice' } }));
    assert.deepEqual(outcome, { kind: 'error', code: 'not_found', message: 'no such invoice', units: null, quote: null }, String(status));
  }
});

test('an error body whose code is not an error code is agent_error', async () => {
  const outcome = await callWith(json(400, { error: { code: 'Not Found!' } }));
  assert.equal(outcome.kind === 'failure' && outcome.code, 'agent_error');
});

test('a non-2xx status without an error body is agent_error', async () => {
  assert.deepEqual(await callWith(json(503, { status: 'down' })), {
    kind: 'failure',
    code: 'agent_error',
    message: 'the endpoint answered 503 without an {"error": {"code"}} body',
  });
  const locked = await callWith(json(401, { message: 'who are you' }));
  assert.match((locked as { message: string }).message, /refused the credential/);
});

test('a body that is not JSON is agent_error', async () => {
  const outcome = await callWith((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Workflow started</h1>'));
  assert.deepEqual(outcome, { kind: 'failure', code: 'agent_error', message: 'the endpoint answered 200 with a body that is not JSON: <h1>Workflow started</h1>' });
});

test('a redirect is agent_error and its target is never contacted', async () => {
  const target = await startHttp((_req, res) => res.end('{}'));
  try {
    const outcome = await callWith((_req, res) => res.writeHead(302, { location: `${target.url}/elsewhere` }).end());
    assert.equal(outcome.kind === 'failure' && outcome.code, 'agent_error');
    assert.match((outcome as { message: string }).message, /answered 302 to http:\/\/127\.0\.0\.1:\d+\/elsewhere: redirects are not followed/);
    assert.equal(target.received.length, 0);
  } finally {
    await target.close();
  }
});

test('the hard timeout aborts the request: timeout, and the endpoint sees the connection close', async () => {
  let closed!: Promise<void>;
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 100);
  const outcome = await callWith(
    (_req, res) => {
      closed = new Promise((resolve) => res.on('close', () => resolve()));
    },
    { signal: controller.signal },
  );
  assert.equal(outcome.kind === 'failure' && outcome.code, 'timeout');
  await closed;
});

test('a timeout while the body is still streaming is a timeout too', async () => {
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 100);
  const outcome = await callWith((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).write('{"partial": '), { signal: controller.signal });
  assert.equal(outcome.kind === 'failure' && outcome.code, 'timeout');
});

test('an answer of 10 MiB passes; one byte more is agent_error, streamed or declared', async () => {
  const exact = JSON.stringify('x'.repeat(MAX_ANSWER_BYTES - 2));
  const fits = await callWith((_req, res) => res.writeHead(200).end(exact));
  assert.equal(fits.kind, 'output');
  const tooLarge = { kind: 'failure', code: 'agent_error', message: `the answer is larger than ${MAX_ANSWER_BYTES} bytes (gateway §7 "Limits")` };
  const over = JSON.stringify('x'.repeat(MAX_ANSWER_BYTES - 1));
  assert.deepEqual(await callWith((_req, res) => res.writeHead(200).end(over)), tooLarge);
  const chunked = (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    for (let i = 0; i < 11; i++) res.write(Buffer.alloc(1024 * 1024, 0x20));
    res.end('{}');
  };
  assert.deepEqual(await callWith(chunked), tooLarge);
  assert.deepEqual(await callWith((_req, res) => res.writeHead(200, { 'content-length': String(MAX_ANSWER_BYTES + 1) }).write('{')), tooLarge);
});

test('an unreachable endpoint is runtime_unavailable', async () => {
  const outcome = await runtime.run(runRequest(remoteTarget('webhook', `${await deadEndpoint()}/hook`)));
  assert.equal(outcome.kind === 'failure' && outcome.code, 'runtime_unavailable');
  assert.match((outcome as { message: string }).message, /ECONNREFUSED/);
});
