/**
 * The README's table of checks is the code's: same ids, levels, cites and rules, same order.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { CHECKS } from '../src/checks/index.ts';

test('the README lists every check as the code declares it', async () => {
  const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
  const table = /<!-- checks:start -->\n([\s\S]*?)\n<!-- checks:end -->/.exec(readme)?.[1];
  const expected = ['| id | level | cites | rule |', '|---|---|---|---|',
    ...CHECKS.map((c) => `| \`${c.id}\` | ${c.level} | ${c.cite} | ${c.title.replaceAll('|', '\\|')} |`)].join('\n');
  assert.equal(table, expected, `replace the table in conformance/README.md with:\n${expected}`);
});
