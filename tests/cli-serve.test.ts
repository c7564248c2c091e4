/**
 * The server commands' papercuts (issue 13 §4): a busy port is reported at once, before any
 * database is opened; `DATABASE_URL` takes only `postgres://`/`postgresql://` and a failure is one
 * line without a stack trace; `holon clearing serve` does not collide with a dev gateway's own
 * binding directory; one log line per request (method, path, status, ms, receipt id); the
 * agents host's lines reach the gateway's log prefixed; `HOLON_LOG_LEVEL` is checked; `npm start`
 * starts the gateway; every environment variable the code reads is in the README's table.
 */
import assert from 'node:assert/strict';
import { access, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import lockfile from 'proper-lockfile';
import pino from 'pino';
import packageJson from '../package.json' with { type: 'json' };
import { startGateway } from '../src/gateway/server.ts';
import { BIN, closedPort, holon } from './helpers/cli.ts';
import { freshStore } from './helpers/gateway.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

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
  assert.equal(down.stderr, `holon: could not start the clearing binding: DATABASE_URL postgresql://holon:***@127.0.0.1:${port}/holon: connect ECONNREFUSED 127.0.0.1:${port}\n`);
});

test('holon serve --hosted refuses an out-of-bounds rate limit in one line, exit 1, before opening any database', async () => {
  // A data directory that cannot be made: were the setting let through, the start would fail on it, not hang.
  const env = { HOLON_RATE_ACCOUNT: '5000000', PORT: undefined, HOST: undefined, DATABASE_URL: undefined };
  const result = await holon(['serve', '--hosted', '--port', String(await closedPort()), '--db', '/dev/null/never-opened'], { env });
  assert.equal(result.code, 1);
  assert.equal(result.stderr, 'holon: could not start the gateway: refusing to start: HOLON_RATE_ACCOUNT must be a whole number from 1 to 1000000 (requests per account per minute); got "5000000"\n');
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
  const running = await startGateway({
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
    assert.deepEqual([miss.method, miss.path, miss.status, miss.receipt, miss.msg], ['GET', '/v0/nothing', 404, null, `GET /v0/nothing 404 ${miss.ms} ms`]);
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

test('every environment variable the code reads is in the README table', async () => {
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const table = readme.slice(readme.indexOf('## Environment variables'));
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
