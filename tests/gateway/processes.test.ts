/**
 * `holon serve` as a process (issue 8 §4): `agents/host.mjs` never outlives the gateway, so a
 * restart after `kill -9` works every time; the agents host's port is an option
 * (`--agents-port`, `HOLON_AGENTS_PORT`) that the shipped MCP agents' endpoints follow, so two dev
 * gateways run side by side. Each gateway runs as `node src/bin.mjs serve` from the repository
 * root, on its own free ports and data directory (and database, on Postgres).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { closedPort } from '../helpers/cli.ts';
import { freshStore } from '../helpers/gateway.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CSV = 'id,name\n1,Ada\n2,Alan\n';

/** Whether something accepts connections on 127.0.0.1:`port`. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A `holon serve` process and its address. */
interface Served {
  child: ChildProcess;
  url: string;
}

/** Where one test gateway lives. */
interface Place {
  port: number;
  agents_port: number;
  store: { db: string; database_url?: string };
  /** Pass the agents port through `HOLON_AGENTS_PORT` rather than `--agents-port`. */
  through_env?: boolean;
}

/** Runs `holon serve` at `place`; resolves once it prints that it listens, rejects with its stderr if it exits first. */
async function serve(place: Place): Promise<Served> {
  const args = ['src/bin.mjs', 'serve', '--port', String(place.port), '--db', place.store.db];
  const env: NodeJS.ProcessEnv = { ...process.env, HOLON_LOG_LEVEL: 'silent' };
  delete env.HOLON_AGENTS_PORT;
  delete env.DATABASE_URL;
  if (place.store.database_url) env.DATABASE_URL = place.store.database_url;
  if (place.through_env) env.HOLON_AGENTS_PORT = String(place.agents_port);
  else args.push('--agents-port', String(place.agents_port));
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const found = /holon gateway listening on (\S+)/.exec(stdout);
      if (found) resolve(found[1]!);
    });
    child.once('exit', (code) => reject(new Error(`holon serve exited with ${code}: ${stderr.trim()}`)));
  });
  return { child, url };
}

/** Kills `served` with SIGKILL and waits for it to be gone. */
async function kill9(served: Served): Promise<void> {
  const exited = new Promise((resolve) => served.child.once('exit', resolve));
  served.child.kill('SIGKILL');
  await exited;
}

/** Stops `served` cleanly (SIGTERM). */
async function stop(served: Served): Promise<void> {
  if (served.child.exitCode !== null || served.child.signalCode !== null) return;
  const exited = new Promise((resolve) => served.child.once('exit', resolve));
  served.child.kill('SIGTERM');
  await exited;
}

/**
 * Waits until nothing listens on `port` any more, checking every 100 ms, at most `attempts`
 * times; false when something still does then.
 */
async function released(port: number, attempts = 50): Promise<boolean> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (!(await listening(port))) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

/** Profiles {@link CSV} with holon-labs/csv-profile through the gateway at `url`; returns the status and body. */
async function profile(url: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${url}/v0/calls`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ mandate: 'dev/sandbox', agent: 'holon-labs/csv-profile', input: { csv: CSV } }),
  });
  return { status: response.status, body: await response.json() };
}

/** The `runtime.endpoint` the gateway at `url` lists for csv-profile. */
async function csvProfileEndpoint(url: string): Promise<string> {
  const response = await fetch(`${url}/v0/agents/holon-labs/csv-profile`);
  assert.equal(response.status, 200);
  return ((await response.json()) as { manifest: { runtime: { endpoint: string } } }).manifest.runtime.endpoint;
}

test('after kill -9 of holon serve the agents host exits with it, and a restart on the same ports works, 10 rounds', async () => {
  const place: Place = { port: await closedPort(), agents_port: await closedPort(), store: await freshStore() };
  const dirs = [place.store.db];
  try {
    for (let round = 1; round <= 10; round++) {
      // A fresh data directory per round keeps each start quick (a killed PGlite's lock goes
      // stale only after 10 s); the last round restarts on the data the previous one was killed on.
      if (round > 1 && round < 10) {
        place.store = await freshStore();
        dirs.push(place.store.db);
      }
      const served = await serve(place);
      try {
        const health = await fetch(`${served.url}/healthz`);
        assert.equal(health.status, 200, `round ${round}`);
        assert.equal(await listening(place.agents_port), true, `round ${round}: the agents host listens`);
      } finally {
        await kill9(served);
      }
      assert.equal(await released(place.agents_port), true, `round ${round}: the agents host still holds port ${place.agents_port} 5 s after the gateway was killed`);
    }
    const last = await serve(place);
    try {
      const { status, body } = await profile(last.url);
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(body.output.rows, 2);
    } finally {
      await stop(last);
    }
    assert.equal(await released(place.agents_port), true, 'a clean stop stops the agents host too');
  } finally {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  }
});

test('two dev gateways run side by side on their own --port, --db and --agents-port (or HOLON_AGENTS_PORT); each calls its own host', async () => {
  const one: Place = { port: await closedPort(), agents_port: await closedPort(), store: await freshStore() };
  const two: Place = { port: await closedPort(), agents_port: await closedPort(), store: await freshStore(), through_env: true };
  const served: Served[] = [];
  try {
    served.push(await serve(one), await serve(two));
    for (const [index, place] of [one, two].entries()) {
      const url = served[index]!.url;
      assert.equal(url, `http://127.0.0.1:${place.port}`);
      assert.equal(await csvProfileEndpoint(url), `http://127.0.0.1:${place.agents_port}/mcp`);
      const { status, body } = await profile(url);
      assert.equal(status, 200, JSON.stringify(body));
      assert.deepEqual(body.output.columns.map((column: { name: string }) => column.name), ['id', 'name']);
      assert.equal(body.receipt.billed, true);
    }
  } finally {
    for (const each of served) await stop(each);
    await rm(one.store.db, { recursive: true, force: true });
    await rm(two.store.db, { recursive: true, force: true });
  }
});

test('a malformed HOLON_AGENTS_PORT is one line naming it, exit code 1', async () => {
  const env: NodeJS.ProcessEnv = { ...process.env, HOLON_AGENTS_PORT: '43a', HOLON_LOG_LEVEL: 'silent' };
  const child = spawn(process.execPath, ['src/bin.mjs', 'serve', '--port', String(await closedPort()), '--db', '/nonexistent/never-opened'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  assert.equal(code, 1);
  assert.equal(stderr, `holon: could not start the gateway: HOLON_AGENTS_PORT must be a whole number from 0 to 65535 (the agents host's port, 0 for any free one; default 4300 when free, else any free port); got "43a"\n`);
});

test('a malformed --agents-port is refused by the command line as bad usage, exit code 2', async () => {
  const child = spawn(process.execPath, ['src/bin.mjs', 'serve', '--agents-port', '70000'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  assert.equal(code, 2);
  assert.equal(stderr, 'holon: --agents-port 70000: give a whole number from 0 to 65535\n');
});
