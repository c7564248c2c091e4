/**
 * Issue 22 §2: one trace per call, end to end. A local OTLP/HTTP receiver (JSON) collects the
 * spans of a call whose orchestrator delegates to an MCP agent that echoes the trace context it
 * received, with the gateway settling through the reference binding over HTTP. The tree is
 * complete and parented across caller, gateway, agent and binding, and no span carries the input.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { startClearingServer, type RunningClearing } from '../../src/clearing/server.ts';
import { flushTraces } from '../../src/observe/trace.ts';
import { freshStore, FIXTURE_AGENTS, startTestGateway, storeTarget, waitFor, type TestGateway } from '../helpers/gateway.ts';
import { startHttp, startMcpServer, type TestMcpServer, type TestServer } from '../helpers/runtimes.ts';

/** One span as OTLP/HTTP JSON carries it (ids in hex). */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
}

const SERVER = 2;
const CLIENT = 3;
/** The caller's own trace and span: the gateway's spans continue them. */
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
/** A marker in the input: no span may carry it (gateway §4). */
const MARKER = 'secret-input-marker-7f3a';

const spans: OtlpSpan[] = [];
let receiver: TestServer;
let agent: TestMcpServer;
let binding: RunningClearing;
let gw: TestGateway;
let agentsDir: string;

/** The manifests of the test's two agents: an orchestrator (dev runtime) and the MCP agent it calls. */
async function writeAgents(dir: string, endpoint: string): Promise<void> {
  const behave = pathToFileURL(path.join(FIXTURE_AGENTS, '_shared', 'behave.mjs')).href;
  const input = `interface:
  input: { type: object, properties: { calls: { type: array, items: { type: object } }, marker: { type: string } } }
  output: { type: object }`;
  await mkdir(path.join(dir, 'gtt--orch'));
  await writeFile(path.join(dir, 'gtt--orch', 'agent.mjs'), `export { default } from '${behave}';\n`);
  await writeFile(
    path.join(dir, 'gtt--orch', 'holon.yaml'),
    `id: gtt/orch\nversion: 1.0.0\nsummary: delegates to gtt/echo\ncapabilities: [gtt.orch]\n${input}\nprice: { model: per_run, currency: EUR, amount: "0.10" }\nruntime: { kind: dev, limits: { timeout_s: 30 } }\nlicense: Apache-2.0\ncalls:\n  - { agent: gtt/echo, max_cost: "0.05" }\ndownstream: { mode: passthrough, cap: "0.05" }\n`,
  );
  await mkdir(path.join(dir, 'gtt--echo'));
  await writeFile(
    path.join(dir, 'gtt--echo', 'holon.yaml'),
    `id: gtt/echo\nversion: 1.0.0\nsummary: echoes the trace context it received\ncapabilities: [gtt.echo]\n${input}\nprice: { model: per_run, currency: EUR, amount: "0.05" }\nruntime: { kind: mcp, endpoint: "${endpoint}", tool: echo, limits: { timeout_s: 30 } }\nlicense: Apache-2.0\n`,
  );
}

before(async () => {
  receiver = await startHttp((req, res, body) => {
    if (req.url === '/v1/traces') for (const resource of JSON.parse(body).resourceSpans ?? []) for (const scope of resource.scopeSpans ?? []) spans.push(...scope.spans);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
  process.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/json';
  agent = await startMcpServer((call) => ({ content: [], structuredContent: { traceparent: String(call.meta?.traceparent ?? '') } }));
  agentsDir = await mkdtemp(path.join(tmpdir(), 'holon-trace-agents-'));
  await writeAgents(agentsDir, `${agent.url}/mcp`);
  const store = await freshStore();
  binding = await startClearingServer({ target: storeTarget(store, 'clearing'), port: 0, logger: pino({ level: 'silent' }) });
  gw = await startTestGateway({ store, clearing_url: binding.url, extra_agent_dirs: [agentsDir] });
});

after(async () => {
  await gw?.close();
  await binding?.close();
  await agent?.close();
  await receiver?.close();
  if (agentsDir) await rm(agentsDir, { recursive: true, force: true });
});

/** The spans of the caller's trace, once the gateway's have arrived. */
async function collected(): Promise<OtlpSpan[]> {
  return waitFor(async () => {
    await flushTraces();
    const ours = spans.filter((span) => span.traceId === CALLER_TRACE);
    return ours.filter((span) => span.name === 'holon call').length >= 2 && ours.some((span) => span.name.startsWith('POST /v0/')) ? ours : null;
  });
}

describe('§2 one trace per call, across gateway, agent and binding', () => {
  test('a delegated call to an MCP agent: the stages, the child call under the run, the agent and the binding continue the trace', async () => {
    const mandate = await gw.mandate();
    const response = await gw
      .call({ mandate: mandate.id, agent: 'gtt/orch', input: { calls: [{ agent: 'gtt/echo', input: { marker: MARKER } }], marker: MARKER } })
      .set('traceparent', `00-${CALLER_TRACE}-${CALLER_SPAN}-01`)
      .expect(200);
    await gw.settle();
    const trace = await collected();
    const byId = new Map(trace.map((span) => [span.spanId, span]));
    const parentOf = (span: OtlpSpan) => (span.parentSpanId ? byId.get(span.parentSpanId) : undefined);
    const named = (name: string) => trace.filter((span) => span.name === name);

    // The caller's traceparent is honoured: the gateway's server span is the child of the caller's span.
    const server = trace.find((span) => span.name === 'POST /v0/calls')!;
    assert.equal(server.kind, SERVER);
    assert.equal(server.parentSpanId, CALLER_SPAN);

    // The root call under the server span, each stage of gateway §1 under it.
    const [root, child] = named('holon call').sort((a, b) => (parentOf(a) === server ? -1 : parentOf(b) === server ? 1 : 0));
    assert.equal(parentOf(root), server);
    const stagesOf = (call: OtlpSpan) => trace.filter((span) => span.parentSpanId === call.spanId && attribute(span, 'holon.stage') !== undefined).map((span) => span.name);
    assert.deepEqual(stagesOf(root), ['resolve', 'check input', 'admit', 'reserve', 'run', 'check output', 'settle']);

    // The delegated call is a child of its parent's run span.
    assert.equal(parentOf(child)!.name, 'run');
    assert.equal(parentOf(parentOf(child)!), root);
    assert.equal(attribute(root, 'holon.receipt.id'), response.body.receipt.id);
    assert.equal(attribute(child, 'holon.receipt.id'), response.body.receipt.calls[0].id);
    assert.equal(attribute(child, 'holon.agent'), 'gtt/echo@1.0.0');
    assert.equal(attribute(child, 'holon.outcome'), 'succeeded');

    // The MCP agent got the context of the gateway's tools/call span, in `_meta` and as an HTTP header.
    const toolCall = named('tools/call echo')[0];
    assert.equal(toolCall.kind, CLIENT);
    assert.equal(parentOf(parentOf(toolCall)!), child);
    const echoed = `00-${CALLER_TRACE}-${toolCall.spanId}-01`;
    assert.equal(response.body.receipt.calls.length, 1);
    assert.equal(agent.calls.at(-1)!.meta?.traceparent, echoed);
    const posted = agent.received.filter((request) => request.method === 'POST' && request.body.includes('"tools/call"')).at(-1)!;
    assert.equal(posted.headers.traceparent, echoed);

    // The binding continues the trace: its server span is the child of the gateway's clearing request span.
    const openHold = named('clearing open-hold').find((span) => parentOf(span) === root)!;
    assert.equal(openHold.kind, CLIENT);
    const atBinding = trace.find((span) => span.kind === SERVER && span.parentSpanId === openHold.spanId);
    assert.ok(atBinding, 'the binding answered open-hold inside the trace');
    assert.equal(atBinding.name, 'POST /internal/ledger/hold');

    // Database spans sit inside the call; no span carries the input.
    assert.ok(trace.some((span) => attribute(span, 'db.system.name') === 'postgresql'));
    assert.ok(!JSON.stringify(trace).includes(MARKER), 'no span carries the input');
  });
});

/** A span attribute's value (string or int), or undefined. */
function attribute(span: OtlpSpan, key: string): unknown {
  const found = span.attributes?.find((entry) => entry.key === key)?.value;
  return found === undefined ? undefined : (found.stringValue ?? found.intValue ?? found.boolValue);
}
