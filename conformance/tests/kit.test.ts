/**
 * The kit passes correct bindings (every operation; only the four REQUIRED ones, funded through
 * `prefunded`; periods; deferred finality), warns rather than passes when it cannot set up a case,
 * can run again and again against one binding, and exits 0, 1 or 2 from the command line.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { CHECKS } from '../src/checks/index.ts';
import { loadConfig } from '../src/config.ts';
import { formatReport } from '../src/report/text.ts';
import { runConformance, type ConformanceReport, type RunOptions } from '../src/runner.ts';
import { FAKE_FIXTURES, REQUIRED_ONLY, startFakeBinding, type FakeOptions } from './fake-binding.ts';

const run = promisify(execFile);
const CLI = new URL('../src/cli.ts', import.meta.url).pathname;
/** tsx by URL, so the command line runs from any directory (a test's temporary one too). */
const TSX = import.meta.resolve('tsx');

/** Every check but the expiry checks, which wait for a window to close (run in the first test). */
const WITHOUT_EXPIRY = CHECKS.map((c) => c.id).filter((id) => !id.startsWith('expiry.'));

/** A config for a fake at `url`. */
function configFor(url: string, prefunded = 0, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { url, fixtures: { ...FAKE_FIXTURES, prefunded }, ...extra };
}

/** Starts a fake with `options`, runs the kit against it, stops the fake. */
async function kitAgainst(options: FakeOptions, runOptions: RunOptions = { only: WITHOUT_EXPIRY }, extra: Record<string, unknown> = {}): Promise<ConformanceReport> {
  const fake = await startFakeBinding(options);
  try {
    return await runConformance(configFor(fake.url, options.prefunded ?? 0, extra), runOptions);
  } finally {
    await fake.close();
  }
}

/** Asserts no check failed or warned; the message shows the report when one did. */
function assertClean(report: ConformanceReport): void {
  const bad = report.results.filter((r) => r.outcome === 'fail' || r.outcome === 'warn');
  assert.deepEqual(bad.map((r) => r.id), [], formatReport(report));
  assert.equal(report.exit_code, 0);
}

const outcomeOf = (report: ConformanceReport, id: string): string | undefined => report.results.find((r) => r.id === id)?.outcome;

describe('the kit passes correct bindings', () => {
  test('a binding offering every operation: every check passes or is skipped for a stated reason', async () => {
    const report = await kitAgainst({}, {});
    assertClean(report);
    assert.equal(report.results.length, CHECKS.length);
    assert.deepEqual(report.results.filter((r) => r.outcome === 'skip').map((r) => r.id).sort(), [
      'balance.no-reservations', 'capabilities.period-shape', 'capabilities.unlisted-not-offered', 'finality.deferred-carries-state',
    ]);
    assert.equal(report.funding, 'credit');
  });

  test('a binding offering only the four REQUIRED operations, funded through prefunded', async () => {
    const report = await kitAgainst({ operations: REQUIRED_ONLY, prefunded: 1000 }, {});
    assertClean(report);
    assert.equal(report.funding, 'prefunded');
    assert.equal(outcomeOf(report, 'capabilities.unlisted-not-offered'), 'pass', 'the absence of every other operation is checked');
    assert.equal(outcomeOf(report, 'balance.no-reservations'), 'pass');
    const skipped = report.results.find((r) => r.id === 'draw.bills');
    assert.equal(skipped?.outcome, 'skip');
    assert.match(skipped?.reason ?? '', /does not offer open-hold, draw/);
  });

  test('a binding that declares periods: period and opened_in are checked, not skipped', async () => {
    const report = await kitAgainst({ periods: true });
    assertClean(report);
    for (const id of ['capabilities.period-shape', 'periods.balance-reads', 'periods.reservation-records', 'periods.value-moving']) {
      assert.equal(outcomeOf(report, id), 'pass', id);
    }
  });

  test('a binding that declares deferred finality and carries state on every accepted answer', async () => {
    const report = await kitAgainst({ finality: 'deferred' });
    assertClean(report);
    assert.equal(outcomeOf(report, 'finality.deferred-carries-state'), 'pass');
    assert.equal(outcomeOf(report, 'finality.immediate-states'), 'skip');
  });

  test('access "other" skips the loopback gate and nothing else', async () => {
    const report = await kitAgainst({}, { only: ['transport'] }, { access: 'other' });
    assertClean(report);
    assert.deepEqual(report.results.filter((r) => r.outcome === 'skip').map((r) => r.id), ['transport.health-outside-gate', 'transport.forwarded-refused']);
  });
});

describe('the kit proves what it claims', () => {
  test('without funds it warns instead of passing: holds on a binding with neither credit nor adjust, nothing prefunded', async () => {
    const operations = REQUIRED_ONLY.concat(['open-hold', 'release-hold', 'read-reservation']);
    const report = await kitAgainst({ operations, prefunded: 0 }, { only: ['reservations'] });
    const warned = report.results.find((r) => r.id === 'hold.moves-no-value');
    assert.equal(warned?.outcome, 'warn');
    assert.match(warned?.reason ?? '', /prefunded/);
    assert.equal(report.results.filter((r) => r.outcome === 'pass' && r.id.startsWith('hold.moves')).length, 0);
    assert.equal(report.exit_code, 0, 'a warning is not a failure');
    assert.match(formatReport(report), /WARNING {2}hold\.moves-no-value/);
  });

  test('runs again and again against the same binding: identifiers are run-unique, the prefunded units are given back', async () => {
    const fake = await startFakeBinding({ operations: REQUIRED_ONLY.concat(['open-hold', 'draw', 'release-hold']), prefunded: 200 });
    try {
      const config = configFor(fake.url, 200);
      const first = await runConformance(config, { only: WITHOUT_EXPIRY });
      const second = await runConformance(config, { only: WITHOUT_EXPIRY });
      assertClean(first);
      assertClean(second);
      assert.notEqual(first.run_prefix, second.run_prefix);
      assert.ok(first.notes.some((n) => /settled \d+ back/.test(n)), first.notes.join('\n'));
    } finally {
      await fake.close();
    }
  });
});

describe('the command line', () => {
  const scratch: string[] = [];
  /** A fresh directory for a test's configs and reports, removed after the suite. */
  async function scratchDir(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'holon-conformance-'));
    scratch.push(dir);
    return dir;
  }
  after(() => Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true }))));

  /** Runs the bin; answers exit code and output. */
  async function cli(args: string[], options: { cwd?: string } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await run(process.execPath, ['--import', TSX, CLI, ...args], options);
      return { code: 0, stdout, stderr };
    } catch (error) {
      const e = error as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  test('exit 0 on a correct binding, writing the JSON and JUnit reports', async () => {
    const dir = await scratchDir();
    const fake = await startFakeBinding();
    try {
      await writeFile(join(dir, 'config.json'), JSON.stringify(configFor(fake.url)));
      const out = await cli(['--config', join(dir, 'config.json'), '--only', 'settlements,idempotency.settle-replay', '--json', join(dir, 'r.json'), '--junit', join(dir, 'r.xml')]);
      assert.equal(out.code, 0, out.stdout + out.stderr);
      assert.match(out.stdout, /\[ 1\/2\] settlements/);
      assert.match(out.stdout, /PASS: every MUST check of clearing-contract version 1 passed/);
      const json = JSON.parse(await readFile(join(dir, 'r.json'), 'utf8')) as ConformanceReport;
      assert.equal(json.results.length, 22);
      const xml = await readFile(join(dir, 'r.xml'), 'utf8');
      assert.match(xml, /<testsuites[^>]* tests="22" failures="0"/);
    } finally {
      await fake.close();
    }
  });

  test('exit 1 when a MUST check fails, with the failure and a curl line on stdout', async () => {
    const dir = await scratchDir();
    const fake = await startFakeBinding({ fault: 'settle-replay-applies-twice' });
    try {
      await writeFile(join(dir, 'config.json'), JSON.stringify(configFor(fake.url)));
      const out = await cli(['--config', join(dir, 'config.json'), '--only', 'idempotency.settle-replay', '--junit', join(dir, 'r.xml')]);
      assert.equal(out.code, 1, out.stdout + out.stderr);
      assert.match(out.stdout, /FAILED {2}idempotency\.settle-replay {2}MUST/);
      assert.match(out.stdout, /reproduce: curl -sS -i -X POST '.*\/internal\/ledger\/charge'/);
      assert.match(await readFile(join(dir, 'r.xml'), 'utf8'), /<failure message="the repeated settle: applied is true" type="MUST">[^<]*<!\[CDATA\[[\s\S]*reproduce: curl/, 'the failure body carries the full text');
    } finally {
      await fake.close();
    }
  });

  test('exit 2 for an invalid config, an unknown check, a fixture account not created and an unreachable binding', async () => {
    const dir = await scratchDir();
    await writeFile(join(dir, 'bad.json'), JSON.stringify({ fixtures: {} }));
    const bad = await cli(['--config', join(dir, 'bad.json')]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /url must be a non-empty string/);
    const fake = await startFakeBinding();
    const url = fake.url;
    await writeFile(join(dir, 'ok.json'), JSON.stringify(configFor(url)));
    const unknown = await cli(['--config', join(dir, 'ok.json'), '--only', 'no.such-check']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /matches no check/);
    const missing = { url, fixtures: { ...FAKE_FIXTURES, accounts: { ...FAKE_FIXTURES.accounts, payee: 'never-created' } } };
    await writeFile(join(dir, 'missing.json'), JSON.stringify(missing));
    const unset = await cli(['--config', join(dir, 'missing.json')]);
    assert.equal(unset.code, 2, 'a fixture account the binding does not have is a set-up problem, not 100 failed checks');
    assert.match(unset.stderr, /fixtures\.accounts\.payee: the binding has no account never-created/);
    await fake.close();
    const down = await cli(['--config', join(dir, 'ok.json')]);
    assert.equal(down.code, 2);
    assert.match(down.stderr, /cannot reach the binding/);
    const none = await cli([]);
    assert.equal(none.code, 2, 'no --config');
    assert.match(none.stderr, /--config <file> is required \(write one with: holon-conformance init\)/);
  });

  test('exit 2, saying so, when what answers is not a clearing binding: the gateway, a web page, another JSON API', async () => {
    const dir = await scratchDir();
    const answers: [string, number, string, string][] = [
      // What a Holon gateway answers on the binding's path (its own router's refusal).
      ['a Holon gateway', 404, 'application/json', '{"error":"GET /internal/clearing/capabilities is not an operation of this contract","code":"no_such_route"}'],
      ['a web server', 200, 'text/html', '<!doctype html><title>Welcome</title>'],
      ['another JSON API', 200, 'application/json', '{"ok":true}'],
    ];
    for (const [what, status, type, body] of answers) {
      const server = createServer((_req, res) => res.writeHead(status, { 'content-type': type }).end(body));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        await writeFile(join(dir, 'conf.json'), JSON.stringify(configFor(url)));
        const out = await cli(['--config', join(dir, 'conf.json')]);
        assert.equal(out.code, 2, `${what}: ${out.stdout}${out.stderr}`);
        assert.match(out.stderr, new RegExp(`${url} is not a clearing binding: GET /internal/clearing/capabilities answered ${status} \\(${type}\\)`), what);
        assert.match(out.stderr, /check `url` in the config/, what);
        assert.doesNotMatch(out.stdout, /FAILED/, `${what}: no check runs`);
      } finally {
        server.close();
      }
    }
  });

  test('init writes a commented YAML config that runs as written; it never overwrites one without --force', async () => {
    const dir = await scratchDir();
    const made = await cli(['init'], { cwd: dir });
    assert.equal(made.code, 0, made.stderr);
    const file = join(dir, 'holon-conformance.yaml');
    const text = await readFile(file, 'utf8');
    for (const field of ['url', 'access', 'headers', 'timeout_ms', 'payer', 'payee', 'agent_key', 'unknown_agent_key', 'prefunded']) {
      assert.match(text, new RegExp(`#[^\\n]*\\n\\s*(#[^\\n]*\\n\\s*)*${field}:`), `${field} has a comment above it`);
    }
    assert.deepEqual(await loadConfig(file), {
      url: 'http://127.0.0.1:4100', headers: {}, access: 'loopback', timeout_ms: 10_000, tls: null,
      fixtures: { agent_key: 'conf-agent', unknown_agent_key: 'conf-nobody', accounts: { payer: 'conf-payer', payee: 'conf-payee' }, prefunded: 0 },
    });
    const again = await cli(['init'], { cwd: dir });
    assert.equal(again.code, 2);
    assert.match(again.stderr, /holon-conformance\.yaml already exists; edit it, or pass --force/);
    const fake = await startFakeBinding();
    try {
      await writeFile(file, text.replace('http://127.0.0.1:4100', fake.url));
      const out = await cli(['--config', file, '--only', 'settle.moves-value']);
      assert.equal(out.code, 0, out.stdout + out.stderr);
    } finally {
      await fake.close();
    }
    assert.equal((await cli(['init', '--force'], { cwd: dir })).code, 0);
    assert.equal(await readFile(file, 'utf8'), text, '--force writes the template afresh');
  });

  test('--help lists every option with an example, the exit codes, and the contract version', async () => {
    const help = await cli(['--help']);
    assert.equal(help.code, 0);
    for (const option of ['--config', '--only', '--json', '--junit', '--cert', '--key', '--ca']) assert.match(help.stdout, new RegExp(`e\\.g\\. ${option}\\s+\\S`), option);
    assert.match(help.stdout, /init \[options\] \[file\][\s\S]*e\.g\. holon-conformance init/);
    assert.match(help.stdout, /clearing-contract version 1/);
    assert.match(help.stdout, /Exit status:\n {2}0 [^\n]*\n {2}1 [^\n]*\n {2}2 /);
  });
});
