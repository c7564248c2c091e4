/**
 * Operating the hosted gateway (gateway §7 "Operating"): structured request logs that never
 * carry a key or an input, and the Dockerfile: every path it copies exists (the docs pages included), the image runs
 * the compiled command line (issue 21 §4: no TypeScript loader), every package that build and the
 * agents host import is installed by its `npm ci --omit=dev`, and its command, run from exactly
 * the files it copies with its environment, starts the hosted gateway and the shipped agents (a
 * `docker build` is not run here: the machines running the suite have no Docker daemon; its build
 * stage is played in a temporary directory instead, its install steps by this checkout's node_modules).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdtemp, rm, symlink } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { freshStore, waitFor } from '../helpers/gateway.ts';
import { closedPort } from '../helpers/cli.ts';
import { startTestHosted } from '../helpers/hosted.ts';

test('request logs carry method, path, status, duration and the key prefix; never a key, a query or an input', async () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  const hosted = await startTestHosted({ logger: pino({ level: 'info' }, sink) });
  try {
    const account = await hosted.signup();
    await hosted.http.post('/v0/calls').set('authorization', `Bearer ${account.agent}`).send({ mandate: account.mandate, agent: 'gt/run', input: { do: 'ok', marker: 'secret-input-marker' } }).expect(200);
    await hosted.http.get('/v0/auth/github/callback?code=secret-code&state=s').expect(503);
    const requests = lines.map((line) => JSON.parse(line)).filter((entry) => typeof entry.method === 'string' && 'status' in entry);
    const call = requests.find((entry) => entry.path === '/v0/calls');
    assert.deepEqual([call.method, call.status, call.principal, typeof call.ms], ['POST', 200, account.agent_prefix, 'number']);
    assert.equal(requests.find((entry) => entry.path === '/v0/signup').principal, 'none');
    const all = lines.join('\n');
    for (const secret of [account.agent, account.human, 'secret-input-marker', 'SECRET-INPUT-MARKER', 'secret-code']) assert.ok(!all.includes(secret), `the logs carry ${secret}`);
  } finally {
    await hosted.close();
  }
});

/** The Dockerfile's instructions, continuation lines joined, comments dropped: `[keyword, arguments]`. */
function dockerInstructions(text: string): Array<[string, string]> {
  return text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const [keyword, ...rest] = line.split(/\s+/);
      return [keyword.toUpperCase(), rest.join(' ')];
    });
}

/** The Dockerfile's stages in order: each one's name (`FROM … AS name`, else null) and instructions after its FROM. */
function dockerStages(instructions: Array<[string, string]>): Array<{ name: string | null; instructions: Array<[string, string]> }> {
  const stages: Array<{ name: string | null; instructions: Array<[string, string]> }> = [];
  for (const [keyword, args] of instructions) {
    if (keyword === 'FROM') stages.push({ name: /\sAS\s+(\S+)$/i.exec(args)?.[1] ?? null, instructions: [] });
    else stages.at(-1)!.instructions.push([keyword, args]);
  }
  return stages;
}

/** A COPY's sources and destination, and the stage it copies from (`--from=`; null: the build context); other flags such as `--chown` skipped, the JSON form too. */
function copyArguments(args: string): { sources: string[]; destination: string; from: string | null } {
  const from = /(?:^|\s)--from=(\S+)/.exec(args)?.[1] ?? null;
  const words = args.trim().startsWith('[') ? (JSON.parse(args) as string[]) : args.split(/\s+/).filter((word) => !word.startsWith('--'));
  return { sources: words.slice(0, -1), destination: words.at(-1)!, from };
}

/** Places each COPY of `copies` under `dir` (the stage's WORKDIR), its sources taken from `context`, or from `stages` (a stage's directory by name) for a `--from`. */
async function placeCopies(dir: string, copies: ReturnType<typeof copyArguments>[], context: string, stages: Record<string, string> = {}): Promise<void> {
  for (const { sources, destination, from } of copies) {
    for (const source of sources) {
      // A source of another stage is an absolute path in it: under its WORKDIR, /app.
      const origin = from === null ? path.join(context, source) : path.join(stages[from], path.relative(WORKDIR, source));
      const target = destination.endsWith('/') || destination === '.' ? path.join(dir, destination, path.basename(source)) : path.join(dir, destination);
      await cp(origin, target, { recursive: true });
    }
  }
}

/**
 * Bare package names the module graph from `entries` imports (static and dynamic, `import type`
 * left out: tsx erases it), following relative imports (`.js` naming a `.ts` file, as tsx does);
 * node builtins left out. Throws when a relative import names no file.
 */
function importedPackages(entries: readonly string[]): Set<string> {
  const found = new Set<string>();
  const seen = new Set<string>();
  const pending = [...entries];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file) || !/\.(ts|mjs|js)$/.test(file)) continue;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/^\s*(import|export)\s+(type\s)?[^'";]*?from\s*['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm)) {
      if (match[2]) continue;
      const specifier = match[3] ?? match[4] ?? match[5];
      if (specifier.startsWith('.')) {
        const target = path.resolve(path.dirname(file), specifier);
        const resolved = [target, target.replace(/\.js$/, '.ts')].find((candidate) => existsSync(candidate));
        if (!resolved) throw new Error(`${path.relative(ROOT, file)} imports ${specifier}: no such file`);
        pending.push(resolved);
      } else if (!specifier.startsWith('node:') && !builtinModules.includes(specifier.split('/')[0])) {
        found.add(specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]);
      }
    }
  }
  return found;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Every stage's WORKDIR in the Dockerfile (checked below). */
const WORKDIR = '/app';

describe('the Dockerfile (gateway §7 "Operating")', () => {
  const stages = dockerStages(dockerInstructions(readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8')));
  const image = stages.at(-1)!.instructions;
  const build = stages.find((stage) => stage.name === 'build')!;
  const copiesOf = (instructions: Array<[string, string]>) => instructions.filter(([keyword]) => keyword === 'COPY').map(([, args]) => copyArguments(args));
  const copies = copiesOf(image);
  const env = Object.fromEntries(image.filter(([keyword]) => keyword === 'ENV').map(([, args]) => args.split('=', 2) as [string, string]));
  const cmd = JSON.parse(image.find(([keyword]) => keyword === 'CMD')![1]) as string[];
  /** The image's /app, played here: the build stage's directory (its COPYs, this checkout's node_modules, its RUNs but the installs), then the image's COPYs. */
  let app = '';
  let built = '';

  before(async () => {
    built = await mkdtemp(path.join(tmpdir(), 'holon-image-build-'));
    await placeCopies(built, copiesOf(build.instructions), ROOT);
    await symlink(path.join(ROOT, 'node_modules'), path.join(built, 'node_modules'), 'dir');
    for (const [keyword, args] of build.instructions) {
      if (keyword !== 'RUN' || /^(npm ci|apt-get)\b/.test(args)) continue;
      const ran = spawnSync('sh', ['-c', args], { cwd: built, encoding: 'utf8', timeout: 120_000 });
      assert.equal(ran.status, 0, `RUN ${args}: ${ran.stderr}`);
    }
    app = await mkdtemp(path.join(tmpdir(), 'holon-image-'));
    await placeCopies(app, copies, ROOT, { build: built });
    await symlink(path.join(ROOT, 'node_modules'), path.join(app, 'node_modules'), 'dir');
  });
  after(async () => {
    for (const dir of [app, built]) if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('every path it copies exists; a build stage; production mode; the command runs the compiled holon serve --hosted', () => {
    assert.ok(copies.length > 0 && build !== undefined);
    for (const stage of stages) assert.deepEqual(stage.instructions.filter(([keyword]) => keyword === 'WORKDIR'), [['WORKDIR', WORKDIR]]);
    for (const { sources, from } of [...copies, ...copiesOf(build.instructions)]) {
      for (const source of sources) assert.ok(existsSync(from === null ? path.join(ROOT, source) : path.join(built, path.relative(WORKDIR, source))), `COPY ${source}: no such path`);
    }
    assert.equal(env.NODE_ENV, 'production');
    assert.deepEqual(cmd, ['node', 'dist/holon.js', 'serve', '--hosted']);
  });

  test('every package its command and the agents host import is a production dependency (the image installs with --omit=dev); no TypeScript loader', () => {
    const dependencies = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).dependencies as Record<string, string>;
    assert.ok(image.some(([keyword, args]) => keyword === 'RUN' && /npm ci --omit=dev/.test(args)));
    const packages = importedPackages([path.join(app, cmd[1]), path.join(app, 'agents', 'host.mjs')]);
    assert.ok(packages.has('koa') && !packages.has('tsx'), [...packages].join(', '));
    for (const name of packages) assert.ok(name in dependencies, `the gateway imports ${name}, which is not in dependencies`);
  });

  test('its command, run from exactly the files it copies with its environment, starts the gateway and the shipped agents', async () => {
    const store = await freshStore();
    const PORTS = { gateway: await closedPort(), agents: await closedPort() };
    // Production needs PostgreSQL: on a PGlite run the command is checked to refuse without it, then started in development mode.
    const production = store.database_url !== undefined;
    const settings = {
      HOLON_PUBLIC_URL: 'https://holon.example',
      HOLON_FILE_SECRET: 'f'.repeat(32),
      HOLON_ADMIN_KEY: 'a'.repeat(32),
      HOLON_TRUST_PROXY: '1',
      HOLON_SITE_URL: 'https://site.example',
    };
    const base = { PATH: process.env.PATH, ...env, HOST: '127.0.0.1', PORT: String(PORTS.gateway), HOLON_AGENTS_PORT: String(PORTS.agents), HOLON_LOG_LEVEL: 'warn' };
    const refused = spawnSync(cmd[0], cmd.slice(1), { cwd: app, env: { ...base, ...settings }, encoding: 'utf8', timeout: 120_000 });
    assert.equal(refused.status, 1, refused.stderr);
    assert.match(refused.stderr, /DATABASE_URL is required in production/);
    const child = spawn(cmd[0], cmd.slice(1), {
      cwd: app,
      env: { ...base, ...settings, ...(production ? { DATABASE_URL: store.database_url } : { NODE_ENV: 'development' }) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      const url = `http://127.0.0.1:${PORTS.gateway}`;
      const catalog = await waitFor(async () => {
        if (child.exitCode !== null) throw new Error(`the command exited ${child.exitCode}: ${stderr}`);
        const answer = await fetch(`${url}/v0/catalog`).catch(() => null);
        return answer?.status === 200 ? ((await answer.json()) as { agents: Array<{ id: string }> }) : null;
        // On PGlite two fresh stores are made (the image has no template: it is built for PostgreSQL): a bound, not a speed.
      }, 240_000);
      assert.ok(catalog.agents.some((agent) => agent.id === 'holon-labs/csv-profile'), JSON.stringify(catalog));
      // The shipped MCP agent answers through the agents host the gateway started.
      const tried = await fetch(`${url}/v0/demo/holon-labs/csv-profile`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ csv: 'a,b\n1,2\n' }) });
      assert.equal(tried.status, 200, await tried.clone().text());
      assert.equal(((await tried.json()) as { output: { rows: number } }).output.rows, 1);
      // The docs pages ship in the image: /docs links them and serves each from the copied docs/.
      const operators = await fetch(`${url}/docs/operators.md`);
      assert.equal(operators.status, 200);
      assert.equal(await operators.text(), readFileSync(path.join(ROOT, 'docs', 'operators.md'), 'utf8'));
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});

test('a request that fails because the database failed stops the gateway; a refused statement does not', async () => {
  const stopped: unknown[] = [];
  const hosted = await startTestHosted({ stop: (error) => stopped.push(error) });
  try {
    const account = await hosted.signup();
    assert.equal((await hosted.http.post('/v0/signup').send({ handle: account.handle, email: 'x@example.test' })).status, 409);
    assert.equal(stopped.length, 0);
    await hosted.running.db.knex.destroy();
    const failed = await hosted.http.get('/v0/me').set('authorization', `Bearer ${account.human}`);
    assert.deepEqual([failed.status, failed.body.code, stopped.length], [500, 'internal_error', 1]);
  } finally {
    await hosted.close();
  }
});
