/**
 * The `holon` command runs compiled JavaScript (issue 21 §4): `npm install` / `npm ci` build it
 * (the root's `prepare`), and `src/bin.mjs` runs dist/ while that build is as new as every source
 * it was built from, the sources through tsx otherwise, so a stale build never runs. Checked on a
 * copy of the repository's sources whose `src/cli.ts` is then swapped for a program that says it
 * ran: which one answers shows which `holon` ran.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, test } from 'node:test';
import { setUp } from '../helpers/hooks.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const packageJson = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string>; scripts: Record<string, string> };

/** The copy of the repository: what the build reads, `src/bin.mjs`, and the repository's node_modules linked in. */
let copy: string;

setUp(async () => {
  copy = await mkdtemp(path.join(tmpdir(), 'holon-compiled-'));
  for (const source of ['package.json', 'src', 'generated', 'migrations', path.join('clients', 'src')]) await cp(path.join(ROOT, source), path.join(copy, source), { recursive: true, filter: (file) => !file.includes(`${path.sep}dist${path.sep}`) });
  await symlink(path.join(ROOT, 'node_modules'), path.join(copy, 'node_modules'), 'dir');
  await run(process.execPath, [path.join(copy, 'src', 'cli', 'build.mjs')], { cwd: copy });
});

after(async () => {
  if (copy) await rm(copy, { recursive: true, force: true });
});

/** Runs the copy's `holon --version`: its exit code and stdout. */
async function version(): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await run(process.execPath, [path.join(copy, 'src', 'bin.mjs'), '--version'], { cwd: copy });
    return { code: 0, stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string };
    return { code: failed.code, stdout: failed.stdout };
  }
}

test('npm install and npm test build the command that package.json names: src/bin.mjs, which runs dist/', () => {
  assert.equal(packageJson.bin.holon, 'src/bin.mjs');
  assert.equal(packageJson.scripts.build, 'node src/cli/build.mjs');
  assert.match(packageJson.scripts.prepare, /&& npm run build$/);
  assert.match(packageJson.scripts.test, /^npm run build && /);
});

test('holon runs the compiled build while it is as new as its sources, and the sources once one is newer or the build is gone', async () => {
  const record = JSON.parse(await readFile(path.join(copy, 'dist', 'build.json'), 'utf8')) as { started_ms: number; inputs: string[] };
  assert.ok(record.inputs.includes('src/cli.ts') && record.inputs.includes('package.json') && record.inputs.includes('clients/src/index.ts'), record.inputs.join(', '));
  assert.ok((await stat(path.join(copy, 'dist', 'cli.js'))).isFile());

  // The sources' command line now says it ran; dated before the build, the build is still fresh.
  const cli = path.join(copy, 'src', 'cli.ts');
  await writeFile(cli, "export const program = { parseAsync: async () => { process.stdout.write('the sources ran\\n'); process.exit(9); } };\n");
  const before = new Date(record.started_ms - 60_000);
  await utimes(cli, before, before);
  assert.deepEqual(await version(), { code: 0, stdout: `${packageJson.version}\n` });

  // Edited after the build: the sources run, through tsx.
  const now = new Date();
  await utimes(cli, now, now);
  assert.deepEqual(await version(), { code: 9, stdout: 'the sources ran\n' });

  // Dated back but the build's record gone (a build that failed half-way): the sources run.
  await utimes(cli, before, before);
  await rm(path.join(copy, 'dist', 'build.json'));
  assert.deepEqual(await version(), { code: 9, stdout: 'the sources ran\n' });
});
