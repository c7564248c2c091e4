/**
 * `@holon/client` as a third party gets it (issue 13 §2, issue 26): `npm pack` in `clients/`,
 * install the tarball into an empty directory, then a plain Node ESM script
 * (`tests/fixtures/client-app/quickstart.mjs`) calls a running dev gateway through the installed
 * package; and for each TypeScript a new user may have (the one Holon pins and the newest on npm),
 * a new project set up as `npx tsc --init` writes it compiles the README's quick start, copied from
 * `clients/README.md`, runs it against the gateway, and compiles the README's "Keys" snippet once
 * `@types/node` is added the way the README says.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, test } from 'node:test';
import { useDevGateway } from '../helpers/gateway.ts';
import { setUp } from '../helpers/hooks.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURE = path.join(ROOT, 'tests', 'fixtures', 'client-app');
const ROOT_PACKAGE = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };

/**
 * The TypeScript versions a new project may use: the one Holon pins (`package.json`), and the
 * newest published on npm when this was written (`npm view typescript version`: 7.0.2, the native
 * compiler; bump it when a newer one is out). Each is installed into the project from npm (the
 * local cache first), as a user does.
 */
const TYPESCRIPTS = [ROOT_PACKAGE.devDependencies.typescript, '7.0.2'];

/** Where the README's quick start points; the test points it at its own gateway instead. */
const README_GATEWAY = 'http://127.0.0.1:4000';

const gateway = useDevGateway();
/** The directory holding the packed tarball, and the projects installing it. */
let work: string;
let tarball: string;
let app: string;

setUp(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'holon-client-'));
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: path.join(ROOT, 'clients') });
  const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as Array<{ filename: string; files: Array<{ path: string }> }>;
  assert.ok(packed.files.every((file) => file.path.startsWith('dist/') || ['package.json', 'README.md'].includes(file.path)), 'only dist/, package.json and README.md are packed');
  tarball = path.join(work, packed.filename);
  app = await newProject('app');
  await run('npm', ['install', '--no-audit', '--no-fund', '--offline', tarball], { cwd: app });
  await copyFile(path.join(FIXTURE, 'quickstart.mjs'), path.join(app, 'quickstart.mjs'));
});

after(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

/** An empty project directory under the work directory, an ES module package as the README asks (`"type": "module"`). */
async function newProject(name: string): Promise<string> {
  const dir = path.join(work, name);
  await mkdir(dir);
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ name, private: true, type: 'module' }));
  return dir;
}

/** The first ```ts block under the `## <heading>` section of `clients/README.md`. */
async function readmeBlock(heading: string): Promise<string> {
  const readme = await readFile(path.join(ROOT, 'clients', 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf(`\n## ${heading}\n`));
  const block = /```ts\n([\s\S]*?)```/.exec(section);
  assert.ok(block, `clients/README.md has a ts block under "## ${heading}"`);
  return block[1];
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
  assert.deepEqual(seen.output, { hours: 3 });
  assert.deepEqual({ ...seen.receipt, id: undefined }, { id: undefined, status: 'succeeded', total: '0.02', same: true });
  assert.deepEqual(seen.held, { status: 'pending', receipt_status: 'pending_approval' });
  assert.deepEqual(seen.approved, { output: { hours: 1.5 }, same_receipt: true, status: 'succeeded' });
  assert.deepEqual(seen.refused, { status: 404, code: 'no_such_agent', receipt: true });
  assert.equal(seen.unreachable, 'http://127.0.0.1:9');
});

for (const typescript of TYPESCRIPTS) {
  test(`TypeScript ${typescript} under \`tsc --init\`'s defaults: the README's quick start compiles and runs, its "Keys" snippet compiles with @types/node`, async () => {
    const project = await newProject(`typescript-${typescript.replace(/[^0-9.]/g, '')}`);
    const npm = (...args: string[]) => run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...args], { cwd: project });
    const tsc = (...args: string[]) => run('npx', ['--no', '--', 'tsc', ...args], { cwd: project });
    await npm(tarball, '--save-dev', `typescript@${typescript}`);
    await tsc('--init');
    const tsconfig = await readFile(path.join(project, 'tsconfig.json'), 'utf8');
    // The defaults that refused the quick start before (issue 26): exact optional properties, no ambient types.
    assert.match(tsconfig, /^\s*"exactOptionalPropertyTypes": true,$/m);
    assert.match(tsconfig, /^\s*"types": \[\],$/m);

    const quickStart = await readmeBlock('Quick start');
    assert.ok(quickStart.includes(`'${README_GATEWAY}'`));
    await writeFile(path.join(project, 'quickstart.ts'), quickStart.replace(`'${README_GATEWAY}'`, `'${gateway.url}'`));
    await tsc();
    // The declarations are checked too, not only the program.
    await tsc('--skipLibCheck', 'false');
    const { stdout } = await run(process.execPath, ['quickstart.js'], { cwd: project });
    assert.equal(
      stdout,
      [
        '{ hours: 3 }',
        'succeeded 0.02 EUR',
        'waiting: worst case 1.00 EUR is above the approval threshold 0.05 EUR (worst case 1.00)',
        '{ hours: 1.5 }',
        '404 no_such_agent no listed agent matches nobody/nothing: GET /v0/agents lists the agents offered',
        '',
      ].join('\n'),
    );

    // "Keys": process.env's `string | undefined` as the key, once @types/node is listed in "types".
    await writeFile(path.join(project, 'keys.ts'), await readmeBlock('Keys'));
    await npm('--save-dev', `@types/node@${ROOT_PACKAGE.devDependencies['@types/node']}`);
    await writeFile(path.join(project, 'tsconfig.json'), tsconfig.replace('"types": []', '"types": ["node"]'));
    await tsc();
  });
}

test('the clearing client is its own entry point, @holon/client/clearing', async () => {
  const script = "import { createClearingClient, capabilities, HolonError } from '@holon/client/clearing'; console.log(typeof createClearingClient, typeof capabilities, typeof HolonError);";
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: app });
  assert.equal(stdout.trim(), 'function function function');
});
