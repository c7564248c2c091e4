/**
 * The traceability table (docs/traceability.md, issue 25 §5) names only what exists: every test
 * file it links is a test file of the repository, every kit check id one the kit declares
 * (conformance/src/checks), and a rule that nothing covers says "not covered". Every numbered
 * section of the gateway seed (§1 to §7) has rows, and every clearing row quotes a MUST.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CHECKS } from '../../conformance/src/checks/index.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PAGE = path.join(ROOT, 'docs', 'traceability.md');
const CHECK_IDS = new Set(CHECKS.map((check) => check.id));

/** A row of the table: its section (`§6.11`), its rule, and the cells naming what covers it. */
interface Row {
  readonly table: string;
  readonly section: string;
  readonly rule: string;
  readonly tests: string;
  readonly checks: string;
}

/** The rows of every table of the page, with the heading of the table they are under. */
function rowsOf(markdown: string): Row[] {
  const rows: Row[] = [];
  let table = '';
  for (const line of markdown.split('\n')) {
    const heading = /^## (.+)$/.exec(line);
    if (heading) table = heading[1];
    const row = /^\| (§[\d.]+)([^:|]*): (.+?) \| (.+?) \| (.+?) \|$/.exec(line);
    if (row) rows.push({ table, section: row[1], rule: row[3], tests: row[4], checks: row[5] });
  }
  return rows;
}

/**
 * What is wrong with the table: a linked test file that does not exist (or is not a test), a kit
 * check id the kit does not declare, or a row that names nothing and does not say "not covered".
 */
function traceabilityProblems(markdown: string, checkIds: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  for (const { section, tests, checks } of rowsOf(markdown)) {
    const files = [...tests.matchAll(/\]\(\.\.\/([^)]+)\)/g)].map((match) => match[1]);
    for (const file of files) {
      if (!/^(tests\/[\w-]+(\/[\w-]+)?|conformance\/tests)\/[\w-]+\.test\.ts$/.test(file)) problems.push(`${section}: ${file} is not a test file path`);
      else if (!existsSync(path.join(ROOT, file))) problems.push(`${section}: ${file} does not exist`);
    }
    const ids = [...checks.matchAll(/`([^`]+)`/g)].map((match) => match[1]);
    for (const id of ids) if (!checkIds.has(id)) problems.push(`${section}: ${id} is not a check of the kit`);
    if (files.length === 0 && ids.length === 0 && !/\*\*not covered\*\*/.test(tests)) problems.push(`${section}: names no test or check and does not say **not covered**`);
  }
  return problems;
}

const markdown = readFileSync(PAGE, 'utf8');

test('every test file and kit check id the table names exists; a rule nothing covers says so', () => {
  assert.ok(rowsOf(markdown).length > 100, 'the table has its rows');
  assert.deepEqual(traceabilityProblems(markdown, CHECK_IDS), []);
});

test('every numbered section of the gateway seed has rows, and every clearing row quotes a MUST', () => {
  const rows = rowsOf(markdown);
  const gateway = new Set(rows.filter((row) => row.table === 'Gateway seed').map((row) => row.section.split('.')[0]));
  assert.deepEqual([...gateway].sort(), ['§1', '§2', '§3', '§4', '§5', '§6', '§7']);
  const clearing = rows.filter((row) => row.table.startsWith('Clearing contract'));
  assert.ok(clearing.length > 60);
  // §13's fail-closed places are "part of the contract" without the word MUST.
  for (const row of clearing) assert.match(row.rule, /MUST|fails CLOSED/, `${row.section}: ${row.rule}`);
});

test('the check fails on a test file or a check id that does not exist, and on a row that names nothing', () => {
  const fixture = [
    '## Clearing contract',
    '| rule | tests | kit checks |',
    '|---|---|---|',
    '| §6.8: settle MUST NOT invent a margin | [tests/clearing/settlements.test.ts](../tests/clearing/settlements.test.ts) | `settle.no-margin-accepted` |',
    '| §6.9: a made-up file | [tests/clearing/nothing.test.ts](../tests/clearing/nothing.test.ts) | — |',
    '| §6.10: a made-up check | — | `settle.made-up` |',
    '| §6.11: nothing at all | — | — |',
    '| §6.12: honest | **not covered**: a reason | — |',
  ].join('\n');
  assert.deepEqual(traceabilityProblems(fixture, CHECK_IDS), [
    '§6.9: tests/clearing/nothing.test.ts does not exist',
    '§6.10: settle.made-up is not a check of the kit',
    '§6.11: names no test or check and does not say **not covered**',
  ]);
});
