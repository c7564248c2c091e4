/**
 * `/mcp` served by any process (issue 27 §1): two gateway processes on one Postgres database and
 * a binding process; each client sends its requests alternately to one process and the other,
 * as a round-robin balancer does. Both processes' MCP mandate is `dev/careful`, so every call of
 * `acme/estimate` (worst case 1.00 EUR) is held for a human and, approved, bills 0.02.
 * - MCP 2025-11-25 (the SDK's client): initialize, tools/list and tools/call land on different
 *   processes; the approval form travels on the call's own stream and the client's answer reaches
 *   the other process, which hands it over through the database.
 * - MCP 2026-07-28: server/discover, then the call held as an input request on one process and
 *   its retry, approving it, on the other.
 * Postgres only: PGlite is one process's directory.
 */
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { fundDev, startBinding, type BindingProcess, type Store } from '../helpers/bank.ts';
import { EXAMPLE_AGENTS, freshStore, onPostgres } from '../helpers/gateway.ts';
import { spawnGateway, type GatewayChild } from '../helpers/gateway-child.ts';
import { modern } from '../helpers/mcp.ts';

const TASKS = { tasks: ['write tests', 'fix the bug'] };

describe('/mcp across two gateway processes on one Postgres', { skip: onPostgres() ? false : "Postgres only (DATABASE_URL): PGlite is one process's directory" }, () => {
  let store: Store;
  let binding: BindingProcess;
  const gateways: GatewayChild[] = [];
  const clients: Client[] = [];

  before(async () => {
    store = await freshStore();
    binding = await startBinding(store);
    for (let i = 0; i < 2; i++) {
      gateways.push(await spawnGateway({ port: 0, ...store, clearing_url: binding.url, agent_dirs: [EXAMPLE_AGENTS], exclude: [], agents_host_port: null }, { HOLON_MCP_MANDATE: 'dev/careful' }));
    }
    await fundDev(binding, store);
  });
  after(async () => {
    for (const client of clients) await client.close();
    for (const gateway of gateways) await gateway.stop();
    await binding?.stop();
    await rm(store.db, { recursive: true, force: true });
  });

  test('2025-11-25: initialize, tools/list and tools/call with an approval, alternating between the processes', async () => {
    // A round-robin balancer in the client's fetch: each POST goes to the next process; which one served what is recorded.
    const served: Array<[string, number]> = [];
    let turn = 0;
    const roundRobin = async (url: string | URL, init?: RequestInit): Promise<Response> => {
      if ((init?.method ?? 'GET') === 'GET') return new Response(null, { status: 405 }); // no GET stream: the form must come on the call's own
      const process = turn++ % 2;
      const body = JSON.parse(String(init!.body));
      served.push([body.method ?? `answer:${body.result?.action}`, process]);
      return fetch(new URL(new URL(url).pathname, gateways[process]!.url), init);
    };
    const asked: string[] = [];
    const client = new Client({ name: 'round-robin', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async (request): Promise<ElicitResult> => {
      asked.push(request.params.message);
      return { action: 'accept', content: { approve: true } };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gateways[0]!.url}/mcp`), { fetch: roundRobin }));
    clients.push(client);
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name), ['search_agents', 'call_agent', 'read_receipts', 'list_approvals']);
    const result = await client.callTool({ name: 'call_agent', arguments: { agent: 'acme/estimate', input: TASKS } });
    const content = result.structuredContent as any;
    assert.equal(asked.length, 1);
    assert.match(asked[0]!, /^Approve acme\/estimate@1\.0\.0 under dev\/careful\?/);
    assert.equal(content.status, 'succeeded');
    assert.deepEqual(content.output, { hours: 3 });
    assert.deepEqual(content.receipt.cost, { own: '0.02', downstream: '0.00', total: '0.02' });
    // The session opened on one process and went on on the other; the answer reached the process that did not ask.
    assert.deepEqual(served, [
      ['initialize', 0],
      ['notifications/initialized', 1],
      ['tools/list', 0],
      ['tools/call', 1],
      ['answer:accept', 0],
    ]);
  });

  test('2026-07-28: server/discover on one process, the held call on one and its approving retry on the other', async () => {
    const [a, b] = gateways.map((gateway) => gateway.url) as [string, string];
    const discover = await modern(a, 'server/discover');
    assert.deepEqual(discover.body.result.supportedVersions, ['2026-07-28', '2025-11-25']);
    const list = await modern(b, 'tools/list');
    assert.equal(list.body.result.tools.length, 4);
    const call = { name: 'call_agent', arguments: { agent: 'acme/estimate', input: TASKS } };
    const held = await modern(a, 'tools/call', call, { capabilities: { elicitation: {} } });
    assert.equal(held.body.result.resultType, 'input_required');
    const done = await modern(b, 'tools/call', { ...call, inputResponses: { approve: { action: 'accept', content: { approve: true } } }, requestState: held.body.result.requestState }, { capabilities: { elicitation: {} } });
    assert.equal(done.status, 200);
    assert.equal(done.body.result.resultType, 'complete');
    assert.equal(done.body.result.structuredContent.status, 'succeeded');
    assert.deepEqual(done.body.result.structuredContent.output, { hours: 3 });
    assert.deepEqual(done.body.result.structuredContent.receipt.cost, { own: '0.02', downstream: '0.00', total: '0.02' });
  });
});
