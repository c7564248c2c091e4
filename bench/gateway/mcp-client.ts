/**
 * What the gateway's MCP client costs per call (issue 21 §3), ways side by side in one run:
 * `tools/call` on `bench/gateway/agent.ts` (the trivial echo agent), one call at a time, rounds
 * interleaved so the machine's drift falls on every way alike.
 *
 * - `runtime`: the gateway's MCP runtime as it runs (`createMcpRuntime()`: Node's fetch, the SDK's
 *   Streamable HTTP transport and its zod parse of the result).
 * - `runtime_undici`: the same runtime over undici's own `fetch` on a pooled `Agent` dispatcher
 *   (keep-alive connections, undici 7) instead of Node's built-in fetch.
 * - `sdk_callTool` / `sdk_request`: a bare SDK client on one session, `callTool` (zod parses the
 *   `CallToolResult`) against `request(..., permissive schema)` (no zod walk of the result): the
 *   cost of that parse alone.
 *
 *   node --import tsx bench/gateway/mcp-client.ts [calls per round, default 300] [rounds, default 5]
 *
 * Prints one line per way: this process's CPU (user + system) per call in microseconds and the
 * median wall per call in milliseconds, then one summary line. CPU is this process only (the
 * agent's is not counted): it is the client's cost, which is what the gateway pays.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Agent, fetch as undiciFetch } from 'undici';
import { z } from 'zod';
import { createMcpRuntime } from '../../src/runtimes/mcp.ts';
import type { RunRequest } from '../../src/runtimes/types.ts';

const CALLS = Number(process.argv[2] ?? 300);
const ROUNDS = Number(process.argv[3] ?? 5);
if (!Number.isInteger(CALLS) || CALLS < 1 || CALLS > 100_000 || !Number.isInteger(ROUNDS) || ROUNDS < 1 || ROUNDS > 100) {
  throw new Error('usage: mcp-client.ts [calls per round, 1..100000] [rounds, 1..100]');
}

/** Starts the echo agent on a free port; resolves with its `/mcp` URL and how to stop it. */
async function startAgent(): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('agent.ts', import.meta.url)), String(56_160 + (process.pid % 30))], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  for await (const line of lines) {
    const found = /listening on (\S+)/.exec(line);
    if (found) return { url: found[1], stop: () => child.kill('SIGTERM') };
  }
  throw new Error('the agent exited before listening');
}

const agent = await startAgent();
const pool = new Agent({ connections: 16, keepAliveTimeout: 60_000 });
const pooledFetch = ((url: string | URL, init?: RequestInit) => undiciFetch(url, { ...(init as object), dispatcher: pool })) as unknown as typeof fetch;

/** One `tools/call` through the gateway's runtime. */
function runtimeCall(runtime: ReturnType<typeof createMcpRuntime>): (i: number) => Promise<void> {
  return async (i) => {
    const request: RunRequest = {
      target: { id: 'bench/echo', version: '1.0.0', runtime: { kind: 'mcp', endpoint: agent.url, tool: 'echo' } },
      input: { i },
      call_id: `c${i}`,
      max_cost: null,
      credential: null,
      signal: new AbortController().signal,
      delegate: (() => Promise.reject(new Error('no delegation'))) as unknown as RunRequest['delegate'],
    };
    const outcome = await runtime.run(request);
    if (outcome.kind !== 'output') throw new Error(`call ${i}: ${JSON.stringify(outcome)}`);
  };
}

/** A bare SDK client on one session. */
async function sdkClient(): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(agent.url)));
  return client;
}

const permissive = z.object({}).passthrough();
const runtime = createMcpRuntime();
const runtimeUndici = createMcpRuntime({ fetch: pooledFetch });
const [callToolClient, requestClient] = [await sdkClient(), await sdkClient()];
const ways: Record<string, (i: number) => Promise<void>> = {
  runtime: runtimeCall(runtime),
  runtime_undici: runtimeCall(runtimeUndici),
  sdk_callTool: async (i) => void (await callToolClient.callTool({ name: 'echo', arguments: { i } })),
  sdk_request: async (i) => void (await requestClient.request({ method: 'tools/call', params: { name: 'echo', arguments: { i } } }, permissive)),
};

const cpu_us: Record<string, number> = Object.fromEntries(Object.keys(ways).map((name) => [name, 0]));
const walls: Record<string, number[]> = Object.fromEntries(Object.keys(ways).map((name) => [name, []]));
// One warm-up round each (JIT, connections, sessions), not counted.
for (const call of Object.values(ways)) for (let i = 0; i < Math.min(CALLS, 50); i++) await call(i);
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, call] of Object.entries(ways)) {
    const before = process.cpuUsage();
    for (let i = 0; i < CALLS; i++) {
      const start = performance.now();
      await call(i);
      walls[name].push(performance.now() - start);
    }
    const used = process.cpuUsage(before);
    cpu_us[name] += used.user + used.system;
  }
}

const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
const perCall = (name: string) => cpu_us[name] / (CALLS * ROUNDS);
for (const name of Object.keys(ways)) console.log(`${name.padEnd(16)} cpu_us_per_call=${perCall(name).toFixed(0)} wall_p50_ms=${median(walls[name]).toFixed(3)}`);
console.log(`calls=${CALLS * ROUNDS} undici_over_fetch_cpu=${(perCall('runtime_undici') / perCall('runtime')).toFixed(2)} request_over_callTool_cpu=${(perCall('sdk_request') / perCall('sdk_callTool')).toFixed(2)}`);

await Promise.all([runtime.close(), runtimeUndici.close(), callToolClient.close(), requestClient.close(), pool.close()]);
agent.stop();
