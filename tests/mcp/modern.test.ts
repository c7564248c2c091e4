/**
 * `/mcp` in MCP 2026-07-28 (stateless: no initialize, no session, `_meta` on every request,
 * `server/discover`, input requests), written from the revision's text, on a dev gateway whose
 * MCP mandate is `dev/careful` (a worst case above 0.05 EUR needs a human: `acme/estimate`
 * quotes at most 1.00, so each of its calls is held; it then bills 0.02 for two tasks). Raw
 * HTTP: no SDK client speaks 2026-07-28 yet.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseMoney } from '../../src/contracts/money.ts';
import type { RunningGateway } from '../../src/serve/gateway.ts';
import { startFreshDevGateway } from '../helpers/gateway.ts';
import { useOpened, withEnv } from '../helpers/hooks.ts';
import { modern, VERSION } from '../helpers/mcp.ts';

const careful = useOpened('the careful gateway', () => withEnv({ HOLON_MCP_MANDATE: 'dev/careful' }, () => startFreshDevGateway()), (gateway) => gateway.close());

const ELICIT = { elicitation: { form: {} } };
const TASKS = { tasks: ['write tests', 'fix the bug'] };

/** The dev account's balance, micro-units, once the outbox has posted. */
async function devBalance(gateway: RunningGateway): Promise<number> {
  await gateway.outbox.drain();
  const body = (await (await fetch(`${gateway.url}/v0/accounts`)).json()) as { accounts: Array<{ account: string; balance: string }> };
  return parseMoney(body.accounts.find((a) => a.account === 'dev')!.balance);
}

test('server/discover names both revisions, the tools capability and the server, with no session', async () => {
  const { status, body } = await modern(careful.url, 'server/discover', {}, { id: 'discover-1' });
  assert.equal(status, 200);
  assert.deepEqual(body, {
    jsonrpc: '2.0',
    id: 'discover-1',
    result: {
      resultType: 'complete',
      supportedVersions: ['2026-07-28', '2025-11-25'],
      capabilities: { tools: {} },
      ttlMs: 300_000,
      cacheScope: 'public',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'holon-gateway', version: '0.1.0' } },
    },
  });
});

test('tools/list and tools/call answer without initialize; results carry resultType and no Mcp-Session-Id is minted', async () => {
  const list = await modern(careful.url, 'tools/list');
  assert.equal(list.status, 200);
  assert.deepEqual(list.body.result.tools.map((tool: { name: string }) => tool.name), ['search_agents', 'call_agent', 'read_receipts', 'list_approvals']);
  assert.deepEqual([list.body.result.resultType, list.body.result.ttlMs, list.body.result.cacheScope], ['complete', 300_000, 'public']);
  const response = await fetch(`${careful.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'mcp-protocol-version': VERSION, 'mcp-method': 'tools/call', 'mcp-name': 'call_agent' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'call_agent', arguments: { agent: 'acme/table-extract', input: { text: 'a;b' } }, _meta: { 'io.modelcontextprotocol/protocolVersion': VERSION, 'io.modelcontextprotocol/clientCapabilities': {} } } }),
  });
  assert.equal(response.headers.get('mcp-session-id'), null);
  const call = (await response.json()) as any;
  assert.equal(call.id, 7);
  assert.equal(call.result.resultType, 'complete');
  assert.equal(call.result.isError, false);
  assert.deepEqual(call.result.structuredContent.output, { rows: [['a', 'b']] });
  assert.deepEqual(call.result.structuredContent.receipt.cost, { own: '0.02', downstream: '0.00', total: '0.02' });
});

test('a held call is an input request; the retry with approve: true and its requestState runs it once and bills its quote', async () => {
  const before = await devBalance(careful);
  const first = await modern(careful.url, 'tools/call', { name: 'call_agent', arguments: { agent: 'acme/estimate', input: TASKS } }, { capabilities: ELICIT });
  assert.equal(first.status, 200);
  const asked = first.body.result;
  assert.equal(asked.resultType, 'input_required');
  assert.deepEqual(Object.keys(asked.inputRequests), ['approve']);
  assert.equal(asked.inputRequests.approve.method, 'elicitation/create');
  assert.match(asked.inputRequests.approve.params.message, /^Approve acme\/estimate@1\.0\.0 under dev\/careful\? Worst case 1\.00 EUR\. .+\.$/);
  assert.deepEqual(asked.inputRequests.approve.params.requestedSchema.required, ['approve']);
  assert.equal(typeof asked.requestState, 'string');
  assert.equal(await devBalance(careful), before, 'nothing is billed while the human decides');

  const retry = { name: 'call_agent', arguments: { agent: 'acme/estimate', input: TASKS }, inputResponses: { approve: { action: 'accept', content: { approve: true } } }, requestState: asked.requestState };
  const done = await modern(careful.url, 'tools/call', retry, { capabilities: ELICIT });
  assert.equal(done.status, 200);
  assert.equal(done.body.result.resultType, 'complete');
  const content = done.body.result.structuredContent;
  assert.equal(content.status, 'succeeded');
  assert.deepEqual(content.output, { hours: 3 });
  assert.deepEqual(content.receipt.cost, { own: '0.02', downstream: '0.00', total: '0.02' });
  assert.equal(await devBalance(careful), before - 20_000);

  // The same retry again runs nothing again: the approval was decided once.
  const again = await modern(careful.url, 'tools/call', retry, { capabilities: ELICIT });
  assert.equal(again.body.result.structuredContent.receipt.id, content.receipt.id);
  assert.equal(again.body.result.structuredContent.status, 'succeeded');
  assert.equal(await devBalance(careful), before - 20_000);
});

test('declining rejects the held call; a retry without an answer is asked again; a client without elicitation gets pending_approval', async () => {
  const call = { name: 'call_agent', arguments: { agent: 'acme/estimate', input: TASKS } };
  const asked = (await modern(careful.url, 'tools/call', call, { capabilities: ELICIT })).body.result;
  const unanswered = await modern(careful.url, 'tools/call', { ...call, requestState: asked.requestState }, { capabilities: ELICIT });
  assert.equal(unanswered.body.result.resultType, 'input_required');
  assert.equal(unanswered.body.result.requestState, asked.requestState);
  const declined = await modern(careful.url, 'tools/call', { ...call, inputResponses: { approve: { action: 'decline' } }, requestState: asked.requestState }, { capabilities: ELICIT });
  assert.equal(declined.body.result.resultType, 'complete');
  assert.equal(declined.body.result.isError, true);
  assert.equal(declined.body.result.structuredContent.status, 'rejected');
  assert.equal(declined.body.result.structuredContent.error.code, 'approval_rejected');

  const pending = await modern(careful.url, 'tools/call', call);
  assert.equal(pending.body.result.resultType, 'complete');
  assert.equal(pending.body.result.structuredContent.status, 'pending_approval');
  assert.equal(pending.body.result.structuredContent.approval.status, 'pending');
});

test('a forged or mismatched requestState is refused with -32602 and decides nothing', async () => {
  const call = { name: 'call_agent', arguments: { agent: 'acme/estimate', input: TASKS } };
  const asked = (await modern(careful.url, 'tools/call', call, { capabilities: ELICIT })).body.result;
  const approve = { approve: { action: 'accept', content: { approve: true } } };
  const forged = await modern(careful.url, 'tools/call', { ...call, inputResponses: approve, requestState: Buffer.from('{"approval":"a999999"}').toString('base64url') }, { capabilities: ELICIT, id: 'forged' });
  assert.equal(forged.status, 400);
  assert.deepEqual(forged.body, { jsonrpc: '2.0', id: 'forged', error: { code: -32602, message: 'requestState names no approval this request may answer under dev/careful' } });
  const other = await modern(careful.url, 'tools/call', { name: 'call_agent', arguments: { agent: 'acme/estimate', input: { tasks: ['something else'] } }, inputResponses: approve, requestState: asked.requestState }, { capabilities: ELICIT, id: 9 });
  assert.equal(other.status, 400);
  assert.equal(other.body.id, 9);
  assert.equal(other.body.error.code, -32602);
  assert.match(other.body.error.message, /^requestState is for approval a\d+, whose input is not this call's/);
  const without = await modern(careful.url, 'tools/call', { ...call, inputResponses: approve, requestState: asked.requestState }, { id: 10 });
  assert.equal(without.status, 400, 'a request that declares no elicitation may not answer a form');
  const { approval } = JSON.parse(Buffer.from(asked.requestState, 'base64url').toString()) as { approval: string };
  const read = (await (await fetch(`${careful.url}/v0/approvals/${approval}`)).json()) as { approval: { status: string } };
  assert.equal(read.approval.status, 'pending', 'no refused retry decided the approval');
});

test('every refusal names the rule and carries the request id', async () => {
  const noMeta = await modern(careful.url, 'tools/list', {}, { meta: {}, id: 'm1' });
  assert.equal(noMeta.status, 400);
  assert.deepEqual(noMeta.body, {
    jsonrpc: '2.0',
    id: 'm1',
    error: { code: -32602, message: '_meta must carry io.modelcontextprotocol/protocolVersion (a string) and io.modelcontextprotocol/clientCapabilities (an object) on every request' },
  });
  const future = await modern(careful.url, 'tools/list', {}, { meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01', 'io.modelcontextprotocol/clientCapabilities': {} }, headers: { 'mcp-protocol-version': '2099-01-01' }, id: 2 });
  assert.equal(future.status, 400);
  assert.deepEqual(future.body.error, { code: -32022, message: 'Unsupported protocol version 2099-01-01: this server speaks 2026-07-28, 2025-11-25', data: { supported: ['2026-07-28', '2025-11-25'], requested: '2099-01-01' } });
  assert.equal(future.body.id, 2);
  const method = await modern(careful.url, 'tools/list', {}, { headers: { 'mcp-method': 'tools/call' }, id: 3 });
  assert.deepEqual([method.status, method.body.id, method.body.error.code], [400, 3, -32020]);
  const name = await modern(careful.url, 'tools/call', { name: 'call_agent', arguments: {} }, { headers: { 'mcp-name': 'read_receipts' }, id: 4 });
  assert.deepEqual([name.status, name.body.id, name.body.error.code], [400, 4, -32020]);
  const encoded = await modern(careful.url, 'tools/call', { name: 'list_approvals', arguments: {} }, { headers: { 'mcp-name': `=?base64?${Buffer.from('list_approvals').toString('base64')}?=` }, id: 5 });
  assert.deepEqual([encoded.status, encoded.body.result.resultType], [200, 'complete'], 'a Base64-sentinel Mcp-Name is decoded before it is compared');
  const unknown = await modern(careful.url, 'resources/list', {}, { id: 6 });
  assert.deepEqual([unknown.status, unknown.body.id, unknown.body.error.code], [404, 6, -32601]);
  const get = await fetch(`${careful.url}/mcp`);
  assert.equal(get.status, 405);
});
