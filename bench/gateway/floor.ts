/**
 * The floor of the gateway benchmark (issue 12 §2): the least a call through a gateway with the
 * same durable steps costs on this machine. A bare `node:http` server with no logic at all does,
 * per `POST`, exactly the round trips the gateway's call path waits for, in the same order, on a
 * raw `pg` pool with prepared statements: one read (the mandate), a committed write (reserve),
 * another (the binding's open-hold), the agent called with the gateway's own MCP client, a third
 * committed write (the receipt), then the answer. The gateway of the benchmark runs the reference
 * binding in its own process, as `holon serve` does, so its open-hold is one round trip to the
 * database too; but the floor's writes are one-row inserts, where the gateway's statements and
 * the binding's function do real work, so what the gateway costs above the floor is its logic
 * and its statements' work together. What the floor costs above the direct call is the price of
 * the round trips themselves. Its rows go to a table of its own, dropped when it stops.
 *
 *   DATABASE_URL=postgres://... node --import tsx bench/gateway/floor.ts <port> <agent endpoint>
 *
 * Prints `listening on http://127.0.0.1:<port>/call` once it accepts connections.
 */
import http from 'node:http';
import pg from 'pg';
import { createMcpRuntime } from '../../src/runtimes/mcp.ts';
import { readBody } from './http-body.ts';

/** Connections to Postgres, as many as the benchmark has clients at most. */
const POOL_SIZE = 16;

const [portText, endpoint] = process.argv.slice(2);
const port = Number(portText);
if (!Number.isInteger(port) || port <= 0 || port > 65_535 || !endpoint) throw new Error('usage: floor.ts <port> <agent endpoint>');
const url = process.env.DATABASE_URL;
if (!url) throw new Error('set DATABASE_URL to a Postgres server (see bench/README.md)');

const pool = new pg.Pool({ connectionString: url, max: POOL_SIZE });
// A table of this process's own (logged, so its commits wait for the WAL flush like the gateway's).
const table = `bench_floor_steps_${process.pid}`;
await pool.query(`CREATE TABLE ${table} (id bigserial PRIMARY KEY, call text NOT NULL, step text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`);
const READ = { name: 'bench_floor_read', text: `SELECT id, call, step FROM ${table} WHERE id = $1` };
const WRITE = { name: 'bench_floor_write', text: `INSERT INTO ${table} (call, step) VALUES ($1, $2) RETURNING id` };
const runtime = createMcpRuntime();
const target = { id: 'bench/echo', version: '1.0.0', runtime: { kind: 'mcp' as const, endpoint, tool: 'echo' } };

let calls = 0;
const server = http.createServer(async (req, res) => {
  try {
    const input = JSON.parse(await readBody(req));
    const call = `floor-${++calls}`;
    await pool.query({ ...READ, values: [calls] });
    await pool.query({ ...WRITE, values: [call, 'reserve'] });
    await pool.query({ ...WRITE, values: [call, 'hold'] });
    const outcome = await runtime.run({ target, input, call_id: call, max_cost: null, credential: null, signal: AbortSignal.timeout(30_000), delegate: () => Promise.reject(new Error('the floor delegates nothing')) });
    if (outcome.kind !== 'output') throw new Error(`the agent answered ${JSON.stringify(outcome)}`);
    await pool.query({ ...WRITE, values: [call, 'receipt'] });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ output: outcome.output }));
  } catch (error) {
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: (error as Error).message }));
  }
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${port}/call`));
const stop = async () => {
  server.close();
  await runtime.close();
  await pool.query(`DROP TABLE IF EXISTS ${table}`);
  await pool.end();
  process.exit(0);
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
