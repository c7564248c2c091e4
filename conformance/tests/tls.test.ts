/**
 * The kit certifies a binding served only over mutual TLS (issue 23 §4): the reference binding
 * behind its mutual-TLS gate, on the suite's database. With the client certificate, key and CA
 * (the config's `tls`, paths relative to the config file, or `--cert`, `--key`, `--ca`) a full run
 * passes and explore's fault proxy carries the credentials upstream; without them the kit stops
 * with exit 2 and a sentence that says which credential to give. Certificates:
 * `tests/helpers/certificates.ts` (openssl).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import type { Database } from '../../src/db/index.ts';
import { makeCertificates, type Certificates } from '../../tests/helpers/certificates.ts';
import { openTestDatabase } from '../../tests/helpers/clearing.ts';
import { ConfigError, loadConfig, parseConfig } from '../src/config.ts';
import { runExplore } from '../src/explore/run.ts';
import { formatReport } from '../src/report/text.ts';
import { runConformance } from '../src/runner.ts';
import { referenceFixtures, serveReference, type ServedBinding } from './reference-binding.ts';

const run = promisify(execFile);
const CLI = new URL('../src/cli.ts', import.meta.url).pathname;
const TSX = import.meta.resolve('tsx');

let db: Database;
let certificates: Certificates;
let binding: ServedBinding;
/** A config without credentials, and one with them (`tls`, relative paths), both in the certificates' directory. */
let bare: string;
let withTls: string;

before(async () => {
  db = await openTestDatabase();
  certificates = makeCertificates();
  binding = await serveReference(db, undefined, certificates.binding);
  // A binding behind mutual TLS runs no loopback gate: its callers are checked by certificate.
  const config = { url: binding.url, access: 'other', fixtures: await referenceFixtures(db, 0) };
  bare = join(certificates.dir, 'bare.json');
  withTls = join(certificates.dir, 'kit.json');
  await writeFile(bare, JSON.stringify(config));
  await writeFile(withTls, JSON.stringify({ ...config, tls: { cert: 'gateway.crt', key: 'gateway.key', ca: 'ca.crt' } }));
});
after(async () => {
  await binding?.close();
  await db?.close();
  certificates?.remove();
});

/** Runs the kit's command line; answers its exit code and output, whatever the code. */
async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', TSX, CLI, ...args]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

test('with the config\'s tls, every check passes against the binding behind mutual TLS', { timeout: 240_000 }, async () => {
  const config = await loadConfig(withTls);
  assert.deepEqual(config.tls, { cert: certificates.file('gateway', 'crt'), key: certificates.file('gateway', 'key'), ca: certificates.file('ca', 'crt') });
  const report = await runConformance(config);
  assert.deepEqual(report.results.filter((r) => r.outcome === 'fail' || r.outcome === 'warn').map((r) => r.id), [], formatReport(report));
  assert.equal(report.exit_code, 0);
});

test('explore with faults: the proxy reaches the binding with the credentials, and the properties hold', { timeout: 120_000 }, async () => {
  const report = await runExplore(await loadConfig(withTls), { seed: 20261205, budget_ms: 3_000, concurrency: 4, faults: ['lost-answers', 'duplicates'], fault_percent: 20 });
  assert.deepEqual(report.results.filter((r) => r.outcome !== 'pass').map((r) => r.id), [], formatReport(report));
  assert.ok(report.explore.requests > 0);
  assert.ok((report.explore.injected['lost-answers'] ?? 0) + (report.explore.injected.duplicates ?? 0) > 0, JSON.stringify(report.explore.injected));
});

test('the flags --cert, --key and --ca give the credentials on the command line', { timeout: 60_000 }, async () => {
  const out = await cli(['--config', bare, '--only', 'settle.moves-value', '--cert', certificates.file('gateway', 'crt'), '--key', certificates.file('gateway', 'key'), '--ca', certificates.file('ca', 'crt')]);
  assert.equal(out.code, 0, `${out.stdout}\n${out.stderr}`);
  assert.match(out.stdout, /PASS: every MUST check of clearing-contract version 1 passed/);
});

test('without the CA, the kit cannot trust the binding: exit 2, saying to give it', { timeout: 60_000 }, async () => {
  const out = await cli(['--config', bare]);
  assert.equal(out.code, 2, out.stdout);
  assert.match(out.stderr, new RegExp(`^holon-conformance: cannot reach the binding at ${binding.url.replaceAll('.', '\\.')}: fetch failed: self-signed certificate in certificate chain; if a CA of your own signed its certificate, give it \\(tls\\.ca in the config, or --ca\\)\\n$`));
});

test('without a client certificate, or with one another CA signed: the binding refuses it (403), exit 2, saying to give one', { timeout: 60_000 }, async () => {
  for (const credentials of [[], ['--cert', certificates.file('stranger', 'crt'), '--key', certificates.file('stranger', 'key')]]) {
    const out = await cli(['--config', bare, '--ca', certificates.file('ca', 'crt'), ...credentials]);
    assert.equal(out.code, 2, out.stdout);
    assert.match(out.stderr, /is not a clearing binding: GET \/internal\/clearing\/capabilities answered 403 \(application\/json; charset=utf-8\) "\{\\"error\\":\\"this binding answers only callers with a client certificate its CA signed; .*; it refused the kit: .*a client certificate its CA signed \(tls\.cert and tls\.key in the config, or --cert and --key\)\n$/);
  }
});

test('the config\'s tls is refused before anything is sent when it cannot work, naming the field', () => {
  const url = 'https://127.0.0.1:4100';
  const fixtures = { agent_key: 'a', unknown_agent_key: 'b', accounts: { payer: 'p', payee: 'q' } };
  const base = certificates.dir;
  const cases: [unknown, RegExp][] = [
    [{ url: 'http://127.0.0.1:4100', fixtures, tls: { ca: 'ca.crt' } }, /^tls is set but url http:\/\/127\.0\.0\.1:4100 is plain http/],
    [{ url, fixtures, tls: { cert: 'gateway.crt' } }, /^tls\.cert and tls\.key go together/],
    [{ url, fixtures, tls: { ca: 'ca.crt', pfx: 'x.p12' } }, /^tls\.pfx is not a field of tls/],
    [{ url, fixtures, tls: {} }, /^tls must name cert and key, or ca/],
    [{ url, fixtures, tls: { ca: 'missing.crt' } }, new RegExp(`^tls\\.ca: cannot read ${join(base, 'missing.crt').replaceAll('.', '\\.')}: ENOENT$`)],
    [{ url, fixtures, tls: { cert: 'gateway.key', key: 'gateway.key' } }, /^tls\.cert: .*gateway\.key is not a PEM certificate$/],
    [{ url, fixtures, tls: { cert: 'gateway.crt', key: 'gateway.crt' } }, /^tls\.key: .*gateway\.crt is not a PEM private key$/],
  ];
  for (const [input, message] of cases) {
    assert.throws(() => parseConfig(input, base), (e: unknown) => e instanceof ConfigError && message.test(e.message), JSON.stringify(input));
  }
});
