/**
 * The server commands' papercuts (issue 13 §4): a busy port is reported at once, before any
 * database is opened; `DATABASE_URL` takes only `postgres://`/`postgresql://` and a failure is one
 * line without a stack trace; `holon clearing serve` does not collide with a dev gateway's own
 * binding directory; one log line per request (method, path, status, ms, receipt id); the
 * agents host's lines reach the gateway's log prefixed; `HOLON_LOG_LEVEL` is checked; `npm start`
 * starts the gateway; every environment variable the code reads is in the table of docs/operators.md. And
 * issue 26: a hosted gateway starts beside a running dev gateway (the agents host takes a free port
 * when none was asked for; an agents port asked for and taken is one line, exit 1), its start line
 * names the address it listens on, and `--clearing-url` sends its settlements to that binding.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { access, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import lockfile from 'proper-lockfile';
import pino from 'pino';
import packageJson from '../../package.json' with { type: 'json' };
import { startClearingServer, type RunningClearing } from '../../src/clearing/server.ts';
import { HttpClearingPort } from '../../src/gateway/clearing.ts';
import { startDevGateway } from '../../src/serve/dev.ts';
import { BIN, closedPort, holon, serving, type Serving } from '../helpers/cli.ts';
import { freshStore, storeTarget } from '../helpers/gateway.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The agents host's port in this file: from the range this suite's author runs servers on. */
const AGENTS_PORT = 4350;
const scratch: string[] = [];

after(async () => {
  for (const dir of scratch) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'holon-cli-serve-'));
  scratch.push(dir);
  return dir;
}

async function listening(server: Server | ReturnType<typeof createHttpServer>): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(() => true, () => false);
}

test('a second holon serve on a port a Holon server holds says so at once, before opening any database', async () => {
  const other = createHttpServer((_req, res) => res.setHeader('content-type', 'application/json').end('{"ok":true}'));
  const port = await listening(other);
  const dir = await tempDir();
  try {
    const result = await holon(['serve', '--port', String(port), '--db', path.join(dir, 'data')]);
    assert.equal(result.code, 1);
    assert.equal(result.stderr, `holon: could not start the gateway: a Holon server is already running at http://127.0.0.1:${port}: use it, stop it first, or pass --port with another port\n`);
    assert.equal(await exists(path.join(dir, 'data')), false, 'no data directory was opened');
  } finally {
    other.close();
  }
});

test('a port another program holds is named as such', async () => {
  const other = createTcpServer((socket) => socket.destroy());
  const port = await listening(other);
  try {
    const result = await holon(['clearing', 'serve', '--port', String(port), '--db', path.join(await tempDir(), 'b')]);
    assert.equal(result.code, 1);
    assert.equal(result.stderr, `holon: could not start the clearing binding: port ${port} on 127.0.0.1 is already in use by another program: pass --port with another port\n`);
  } finally {
    other.close();
  }
});

test('DATABASE_URL: another scheme is refused in one line with the password hidden; an unreachable server is one line, no stack trace', async () => {
  const port = await closedPort();
  const wrong = await holon(['serve', '--port', '0'], { env: { DATABASE_URL: 'mysql://holon:secret@127.0.0.1/holon' } });
  assert.equal(wrong.code, 1);
  assert.equal(
    wrong.stderr,
    'holon: could not start the gateway: DATABASE_URL must be a postgres:// or postgresql:// URL with a host, e.g. postgres://holon@127.0.0.1:5432/holon; got "mysql://holon:***@127.0.0.1/holon"\n',
  );
  const down = await holon(['clearing', 'serve', '--port', '0'], { env: { DATABASE_URL: `postgresql://holon:secret@127.0.0.1:${port}/holon` } });
  assert.equal(down.code, 1);
  assert.equal(down.stderr, `holon: could not start the clearing binding: DATABASE_URL postgresql://holon:***@127.0.0.1:${port}/holon: no database host accepts writes (127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port})\n`);
});

test('holon serve --hosted refuses an out-of-bounds rate limit in one line, exit 1, before opening any database', async () => {
  // A data directory that cannot be made: were the setting let through, the start would fail on it, not hang.
  const env = { HOLON_RATE_ACCOUNT: '5000000', PORT: undefined, HOST: undefined, DATABASE_URL: undefined };
  const result = await holon(['serve', '--hosted', '--port', String(await closedPort()), '--db', '/dev/null/never-opened'], { env });
  assert.equal(result.code, 1);
  assert.equal(result.stderr, 'holon: could not start the gateway: refusing to start: HOLON_RATE_ACCOUNT must be a whole number from 1 to 1000000 (requests per account per minute; default 3000); got "5000000"\n');
});

test('HOLON_LOG_LEVEL must be a level; an unknown one lists the levels', async () => {
  const result = await holon(['clearing', 'serve', '--port', '0'], { env: { HOLON_LOG_LEVEL: 'loud' }, cwd: await tempDir() });
  assert.equal(result.code, 2);
  assert.equal(result.stderr, 'holon: HOLON_LOG_LEVEL=loud is not a level: use one of trace, debug, info, warn, error, fatal, silent\n');
});

test('holon clearing serve beside a dev gateway uses its own directory, not the gateway binding\'s .holon/clearing', async () => {
  const cwd = await tempDir();
  // What a running `holon serve` holds: the lock on its binding's directory.
  await mkdir(path.join(cwd, '.holon', 'clearing'), { recursive: true });
  const release = await lockfile.lock(path.join(cwd, '.holon', 'clearing'), { lockfilePath: path.join(cwd, '.holon', 'clearing.lock') });
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, [BIN, 'clearing', 'serve', '--port', '0'], { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DATABASE_URL: '' } });
  try {
    let output = '';
    const line = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk) => {
        output += chunk;
        const found = /holon clearing binding listening on \S+/.exec(output);
        if (found) resolve(found[0]);
      });
      child.once('exit', (code) => reject(new Error(`exited ${code}: ${output}`)));
    });
    assert.match(line, /^holon clearing binding listening on http:\/\/127\.0\.0\.1:\d+$/);
    assert.deepEqual((await readdir(path.join(cwd, '.holon'))).sort(), ['binding', 'binding.lock', 'clearing', 'clearing.lock']);
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('close', resolve));
    await release();
  }
});

test("the gateway logs one line per request (method, path, status, milliseconds, receipt id), and the agents host's lines prefixed", async () => {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({ write: (chunk, _encoding, done) => (lines.push(JSON.parse(String(chunk))), done()) });
  // The agents host on a port of this suite's own (the shipped manifests' 4300 may be another test's).
  const running = await startDevGateway({
    port: 0,
    ...(await freshStore()),
    agent_dirs: ['examples', 'agents'],
    agents_host_port: AGENTS_PORT,
    exclude: ['holon-labs/summarize'],
    logger: pino({ level: 'info' }, sink),
  });
  try {
    const answer = await fetch(`${running.url}/v0/calls`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ mandate: 'dev/sandbox', agent: 'acme/estimate', input: { tasks: ['plan'] } }),
    });
    const receipt = ((await answer.json()) as { receipt: { id: string } }).receipt.id;
    await fetch(`${running.url}/v0/nothing?secret=1`);
    const requests = lines.filter((line) => 'method' in line);
    assert.equal(requests.length, 2);
    const [call, miss] = requests;
    assert.deepEqual({ ...call, time: 0, pid: 0, hostname: '', ms: 0, msg: '' }, { level: 30, time: 0, pid: 0, hostname: '', method: 'POST', path: '/v0/calls', status: 200, ms: 0, receipt, msg: '' });
    assert.equal(call.msg, `POST /v0/calls 200 ${call.ms} ms ${receipt}`);
    assert.equal(typeof call.ms, 'number');
    assert.deepEqual([miss.method, miss.path, miss.status, miss.receipt, miss.msg], ['GET', '/v0/nothing', 404, null, `GET /v0/nothing 404 ${miss.ms} ms no_such_route`]);
    const host = lines.filter((line) => String(line.msg).startsWith('agents | '));
    assert.match(String(host[0]?.msg), new RegExp(`^agents \\| holon agents host: http://127\\.0\\.0\\.1:${AGENTS_PORT}/mcp `));
    assert.equal(host[0].level, 30);
  } finally {
    await running.close();
  }
});

test('npm start starts the gateway', () => {
  assert.equal(packageJson.scripts.start, 'node src/bin.mjs serve');
});

test('every environment variable the code reads is in the table of docs/operators.md', async () => {
  const page = await readFile(path.join(ROOT, 'docs', 'operators.md'), 'utf8');
  const table = page.slice(page.indexOf('## Environment variables'));
  const names = new Set<string>();
  for (const dir of ['src', 'agents', 'clients/src']) {
    for (const file of await readdir(path.join(ROOT, dir), { recursive: true })) {
      if (!/\.(ts|mjs)$/.test(file)) continue;
      const text = await readFile(path.join(ROOT, dir, file), 'utf8');
      for (const match of text.matchAll(/process\.env\.([A-Z_][A-Z0-9_]*)|\.env\('([A-Z_][A-Z0-9_]*)'\)/g)) names.add(match[1] ?? match[2]);
    }
  }
  assert.ok(names.has('HOLON_LOG_LEVEL') && names.has('DATABASE_URL') && names.has('HOLON_GATEWAY_URL'));
  for (const name of names) assert.match(table, new RegExp(`^\\| \`${name}\` \\|`, 'm'), `${name} is documented`);
});

describe('a hosted gateway beside a running dev gateway (issue 26)', () => {
  /** Neither gateway is told where to listen or run its agents but by its arguments. */
  const base = { HOLON_LOG_LEVEL: 'silent', HOLON_AGENTS_PORT: undefined, PORT: undefined, HOST: undefined };
  let binding: RunningClearing;
  let dev: Serving;
  let hosted: Serving;
  let dev_port: number;
  let hosted_port: number;

  /** The agents host's port a start line names. */
  const agentsPortOf = (line: string) => Number(/agents: http:\/\/127\.0\.0\.1:(\d+)\/mcp/.exec(line)?.[1]);

  before(async () => {
    binding = await startClearingServer({ target: storeTarget(await freshStore(), 'clearing'), port: 0, logger: pino({ level: 'silent' }) });
    const [dev_store, hosted_store] = [await freshStore(), await freshStore()];
    [dev_port, hosted_port] = [await closedPort(), await closedPort()];
    // As the README's fresh-machine command runs it: no --agents-port.
    dev = await serving(['serve', '--port', String(dev_port), '--db', dev_store.db], { ...base, DATABASE_URL: dev_store.database_url });
    hosted = await serving(
      ['serve', '--hosted', '--port', String(hosted_port), '--host', '0.0.0.0', '--db', hosted_store.db, '--clearing-url', binding.url],
      { ...base, DATABASE_URL: hosted_store.database_url, HOLON_ADMIN_KEY: undefined, HOLON_REGISTRY: undefined, HOLON_EXCLUDE: undefined },
    );
  });

  after(async () => {
    await hosted?.stop();
    await dev?.stop();
    await binding?.close();
  });

  test('both start, each agents host on a port of its own; the dev start line is its URL', () => {
    assert.match(dev.line, new RegExp(`^holon gateway listening on http://127\\.0\\.0\\.1:${dev_port} \\(clearing: http://127\\.0\\.0\\.1:\\d+, agents: http://127\\.0\\.0\\.1:\\d+/mcp; reference: http://127\\.0\\.0\\.1:${dev_port}/docs\\)$`));
    assert.ok(agentsPortOf(dev.line) > 0 && agentsPortOf(hosted.line) > 0);
    assert.notEqual(agentsPortOf(hosted.line), agentsPortOf(dev.line));
  });

  test('the hosted start line names the address it listens on, every interface, and a URL that reaches it', async () => {
    const url = `http://127.0.0.1:${hosted_port}`;
    assert.equal(
      hosted.line,
      `holon gateway listening on 0.0.0.0:${hosted_port}, every interface (from this machine: ${url}; clearing: ${binding.url}, agents: http://127.0.0.1:${agentsPortOf(hosted.line)}/mcp; reference: ${url}/docs)`,
    );
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
  });

  test('an agents port asked for and taken is one line naming it and how it was asked for, exit 1', async () => {
    const taken = agentsPortOf(dev.line);
    // A data directory that cannot be made: were the port not checked first, the start would fail on it instead.
    const args = ['serve', '--port', String(await closedPort()), '--db', '/dev/null/never-opened'];
    const env = { ...base, DATABASE_URL: undefined };
    const flag = await holon([...args, '--agents-port', String(taken)], { env });
    assert.deepEqual(flag, {
      code: 1,
      stdout: '',
      stderr: `holon: could not start the gateway: the agents port ${taken} (--agents-port) on 127.0.0.1 is already in use, maybe by another gateway's agents host: name another port, or drop --agents-port to take a free one\n`,
    });
    const variable = await holon(['serve', '--hosted', ...args.slice(1)], { env: { ...env, HOLON_AGENTS_PORT: String(taken) } });
    assert.deepEqual(variable, {
      code: 1,
      stdout: '',
      stderr: `holon: could not start the gateway: the agents port ${taken} (HOLON_AGENTS_PORT) on 127.0.0.1 is already in use, maybe by another gateway's agents host: name another port, or drop HOLON_AGENTS_PORT to take a free one\n`,
    });
  });

  test('with --clearing-url the hosted gateway credits and settles at that binding', async () => {
    const url = `http://127.0.0.1:${hosted_port}`;
    const ledger = new HttpClearingPort(binding.url);
    const handle = `cu-${randomUUID().slice(0, 8)}`;
    const signup = await fetch(`${url}/v0/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ handle, email: `${handle}@example.test` }) });
    assert.equal(signup.status, 201);
    const account = (await signup.json()) as { agent_key: { key: string }; mandate: string };
    assert.equal((await ledger.readBalance(handle)).balance, 5_000_000, 'the sign-up credit is at the named binding');
    const call = await fetch(`${url}/v0/calls`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${account.agent_key.key}` },
      body: JSON.stringify({ mandate: account.mandate, agent: 'holon-labs/csv-profile', input: { csv: 'id,name\n1,Ada\n' } }),
    });
    const body = (await call.json()) as { receipt: { billed: boolean; cost: { total: string } } };
    assert.equal(call.status, 200, JSON.stringify(body));
    assert.deepEqual([body.receipt.billed, body.receipt.cost.total], [true, '0.002']);
    // The outbox posts the settlement after the answer: look at most 100 times, 100 ms apart.
    let balance = 0;
    for (let look = 0; look < 100; look++) {
      balance = (await ledger.readBalance(handle)).balance;
      if (balance !== 5_000_000) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(balance, 4_998_000, 'the call is settled at the named binding: 5.00 EUR less 0.002');
  });
});
