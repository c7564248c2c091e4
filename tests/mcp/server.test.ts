/**
 * The gateway's MCP server at `/mcp` (gateway §7 "Connecting Claude Code", "Limits", "Approvals
 * and attended clients") through the SDK's own client over Streamable HTTP, against gateways
 * started by `startDevGateway`:
 *
 * - `sandbox`: MCP mandate `dev/sandbox` (allows everything), the example agents and
 *   `agents/host.mjs` on a free port (`agents_host_port: 0`), which the gateway lists as
 *   csv-profile's endpoint, so parallel runs never collide;
 * - `careful`: MCP mandate `dev/careful` (`HOLON_MCP_MANDATE`, read at start): a call whose worst
 *   case is above 0.05 EUR is held for a human. `acme/estimate` quotes its price, at most 1.00,
 *   so every call of it is held; two tasks are then billed 0.02.
 *
 * Every tool result is checked twice: its text block is exactly the JSON of its structured
 * content. Balances come from `GET /v0/accounts` after the outbox has posted the settlements.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, describe, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type ElicitRequest, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { Ajv } from 'ajv';
import { signedReceiptFields, verifyReceipt } from '../../clients/src/verify.ts';
import { parseMoney, type Micros } from '../../src/contracts/money.ts';
import type { RunningGateway } from '../../src/serve/gateway.ts';
import { startFreshDevGateway, useDevGateway } from '../helpers/gateway.ts';
import { useOpened, withEnv } from '../helpers/hooks.ts';

/** A CSV with quoting, a null and three types. */
const CSV = 'id,name,joined\n1,Ada,2024-01-15\n2,"Lovelace, Ada",2024-03-02\n3,,2023-12-31\n';

/** What `holon-labs/csv-profile` answers for {@link CSV}. */
const PROFILE = {
  delimiter: ',',
  rows: 3,
  columns: [
    { name: 'id', type: 'integer', nulls: 0, distinct: 3, min: '1', max: '3', samples: ['1', '2', '3'] },
    { name: 'name', type: 'string', nulls: 1, distinct: 2, min: 'Ada', max: 'Lovelace, Ada', samples: ['Ada', 'Lovelace, Ada'] },
    { name: 'joined', type: 'date', nulls: 0, distinct: 3, min: '2023-12-31', max: '2024-03-02', samples: ['2024-01-15', '2024-03-02', '2023-12-31'] },
  ],
};

/** csv-profile's price as its manifest declares it. */
const csvProfilePrice = parseYaml(await readFile(new URL('../../agents/csv-profile/holon.yaml', import.meta.url), 'utf8')).price as { model: string; amount: string; currency: string };

const TOOLS = ['search_agents', 'call_agent', 'read_receipts', 'list_approvals'];

const clients: Client[] = [];
// The clients close before the gateways they talk to (after hooks run in the order they are registered).
after(async () => {
  for (const client of clients) await client.close();
});
const exclude = ['holon-labs/summarize'];
const sandbox = useDevGateway({ agent_dirs: ['examples', 'agents'], agents_host_port: 0, exclude });
const careful = useOpened('the careful gateway', () => withEnv({ HOLON_MCP_MANDATE: 'dev/careful' }, () => startFreshDevGateway({ exclude })), (gateway) => gateway.close());

/** How a client answers `elicitation/create`: accept with `approve`, decline, cancel (the human dismissed the form), or fail. */
type Answer = { approve: boolean } | 'decline' | 'cancel' | 'fail';

/**
 * A connected client of `gateway`'s `/mcp`. With `answer`, it declares the elicitation
 * capability, answers every request that way and records the requests in `asked`.
 */
async function connect(gateway: RunningGateway, answer?: Answer): Promise<{ client: Client; asked: ElicitRequest['params'][] }> {
  const asked: ElicitRequest['params'][] = [];
  const client = new Client({ name: 'holon-mcp-test', version: '1.0.0' }, answer === undefined ? {} : { capabilities: { elicitation: {} } });
  if (answer !== undefined) {
    client.setRequestHandler(ElicitRequestSchema, async (request): Promise<ElicitResult> => {
      asked.push(request.params);
      if (answer === 'fail') throw new Error('the human closed the window');
      if (answer === 'decline') return { action: 'decline' };
      if (answer === 'cancel') return { action: 'cancel' };
      return { action: 'accept', content: { approve: answer.approve } };
    });
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp`)));
  clients.push(client);
  return { client, asked };
}

/** What a tool answered: its structured content (checked equal to the JSON of its one text block) and `isError`. */
interface ToolAnswer {
  content: Record<string, any>;
  text: string;
  isError: boolean;
}

/** Calls tool `name` with `args`. */
async function callTool(client: Client, name: string, args: Record<string, unknown>): Promise<ToolAnswer> {
  const result = await client.callTool({ name, arguments: args });
  const blocks = result.content as Array<{ type: string; text: string }>;
  assert.equal(blocks.length, 1);
  assert.equal(blocks[0]!.type, 'text');
  assert.deepEqual(JSON.parse(blocks[0]!.text), result.structuredContent);
  return { content: result.structuredContent as Record<string, any>, text: blocks[0]!.text, isError: result.isError === true };
}

/** Every account's balance on `gateway`, micro-units, once pending settlements are posted; no hold may be left open then. */
async function balances(gateway: RunningGateway): Promise<Record<string, Micros>> {
  await gateway.outbox.drain();
  const response = await fetch(`${gateway.url}/v0/accounts`);
  assert.equal(response.status, 200);
  const body = (await response.json()) as { currency: string; accounts: Array<{ account: string; balance: string; reserved: string }> };
  assert.equal(body.currency, 'EUR');
  assert.deepEqual(body.accounts.filter((a) => a.reserved !== '0.00'), []);
  return Object.fromEntries(body.accounts.map((a) => [a.account, parseMoney(a.balance)]));
}

/** `after - before` per account, leaving out accounts that did not move. */
function moved(before: Record<string, Micros>, after: Record<string, Micros>): Record<string, Micros> {
  const delta: Record<string, Micros> = {};
  for (const account of Object.keys(after)) if (after[account] !== (before[account] ?? 0)) delta[account] = after[account]! - (before[account] ?? 0);
  return delta;
}

describe('under dev/sandbox', () => {
  let profileReceipt: Record<string, any>;
  /** The receipts of the calls made so far in this suite, oldest first. */
  const made: Array<[string, string]> = [];

  test('lists exactly the four tools', async () => {
    const { client } = await connect(sandbox);
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name), TOOLS);
    assert.deepEqual(tools.find((tool) => tool.name === 'call_agent')!.inputSchema.required, ['input']);
  });

  test('every tool declares an outputSchema; the SDK client validates each answer against it, errors included', async () => {
    const { client } = await connect(sandbox);
    const { tools } = await client.listTools(); // the SDK client validates structuredContent of tools it listed
    for (const tool of tools) {
      assert.equal(tool.outputSchema?.type, 'object', tool.name);
      // Not a schema that accepts anything: the required fields are named.
      assert.ok((tool.outputSchema.required ?? []).length > 0 || tool.name === 'read_receipts', tool.name);
    }
    const answers = [
      await client.callTool({ name: 'search_agents', arguments: { capability: 'extraction.table' } }),
      await client.callTool({ name: 'call_agent', arguments: { agent: 'acme/table-extract', input: { text: 'a;b' } } }),
      await client.callTool({ name: 'call_agent', arguments: { agent: 'acme/table-extract', input: { text: 'no delimiter here' } } }),
      await client.callTool({ name: 'call_agent', arguments: { agent: 'nobody/nothing', input: {} } }),
      await client.callTool({ name: 'call_agent', arguments: { agent: 'holon-labs/invoice-pipeline', input: { invoice: 'pens;2;1.50' } } }),
      await client.callTool({ name: 'read_receipts', arguments: { limit: 2 } }),
      await client.callTool({ name: 'read_receipts', arguments: { id: 'r999999' } }),
      await client.callTool({ name: 'list_approvals', arguments: {} }),
    ];
    assert.deepEqual(answers.map((a) => a.isError === true), [false, false, true, true, false, false, true, false]);
    const ajv = new Ajv({ strict: false });
    const schemaOf = (name: string) => tools.find((tool) => tool.name === name)!.outputSchema!;
    assert.equal(ajv.validate(schemaOf('call_agent'), answers[1]!.structuredContent), true, ajv.errorsText());
    assert.equal(ajv.validate(schemaOf('call_agent'), { status: 'succeeded' }), false, 'a call answer without its receipt does not match');
    assert.equal(ajv.validate(schemaOf('search_agents'), { mandate: 'dev/sandbox', agents: [{ id: 1 }] }), false);
  });

  test('call_agent runs holon-labs/csv-profile on the agents host and bills its per_run price, exactly', async () => {
    assert.deepEqual(csvProfilePrice, { model: 'per_run', amount: '0.002', currency: 'EUR' });
    const { client } = await connect(sandbox);
    const before = await balances(sandbox);
    const { content, isError } = await callTool(client, 'call_agent', { agent: 'holon-labs/csv-profile', input: { csv: CSV } });
    assert.equal(isError, false);
    assert.equal(content.status, 'succeeded');
    assert.deepEqual(content.output, PROFILE);
    const receipt = content.receipt;
    assert.equal(receipt.mandate, 'dev/sandbox');
    assert.equal(receipt.agent, 'holon-labs/csv-profile@0.1.0');
    assert.equal(receipt.status, 'succeeded');
    assert.equal(receipt.payer, 'dev');
    assert.equal(receipt.billed, true);
    assert.equal(receipt.worst_case, csvProfilePrice.amount);
    assert.deepEqual(receipt.cost, { own: csvProfilePrice.amount, downstream: '0.00', total: csvProfilePrice.amount });
    // 10% to the platform, the rest to the author.
    assert.deepEqual(receipt.splits, [
      { to: 'holon', amount: '0.0002' },
      { to: 'holon-labs', amount: '0.0018' },
    ]);
    assert.deepEqual(receipt.calls, []);
    assert.deepEqual(moved(before, await balances(sandbox)), { dev: -parseMoney(csvProfilePrice.amount), 'holon-labs': 1_800, holon: 200 });
    profileReceipt = receipt;
    made.push([receipt.id, receipt.agent]);
  });

  test('call_agent by capability picks the implementer and records the capability', async () => {
    const { client } = await connect(sandbox);
    const { content, isError } = await callTool(client, 'call_agent', { capability: 'data.profile', input: { csv: CSV } });
    assert.equal(isError, false);
    assert.deepEqual(content.output, PROFILE);
    assert.equal(content.receipt.agent, 'holon-labs/csv-profile@0.1.0');
    assert.equal(content.receipt.capability, 'data.profile');
    assert.deepEqual(content.receipt.cost, { own: '0.002', downstream: '0.00', total: '0.002' });

    const table = await callTool(client, 'call_agent', { capability: 'extraction.table', input: { text: 'pens;2\npaper;1' } });
    assert.deepEqual(table.content.output, { rows: [['pens', '2'], ['paper', '1']] });
    assert.equal(table.content.receipt.agent, 'acme/table-extract@1.0.0', 'the cheaper implementer per success wins');
    made.push([content.receipt.id, content.receipt.agent], [table.content.receipt.id, table.content.receipt.agent]);
  });

  test('search_agents ranks by cost per success, priced and admitted under the session mandate', async () => {
    const { client } = await connect(sandbox);
    const tables = await callTool(client, 'search_agents', { capability: 'extraction.table' });
    assert.equal(tables.isError, false);
    assert.equal(tables.content.mandate, 'dev/sandbox');
    assert.deepEqual(
      tables.content.agents.map((a: any) => [a.id, a.worst_case, a.currency, a.allowed]),
      [
        ['acme/table-extract', '0.02', 'EUR', 'allow'],
        ['lena/table-extract-plus', '0.035', 'EUR', 'allow'],
      ],
    );
    const csv = await callTool(client, 'search_agents', { q: 'csv delimiter' });
    assert.deepEqual(csv.content.agents.map((a: any) => a.id), ['holon-labs/csv-profile']);
    assert.deepEqual(csv.content.agents[0].price, csvProfilePrice);
    assert.deepEqual(csv.content.agents[0].capabilities, ['data.profile']);
    assert.equal(csv.content.agents[0].success_rate, 1, 'both csv-profile runs above succeeded');
    const all = await callTool(client, 'search_agents', {});
    assert.deepEqual(all.content.agents.map((a: any) => a.id).sort(), [
      'acme/estimate',
      'acme/table-extract',
      'holon-labs/csv-profile',
      'holon-labs/invoice-pipeline',
      'holon-labs/word-stats',
      'lena/table-extract-plus',
    ]);
  });

  test('read_receipts reads one receipt by id, the newest ones, and nothing outside the session mandate', async () => {
    const { client } = await connect(sandbox);
    const one = await callTool(client, 'read_receipts', { id: profileReceipt.id });
    assert.equal(one.isError, false);
    // Signed as it is read (issue 23 §2): the same receipt, with a signature of this read.
    const unsigned = (tree: any): any => ({ ...signedReceiptFields(tree), calls: tree.calls.map(unsigned) });
    assert.deepEqual(unsigned(one.content.receipt), unsigned(profileReceipt));
    assert.deepEqual(await verifyReceipt(one.content.receipt, await (await fetch(`${sandbox.url}/.well-known/jwks.json`)).json()), { receipts: 1 });

    const newest = await callTool(client, 'read_receipts', { limit: 3 });
    assert.deepEqual(
      newest.content.receipts.map((r: any) => [r.id, r.agent]),
      [...made].reverse(),
    );
    assert.deepEqual(made.map(([, agent]) => agent), ['holon-labs/csv-profile@0.1.0', 'holon-labs/csv-profile@0.1.0', 'acme/table-extract@1.0.0']);
    assert.deepEqual(unsigned(newest.content.receipts[2]), unsigned(profileReceipt));

    // A receipt of another mandate on the same gateway (a REST call under dev/careful).
    const other = await fetch(`${sandbox.url}/v0/calls`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ mandate: 'dev/careful', agent: 'acme/table-extract', input: { text: 'a;b' } }),
    });
    assert.equal(other.status, 200);
    const otherId = ((await other.json()) as { receipt: { id: string } }).receipt.id;
    const hidden = await callTool(client, 'read_receipts', { id: otherId });
    assert.equal(hidden.isError, true);
    assert.deepEqual(hidden.content, { error: { code: 'no_such_receipt', message: `there is no receipt ${otherId} under dev/sandbox` } });
    const missing = await callTool(client, 'read_receipts', { id: 'r999999' });
    assert.equal(missing.isError, true);
    assert.equal(missing.content.error.code, 'no_such_receipt');
  });

  test("another agent's output reaches the client with < escaped, in the structured content and the text block", async () => {
    const { client } = await connect(sandbox);
    const { content, text, isError } = await callTool(client, 'call_agent', { agent: 'acme/table-extract', input: { text: 'a;<b>' } });
    assert.equal(isError, false);
    assert.deepEqual(content.output, { rows: [['a', '&lt;b>']] });
    assert.ok(text.includes('"rows":[["a","&lt;b>"]]'), text);
    assert.ok(!text.includes('<'), text);
  });

  test('a failed call and a denied call answer isError, and bill nothing', async () => {
    const { client } = await connect(sandbox);
    const before = await balances(sandbox);
    const failed = await callTool(client, 'call_agent', { agent: 'acme/table-extract', input: { text: 'no delimiter here' } });
    assert.equal(failed.isError, true);
    assert.equal(failed.content.status, 'failed');
    assert.equal(failed.content.output, undefined);
    assert.deepEqual(failed.content.error, { code: 'no_table_found', message: 'no line contains the delimiter ";"' });
    assert.equal(failed.content.receipt.billed, false);
    assert.deepEqual(failed.content.receipt.cost, { own: '0.00', downstream: '0.00', total: '0.00' });

    const denied = await callTool(client, 'call_agent', { agent: 'acme/table-extract', input: { text: 'a;b' }, max_cost: '0.01' });
    assert.equal(denied.isError, true);
    assert.equal(denied.content.status, 'denied');
    assert.equal(denied.content.receipt.billed, false);
    assert.deepEqual(denied.content.error, {
      code: 'below_fixed_price',
      message: 'max_cost 0.01 EUR is below the fixed per_run price 0.02 EUR of acme/table-extract: a per_run price never buys the run for less',
    });

    const unknown = await callTool(client, 'call_agent', { agent: 'nobody/nothing', input: {} });
    assert.equal(unknown.isError, true);
    assert.equal(unknown.content.status, 'denied');
    assert.deepEqual(unknown.content.error, { code: 'no_such_agent', message: 'no listed agent matches nobody/nothing: GET /v0/agents lists the agents offered' });
    assert.deepEqual(moved(before, await balances(sandbox)), {});
  });
});

describe('under dev/careful: a held call', () => {
  const TASKS = { tasks: ['write tests', 'fix the bug'] };

  test('search_agents shows which agents need approval under the session mandate', async () => {
    const { client } = await connect(careful);
    const { content } = await callTool(client, 'search_agents', { capability: 'planning.estimate' });
    assert.equal(content.mandate, 'dev/careful');
    assert.deepEqual(content.agents.map((a: any) => [a.id, a.worst_case, a.allowed]), [['acme/estimate', '1.00', 'approve']]);
  });

  test('a client with elicitation that accepts: the human is asked, the call runs and is billed its quote', async () => {
    const { client, asked } = await connect(careful, { approve: true });
    const before = await balances(careful);
    const { content, isError } = await callTool(client, 'call_agent', { agent: 'acme/estimate', input: TASKS });
    assert.equal(asked.length, 1);
    assert.match(asked[0]!.message, /^Approve acme\/estimate@1\.0\.0 under dev\/careful\? Worst case 1\.00 EUR\. .+\.$/);
    assert.deepEqual((asked[0] as any).requestedSchema.required, ['approve']);
    assert.equal(isError, false);
    assert.equal(content.status, 'succeeded');
    assert.deepEqual(content.output, { hours: 3 });
    assert.match(content.receipt.approval, /^a\d+$/);
    assert.equal(content.receipt.billed, true);
    assert.deepEqual(content.receipt.cost, { own: '0.02', downstream: '0.00', total: '0.02' });
    assert.deepEqual(moved(before, await balances(careful)), { dev: -20_000, acme: 18_000, holon: 2_000 });
    assert.deepEqual((await callTool(client, 'list_approvals', {})).content, { approvals: [] });
  });

  test('a client with elicitation that declines: the call is rejected and nothing is billed', async () => {
    const { client, asked } = await connect(careful, 'decline');
    const before = await balances(careful);
    const { content, isError } = await callTool(client, 'call_agent', { agent: 'acme/estimate', input: TASKS });
    assert.equal(asked.length, 1);
    assert.equal(isError, true);
    assert.equal(content.status, 'rejected');
    assert.equal(content.output, undefined);
    assert.equal(content.error.code, 'approval_rejected');
    assert.equal(content.receipt.status, 'rejected');
    assert.equal(content.receipt.billed, false);
    assert.deepEqual(content.receipt.cost, { own: '0.00', downstream: '0.00', total: '0.00' });
    assert.deepEqual(moved(before, await balances(careful)), {});
    assert.deepEqual((await callTool(client, 'list_approvals', {})).content, { approvals: [] });
  });

  test('accepting with approve: false rejects the call too', async () => {
    const { client } = await connect(careful, { approve: false });
    const { content, isError } = await callTool(client, 'call_agent', { agent: 'acme/estimate', input: TASKS });
    assert.equal(isError, true);
    assert.equal(content.status, 'rejected');
    assert.equal(content.error.code, 'approval_rejected');
  });

  test('a client without elicitation gets pending_approval with the approval, and list_approvals shows it', async () => {
    const { client } = await connect(careful);
    const before = await balances(careful);
    const { content, isError } = await callTool(client, 'call_agent', { agent: 'acme/estimate', input: TASKS });
    assert.equal(isError, false);
    assert.equal(content.status, 'pending_approval');
    assert.equal(content.output, undefined);
    const approval = content.approval;
    assert.equal(approval.status, 'pending');
    assert.equal(approval.mandate, 'dev/careful');
    assert.equal(approval.agent, 'acme/estimate@1.0.0');
    assert.equal(approval.worst_case, '1.00');
    assert.equal(approval.currency, 'EUR');
    assert.equal(approval.max_cost, null);
    assert.equal(approval.receipt, content.receipt.id);
    assert.equal(content.receipt.status, 'pending_approval');
    assert.equal(content.receipt.approval, approval.id);
    assert.equal(content.receipt.billed, false);
    assert.deepEqual((await callTool(client, 'list_approvals', {})).content, { approvals: [approval] });
    assert.deepEqual(moved(before, await balances(careful)), {});

    // The human decides over the API; the approval leaves the list.
    const decided = await fetch(`${careful.url}/v0/approvals/${approval.id}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ decision: 'reject' }) });
    assert.equal(decided.status, 200);
    assert.deepEqual((await callTool(client, 'list_approvals', {})).content, { approvals: [] });
  });

  test('a client whose human dismisses the form (cancel) leaves the call pending_approval, to decide later over the API', async () => {
    const { client, asked } = await connect(careful, 'cancel');
    const before = await balances(careful);
    const { content, isError } = await callTool(client, 'call_agent', { agent: 'acme/estimate', input: TASKS });
    assert.equal(asked.length, 1);
    assert.equal(isError, false);
    assert.equal(content.status, 'pending_approval');
    assert.equal(content.approval.status, 'pending');
    assert.equal(content.receipt.status, 'pending_approval');
    assert.equal(content.receipt.billed, false);
    const listed = (await callTool(client, 'list_approvals', {})).content.approvals;
    assert.deepEqual(listed.map((a: any) => [a.id, a.status]), [[content.approval.id, 'pending']]);
    assert.deepEqual(moved(before, await balances(careful)), {});
    // Later, the human approves it over the API: it runs and is billed its quote.
    const decided = await fetch(`${careful.url}/v0/approvals/${content.approval.id}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(decided.status, 200);
    assert.equal(((await decided.json()) as { receipt: { status: string } }).receipt.status, 'succeeded');
    assert.deepEqual(moved(before, await balances(careful)), { dev: -20_000, acme: 18_000, holon: 2_000 });
  });

  test('a client that opens no GET stream gets the form on its tools/call\'s own response stream, answers it, and the call completes', async () => {
    // The client's HTTP, recorded: a GET is never sent (answered 405 here, as a client that opens no stream sees it).
    const sent: string[] = [];
    const fetchNoGet = async (url: string | URL, init?: RequestInit): Promise<Response> => {
      if ((init?.method ?? 'GET') === 'GET') return new Response(null, { status: 405 });
      const body = JSON.parse(String(init!.body));
      sent.push(body.method ?? (body.result ? `answer:${body.result.action}` : 'other'));
      return fetch(url, init);
    };
    const asked: ElicitRequest['params'][] = [];
    const client = new Client({ name: 'no-get-stream', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async (request): Promise<ElicitResult> => {
      asked.push(request.params);
      return { action: 'accept', content: { approve: true } };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${careful.url}/mcp`), { fetch: fetchNoGet }));
    clients.push(client);
    const { content, isError } = await callTool(client, 'call_agent', { agent: 'acme/estimate', input: TASKS });
    assert.equal(asked.length, 1);
    assert.equal(isError, false);
    assert.equal(content.status, 'succeeded');
    assert.deepEqual(content.output, { hours: 3 });
    assert.deepEqual(sent, ['initialize', 'notifications/initialized', 'tools/call', 'answer:accept']);
  });

  test('an error answer carries the request id: an unknown session is 404 with the id sent', async () => {
    const response = await fetch(`${careful.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': 'no-such-session', 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 42, method: 'tools/list', params: {} }),
    });
    assert.equal(response.status, 404);
    assert.deepEqual(await response.json(), { jsonrpc: '2.0', id: 42, error: { code: -32001, message: 'no MCP session no-such-session: initialize again' } });
    const notAcceptable = await fetch(`${careful.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'init-1', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
    });
    assert.equal(notAcceptable.status, 406);
    assert.equal(((await notAcceptable.json()) as { id: unknown }).id, 'init-1');
    const unparsable = await fetch(`${careful.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{"jsonrpc":"2.0","id":43,' });
    assert.equal(unparsable.status, 400);
    assert.deepEqual(await unparsable.json(), { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the body is not JSON' } }, 'null only where the id could not be read');
  });

  test('a client whose elicitation fails leaves the call pending_approval', async () => {
    const { client, asked } = await connect(careful, 'fail');
    const { content, isError } = await callTool(client, 'call_agent', { agent: 'acme/estimate', input: TASKS });
    assert.equal(asked.length, 1);
    assert.equal(isError, false);
    assert.equal(content.status, 'pending_approval');
    const listed = (await callTool(client, 'list_approvals', {})).content.approvals;
    assert.deepEqual(listed.map((a: any) => [a.id, a.status]), [[content.approval.id, 'pending']]);
  });
});
