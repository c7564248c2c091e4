/**
 * `/mcp` on the hosted gateway (gateway §7 "/mcp under keys", "Approvals and attended
 * clients"): only an agent key opens a session, which runs under the key's mandate; an
 * `ask_in_client` key gets the approval form through elicitation, another key's held call stays
 * pending; a session belongs to the key that opened it.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { ADMIN_KEY, bearer, carefulMandate, useHostedAccount, useTestHosted } from '../helpers/hosted.ts';
import { setUp } from '../helpers/hooks.ts';

const clients: Client[] = [];
// The clients close before the gateway they talk to (after hooks run in the order they are registered).
after(async () => {
  for (const client of clients) await client.close();
});
const hosted = useTestHosted();
const account = useHostedAccount(hosted);
let careful: string;
setUp(async () => {
  careful = await carefulMandate(hosted, account);
});

/** A client of `/mcp` with `key`; with elicitation, it approves every form and counts them. */
async function connect(key: string, elicit: boolean): Promise<{ client: Client; asked: number[] }> {
  const asked: number[] = [];
  const client = new Client({ name: 'hosted-mcp-test', version: '1.0.0' }, elicit ? { capabilities: { elicitation: {} } } : {});
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, async () => {
      asked.push(1);
      return { action: 'accept', content: { approve: true } };
    });
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(`${hosted.running.url}/mcp`), { requestInit: { headers: bearer(key) } }));
  clients.push(client);
  return { client, asked };
}

const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } };

test('/mcp answers 401 without a key and 403 to a human or the admin key', async () => {
  const post = (headers: Record<string, string>) => hosted.http.post('/mcp').set({ accept: 'application/json, text/event-stream', ...headers }).send(initialize);
  const statuses = [(await post({})).status, (await post(bearer(account.human))).status, (await post(bearer(ADMIN_KEY))).status];
  assert.deepEqual(statuses, [401, 403, 403]);
});

test('a session runs under the agent key\'s mandate', async () => {
  const { client } = await connect(account.agent, false);
  const result = await client.callTool({ name: 'call_agent', arguments: { agent: 'gt/run', input: { do: 'ok' } } });
  const content = result.structuredContent as { status: string; receipt: { mandate: string; payer: string } };
  assert.deepEqual([content.status, content.receipt.mandate, content.receipt.payer], ['succeeded', account.mandate, account.handle]);
});

test('an ask_in_client key approves through elicitation; another key leaves the call pending', async () => {
  const attended = (await hosted.http.post('/v0/keys').set(bearer(account.human)).send({ mandate: careful, ask_in_client: true }).expect(201)).body.key;
  const unattended = (await hosted.http.post('/v0/keys').set(bearer(account.human)).send({ mandate: careful }).expect(201)).body.key;
  const asking = await connect(attended, true);
  const ran = (await asking.client.callTool({ name: 'call_agent', arguments: { agent: 'gt/run', input: { do: 'ok' } } })).structuredContent as { status: string };
  assert.deepEqual([ran.status, asking.asked.length], ['succeeded', 1]);
  const silent = await connect(unattended, true);
  const held = (await silent.client.callTool({ name: 'call_agent', arguments: { agent: 'gt/run', input: { do: 'ok' } } })).structuredContent as { status: string };
  assert.deepEqual([held.status, silent.asked.length], ['pending_approval', 0]);
});

test('a session opened by one key is unknown to another', async () => {
  const { client } = await connect(account.agent, false);
  const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId!;
  const other = await hosted.signup();
  const response = await hosted.http
    .post('/mcp')
    .set({ accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25', ...bearer(other.agent) })
    .send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
  assert.equal(response.status, 404);
});
