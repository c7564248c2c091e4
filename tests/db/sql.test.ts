/**
 * Today's SQL in one place (issue 25 item 2): the migrations are frozen history, and the current
 * definition of every SQL function and trigger they leave in the database is one file of
 * `src/clearing/sql/` (the binding's money rules) or `src/db/sql/` (the other tables' guards),
 * named after its function: the function, then the triggers that fire it.
 *
 * How the texts are compared: in a freshly migrated database, inside a transaction that is rolled
 * back, every file is run (a trigger is dropped first, since a constraint trigger cannot be
 * replaced). The database's own rendering of each function (`pg_get_functiondef`: its arguments,
 * result, language, settings and body, byte for byte) and of each trigger (`pg_get_triggerdef`)
 * must be the same after as before. Nothing is normalised: the files' `--` comments outside a
 * function's body are not stored, and may change freely; anything else that changes needs a new
 * migration that applies the file's text.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import type { Knex } from 'knex';
import { openFreshDatabase } from '../helpers/clearing.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** The folders of live SQL, relative to the repository. */
const FOLDERS = ['src/clearing/sql', 'src/db/sql'];

/** One file of live SQL: where it is, the function it is named after, and its statements in order. */
interface LiveFile {
  file: string;
  fn: string;
  statements: string[];
}

/**
 * The statements of a SQL file, split at each `;` outside a `$$`-quoted body, `--` comments outside
 * bodies removed (a body keeps its comments: they are part of the stored text).
 */
function statementsOf(text: string): string[] {
  const statements: string[] = [];
  let current = '';
  let inBody = false;
  for (let i = 0; i < text.length; i++) {
    if (text.startsWith('$$', i)) {
      inBody = !inBody;
      current += '$$';
      i++;
    } else if (!inBody && text.startsWith('--', i)) {
      const end = text.indexOf('\n', i);
      i = end === -1 ? text.length : end - 1;
    } else if (!inBody && text[i] === ';') {
      statements.push(current.trim());
      current = '';
    } else {
      current += text[i];
    }
  }
  assert.equal(current.trim(), '', 'every statement ends with ;');
  return statements;
}

/** Every file of live SQL. */
async function liveFiles(): Promise<LiveFile[]> {
  const files: LiveFile[] = [];
  for (const folder of FOLDERS) {
    for (const name of (await readdir(path.join(ROOT, folder))).filter((n) => n.endsWith('.sql')).sort()) {
      const file = `${folder}/${name}`;
      files.push({ file, fn: name.slice(0, -'.sql'.length), statements: statementsOf(await readFile(path.join(ROOT, file), 'utf8')) });
    }
  }
  return files;
}

/** `CREATE [CONSTRAINT] TRIGGER name … ON table … EXECUTE FUNCTION fn()`: its name, table and function. */
const TRIGGER = /^CREATE (?:CONSTRAINT )?TRIGGER (\w+)\s.*?\sON (\w+)\s.*EXECUTE FUNCTION (\w+)\(\)$/s;

/** The database's rendering of every function of the public schema and of every trigger (by `function name(args)` / `trigger table.name`). */
async function definitions(k: Knex): Promise<Record<string, string>> {
  const functions: { rows: Array<{ key: string; def: string }> } = await k.raw(
    `SELECT 'function ' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' AS key, pg_get_functiondef(p.oid) AS def
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'`,
  );
  const triggers: { rows: Array<{ key: string; def: string }> } = await k.raw(
    `SELECT 'trigger ' || t.tgrelid::regclass::text || '.' || t.tgname AS key, pg_get_triggerdef(t.oid) AS def
       FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND NOT t.tgisinternal`,
  );
  return Object.fromEntries([...functions.rows, ...triggers.rows].map((row) => [row.key, row.def]).sort(([a], [b]) => a.localeCompare(b)));
}

test('each file of live SQL is one function named like the file, then only the triggers that fire it', async () => {
  const files = await liveFiles();
  assert.ok(files.length > 0);
  for (const { file, fn, statements } of files) {
    assert.match(statements[0], new RegExp(`^CREATE OR REPLACE FUNCTION ${fn}\\(`), file);
    for (const statement of statements.slice(1)) assert.equal(TRIGGER.exec(statement)?.[3], fn, `${file}: ${statement}`);
  }
});

test('the migrated database holds exactly the functions and triggers of the live SQL files, as they are written there', async () => {
  const files = await liveFiles();
  const { db, dispose } = await openFreshDatabase();
  try {
    const migrated = await definitions(db.knex);
    const trx = await db.knex.transaction();
    try {
      for (const { statements } of files) {
        for (const statement of statements) {
          const trigger = TRIGGER.exec(statement);
          if (trigger) await trx.raw(`DROP TRIGGER IF EXISTS ${trigger[1]} ON ${trigger[2]}`);
          await trx.raw(statement);
        }
      }
      // A file that differs from the database changes a definition or adds one; one missing leaves a key without a file.
      assert.deepEqual(await definitions(trx), migrated);
    } finally {
      await trx.rollback();
    }
    const named = new Set(files.flatMap(({ fn, statements }) => [fn, ...statements.map((s) => TRIGGER.exec(s)?.[1]).filter((t) => t !== undefined)]));
    const unnamed = Object.keys(migrated).map((key) => key.replace(/^function (\w+)\(.*$/, '$1').replace(/^trigger \w+\./, '')).filter((name) => !named.has(name));
    assert.deepEqual(unnamed, [], 'every function and trigger of the database has its live file');
  } finally {
    await dispose();
  }
});
