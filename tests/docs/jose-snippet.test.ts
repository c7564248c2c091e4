/**
 * The plain-jose check of docs/callers.md ("With plain jose", issue 23 §1) runs as written from an
 * empty directory where only `jose` is installed (packed from this repository's node_modules, so
 * no registry is needed): it accepts a mandate the gateway signed and refuses one with a field
 * changed, in the JWS or in the JSON beside it.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { splitFences } from '../helpers/docs.ts';
import { useTestGateway } from '../helpers/gateway.ts';
import { setUp } from '../helpers/hooks.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const gw = useTestGateway();
let dir = '';

setUp(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'holon-jose-'));
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ name: 'verify-snippet', private: true, type: 'module' }));
  const { stdout } = await run('npm', ['pack', path.join(ROOT, 'node_modules', 'jose'), '--pack-destination', dir, '--silent'], { cwd: dir });
  await run('npm', ['install', '--no-audit', '--no-fund', '--offline', `./${stdout.trim()}`], { cwd: dir });
});
after(() => rm(dir, { recursive: true, force: true }));

/** The snippet: the page's js block that imports jose. */
async function snippet(): Promise<string> {
  const { fences } = splitFences(await readFile(path.join(ROOT, 'docs', 'callers.md'), 'utf8'));
  const found = fences.filter((fence) => fence.info === 'js' && fence.text.includes("from 'jose'"));
  assert.equal(found.length, 1, 'one plain-jose block');
  return found[0].text;
}

/** Runs the snippet on `mandate` (the saved answer of GET /v0/mandates/...). */
async function verify(mandate: unknown): Promise<{ code: number; stdout: string; stderr: string }> {
  await writeFile(path.join(dir, 'mandate.json'), JSON.stringify(mandate));
  try {
    const { stdout, stderr } = await run(process.execPath, ['verify-mandate.mjs', gw.running.url, 'mandate.json'], { cwd: dir });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

test('the plain-jose snippet verifies a signed mandate with only jose installed, and refuses a changed one', async () => {
  await writeFile(path.join(dir, 'verify-mandate.mjs'), await snippet());
  assert.deepEqual(await readdir(path.join(dir, 'node_modules')), ['.package-lock.json', 'jose']);
  const mandate = await gw.mandate();
  const answer = (await gw.http.get(`/v0/mandates/${mandate.id}`).expect(200)).body;
  const { keys } = (await gw.http.get('/.well-known/jwks.json').expect(200)).body;
  const ok = await verify(answer);
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stdout, `${mandate.id}: signed by ${gw.running.url} with key ${keys[0].kid}\n`);

  const beside = await verify({ ...answer, mandate: { ...answer.mandate, budget: { ...answer.mandate.budget, total: '99.00' } } });
  assert.equal(beside.code, 1);
  assert.match(beside.stderr, /the JSON beside the signature differs from the signed mandate/);

  const [header, payload, signature] = answer.jws.split('.');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
  claims.mandate.budget.total = '99.00';
  const forged = await verify({ ...answer, jws: `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}` });
  assert.equal(forged.code, 1);
  assert.match(forged.stderr, /signature verification failed/);
});
