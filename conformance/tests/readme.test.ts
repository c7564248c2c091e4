/**
 * The README holds to the code: its table of checks is the code's (same ids, levels, cites and
 * rules, same order), and its CI workflow names the package's tarball and the config `init` writes.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import pkg from '../package.json' with { type: 'json' };
import { CHECKS } from '../src/checks/index.ts';
import { PROPERTIES } from '../src/explore/run.ts';
import { DEFAULT_CONFIG_FILE } from '../src/init.ts';

test('the README lists every check as the code declares it', async () => {
  const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
  const table = /<!-- checks:start -->\n([\s\S]*?)\n<!-- checks:end -->/.exec(readme)?.[1];
  const expected = ['| id | level | cites | rule |', '|---|---|---|---|',
    ...CHECKS.map((c) => `| \`${c.id}\` | ${c.level} | ${c.cite} | ${c.title.replaceAll('|', '\\|')} |`)].join('\n');
  assert.equal(table, expected, `replace the table in conformance/README.md with:\n${expected}`);
});

test('the README\'s GitHub Actions workflow starts a binding, certifies it with the packed kit and uploads the JUnit file', async () => {
  const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
  const block = /A GitHub Actions workflow[\s\S]*?```yaml\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(block, 'the workflow block');
  const steps = (parseYaml(block) as { jobs: { certify: { steps: { name?: string; run?: string; uses?: string; if?: string; with?: { path?: string } }[] } } }).jobs.certify.steps;
  const index = (p: (step: (typeof steps)[number]) => boolean): number => steps.findIndex(p);
  const start = index((s) => /&\n[\s\S]*\/healthz/.test(s.run ?? ''));
  const install = index((s) => (s.run ?? '').includes(`npm install --no-save --no-audit --no-fund ./vendor/holon-conformance-${pkg.version}.tgz`));
  const certify = index((s) => (s.run ?? '').startsWith(`npx holon-conformance --config ${DEFAULT_CONFIG_FILE} --junit conformance.xml`));
  const upload = index((s) => s.uses?.startsWith('actions/upload-artifact@') === true && s.if === 'always()' && (s.with?.path ?? '').includes('conformance.xml'));
  assert.ok(start >= 0 && install > start && certify > install && upload > certify, `steps in order: start ${start}, install ${install}, certify ${certify}, upload ${upload}`);
});

test('the README lists every explore property as the code declares it', async () => {
  const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
  const rows = PROPERTIES.map((p) => `| \`${p.id}\` | ${p.cite} | ${p.title} |`);
  const table = ['| property | cites | rule |', '|---|---|---|', ...rows].join('\n');
  assert.ok(readme.includes(table), `put this table in conformance/README.md's explore section:\n${table}`);
});
