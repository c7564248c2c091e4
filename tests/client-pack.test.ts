/**
 * `@holon/client` as a third party gets it (issue 13 §2): `npm pack` in `clients/`, install the
 * tarball into an empty directory, then a plain Node ESM script and a strict TypeScript project
 * (compiled with `tsc --strict`, declarations checked too: `skipLibCheck` off) each call a running
 * dev gateway through the installed package: a call and its receipt, a 202 approval approved, a
 * refusal as a typed `HolonError`. The programs are `tests/fixtures/client-app/quickstart.*`, the
 * README's quick start.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { startGateway, type RunningGateway } from '../src/gateway/server.ts';
import { freshStore } from './helpers/gateway.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FIXTURE = path.join(ROOT, 'tests', 'fixtures', 'client-app');

let gateway: RunningGateway;
let app: string;

before(async () => {
  gateway = await startGateway({ port: 0, ...(await freshStore()), agent_dirs: ['examples'], agents_host_port: null, exclude: [], logger: pino({ level: 'silent' }) });
  app = await mkdtemp(path.join(tmpdir(), 'holon-client-app-'));
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', app], { cwd: path.join(ROOT, 'clients') });
  const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as Array<{ filename: string; files: Array<{ path: string }> }>;
  assert.ok(packed.files.every((file) => file.path.startsWith('dist/') || ['package.json', 'README.md'].includes(file.path)), 'only dist/, package.json and README.md are packed');
  await writeFile(path.join(app, 'package.json'), JSON.stringify({ name: 'client-app', private: true, type: 'module' }));
  await run('npm', ['install', '--no-audit', '--no-fund', '--offline', `./${packed.filename}`], { cwd: app });
  for (const file of ['quickstart.mjs', 'quickstart.ts']) await copyFile(path.join(FIXTURE, file), path.join(app, file));
});

after(async () => {
  await gateway?.close();
  if (app) await rm(app, { recursive: true, force: true });
});

/** What both quick starts must see against the dev gateway. */
function assertQuickStart(seen: Record<string, unknown>): void {
  assert.deepEqual(seen.output, { hours: 3 });
  assert.deepEqual({ ...(seen.receipt as object), id: undefined }, { id: undefined, status: 'succeeded', total: '0.02', same: true });
  assert.deepEqual(seen.held, { status: 'pending', receipt_status: 'pending_approval' });
  assert.deepEqual(seen.approved, { output: { hours: 1.5 }, same_receipt: true, status: 'succeeded' });
  assert.deepEqual(seen.refused, { status: 404, code: 'no_such_agent', receipt: true });
}

test('the installed package holds only compiled JavaScript and declarations, nothing from the repository', async () => {
  const installed = path.join(app, 'node_modules', '@holon', 'client');
  const files = await readdir(installed, { recursive: true });
  assert.ok(files.includes(path.join('dist', 'clients', 'src', 'index.js')));
  assert.ok(files.includes(path.join('dist', 'clients', 'src', 'index.d.ts')));
  assert.ok(files.includes(path.join('dist', 'clients', 'src', 'clearing.js')));
  assert.deepEqual(files.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts')), []);
});

test('a plain Node ESM script calls the gateway through the installed tarball', async () => {
  const { stdout } = await run(process.execPath, ['quickstart.mjs', gateway.url], { cwd: app });
  const seen = JSON.parse(stdout);
  assertQuickStart(seen);
  assert.equal(seen.unreachable, 'http://127.0.0.1:9');
});

test('a strict TypeScript project compiles against the declarations and calls the gateway', async () => {
  await writeFile(
    path.join(app, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2022', 'DOM', 'DOM.Iterable'],
        strict: true, skipLibCheck: false, outDir: 'dist', typeRoots: [path.join(ROOT, 'node_modules', '@types')], types: ['node'],
      },
      include: ['quickstart.ts'],
    }),
  );
  await run(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '--strict', '-p', '.'], { cwd: app });
  const { stdout } = await run(process.execPath, [path.join('dist', 'quickstart.js'), gateway.url], { cwd: app });
  assertQuickStart(JSON.parse(stdout));
});

test('the clearing client is its own entry point, @holon/client/clearing', async () => {
  const script = "import { createClearingClient, capabilities, HolonError } from '@holon/client/clearing'; console.log(typeof createClearingClient, typeof capabilities, typeof HolonError);";
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: app });
  assert.equal(stdout.trim(), 'function function function');
});
