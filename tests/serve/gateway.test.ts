/**
 * The composition root (`src/serve/`): the dev and the hosted gateway are one shared start
 * (`startGateway`) with the parts each plugs in. Without a part, a gateway has no dev account and
 * no example mandates, but still serves `/v0` and the MCP server at `/mcp` (mounted by the root);
 * the dev gateway's part adds the account `dev` with its 100.00 EUR demo credit and the mandates
 * of `examples/mandates/`; a part's hooks run where the start promises: its middleware before
 * the routes, its handlers over the gateway's, its recovery at start-up, its stop first at close.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type Koa from 'koa';
import pino from 'pino';
import supertest from 'supertest';
import { HttpClearingPort, type ClearingRefused } from '../../src/gateway/clearing.ts';
import { DEV_ACCOUNT, DEV_CREDIT_MICROS, startDevGateway } from '../../src/serve/dev.ts';
import { startGateway, type GatewayPlugin, type RunningGateway } from '../../src/serve/gateway.ts';
import { freshStore } from '../helpers/gateway.ts';

const started: RunningGateway[] = [];
after(async () => {
  for (const running of started) await running.close();
});

/** A gateway on a fresh store with the example agents, no agents host, nothing excluded, plugging in `plugins`. */
async function gatewayWith(plugins: readonly GatewayPlugin[]): Promise<RunningGateway> {
  const running = await startGateway({ port: 0, ...(await freshStore()), agent_dirs: ['examples'], agents_host_port: null, exclude: [], logger: pino({ level: 'silent' }) }, plugins);
  started.push(running);
  return running;
}

/** The binding's figures of `account`, or the status of its refusal (404: no such account). */
async function balanceOf(running: RunningGateway, account: string): Promise<number | { refused: number }> {
  try {
    return (await new HttpClearingPort(running.clearing_url).readBalance(account)).balance;
  } catch (error) {
    return { refused: (error as ClearingRefused).status };
  }
}

test('without a part a gateway has no dev account and no example mandates, and still serves /v0 and /mcp', async () => {
  const bare = await gatewayWith([]);
  const http = supertest(bare.url);
  assert.deepEqual(await balanceOf(bare, DEV_ACCOUNT), { refused: 404 });
  const mandate = await http.get('/v0/mandates/dev/sandbox');
  assert.equal(mandate.status, 404);
  assert.equal(mandate.body.code, 'no_such_mandate');
  assert.ok(((await http.get('/v0/agents').expect(200)).body.agents as { id: string }[]).some((agent) => agent.id === 'acme/table-extract'));
  // The root mounts the MCP server: a foreign Host on /mcp is refused as JSON-RPC, elsewhere as {error, code}.
  const rpc = await http.post('/mcp').set('Host', 'evil.example.com').send({});
  assert.equal(rpc.status, 403);
  assert.equal(rpc.body.jsonrpc, '2.0');
  assert.equal(rpc.body.error.code, -32000);
  const v0 = await http.get('/v0/agents').set('Host', 'evil.example.com');
  assert.equal(v0.status, 403);
  assert.equal(v0.body.code, 'not_permitted');
  const initialize = await http
    .post('/mcp')
    .set({ 'content-type': 'application/json', accept: 'application/json, text/event-stream' })
    .send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'test', version: '1' } } });
  assert.equal(initialize.status, 200);
  assert.ok(initialize.headers['mcp-session-id'], 'the MCP server opened a session');
});

test("the dev gateway's part: the account dev with its 100.00 EUR demo credit, given once, and the example mandates", async () => {
  const store = await freshStore();
  const options = { port: 0, ...store, agent_dirs: ['examples'], agents_host_port: null, exclude: [], logger: pino({ level: 'silent' }) };
  const first = await startDevGateway(options);
  try {
    assert.equal(DEV_CREDIT_MICROS, 100_000_000);
    assert.equal(await balanceOf(first, DEV_ACCOUNT), 100_000_000);
    const listed = (await supertest(first.url).get('/v0/accounts').expect(200)).body.accounts as { account: string; balance: string }[];
    assert.equal(listed.find((account) => account.account === DEV_ACCOUNT)?.balance, '100.00');
    for (const id of ['dev/sandbox', 'dev/careful']) {
      const mandate = await supertest(first.url).get(`/v0/mandates/${id}`).expect(200);
      assert.equal(mandate.body.mandate.issuer, DEV_ACCOUNT);
    }
  } finally {
    await first.close();
  }
  // A restart on the same store credits nothing again (the credit's key is `demo-credit:dev`).
  const again = await startDevGateway(options);
  started.push(again);
  assert.equal(await balanceOf(again, DEV_ACCOUNT), 100_000_000);
});

test("a part's hooks: middleware before the routes, handlers over the gateway's, recovery at start-up, its stop first at close", async () => {
  const seen: string[] = [];
  const recovered: Array<[readonly number[], boolean]> = [];
  let listeningAt: string | null = null;
  const tagged: Koa.Middleware = async (ctx, next) => {
    ctx.set('X-Part', 'seen');
    await next();
  };
  const plugin: GatewayPlugin = {
    prepare: async () => void seen.push('prepare'),
    accounts: ['part-account'],
    credits: [{ txn_id: 'part-credit:1', account: 'part-account', amount_micros: 2_500_000, ref: 'a part credit', simulated: true }],
    extend: async (parts) => {
      seen.push('extend');
      assert.ok(parts.registry.latest().some((agent) => agent.loaded.manifest.id === 'acme/table-extract'), 'the part is handed a loaded registry');
      return {
        middleware: [tagged],
        handlers: (defaults) => ({ ...defaults, health: async (request, ctx) => ({ ...((await defaults.health(request, ctx)) as object), part: true }) }),
        recover: async (dead, unowned) => void recovered.push([dead, unowned]),
      };
    },
    listening: async (running) => {
      seen.push('listening');
      listeningAt = running.url;
      return async () => {
        seen.push(`stop before the database closed: ${(await running.db.knex.raw('select 1 as one')) !== undefined}`);
      };
    },
  };
  const running = await startGateway({ port: 0, ...(await freshStore()), agent_dirs: ['examples'], agents_host_port: null, exclude: [], logger: pino({ level: 'silent' }) }, [plugin]);
  try {
    assert.deepEqual(seen, ['prepare', 'extend', 'listening']);
    assert.equal(listeningAt, running.url);
    assert.deepEqual(recovered[0], [[], true]);
    assert.equal(await balanceOf(running, 'part-account'), 2_500_000);
    const health = await supertest(running.url).get('/healthz').expect(200);
    assert.deepEqual(health.body, { ok: true, part: true });
    assert.equal(health.headers['x-part'], 'seen');
  } finally {
    await running.close();
  }
  assert.deepEqual(seen, ['prepare', 'extend', 'listening', 'stop before the database closed: true']);
});
