/**
 * The migrated PGlite template new stores start from (issue 21 §4 "Start fast", `src/db/template.ts`):
 * a copy holds the template's migrations as they ran (the template is a store migrated from nothing)
 * and draws a gateway identity of its own;
 * a template that holds the first migrations only is brought up to date by running the rest; a
 * template that does not match what runs (another PGlite, a migration changed, missing or moved)
 * is ignored, and a directory that holds anything is never copied over.
 */
import assert from 'node:assert/strict';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Knex } from 'knex';
import { migrationSource } from '../../migrations/index.ts';
import { openDatabase } from '../../src/db/index.ts';
import { currentRecord, seedFromTemplate, templateKey, usable, type TemplateRecord } from '../../src/db/template.ts';
import { refreshTemplate } from '../../src/db/template-build.ts';

let scratch = '';
/** A root holding the template of the current record, built from nothing by this file. */
let root = '';
let record: TemplateRecord;

before(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'holon-template-test-'));
  root = path.join(scratch, 'templates');
  await refreshTemplate(root);
  record = await currentRecord();
});
after(() => rm(scratch, { recursive: true, force: true }));

/** knex's record of the migrations a store ran: name and time, in order. */
async function ran(db: Knex): Promise<Array<{ name: string; migration_time: string }>> {
  const rows = await db('knex_migrations').orderBy('id').select('name', 'migration_time');
  return rows.map((row) => ({ name: row.name, migration_time: new Date(row.migration_time).toISOString() }));
}

const identity = async (db: Knex): Promise<string[]> => (await db('gateway_identity').select('id')).map((row) => row.id as string);

test('a new store is a copy of the template: its migrations as they ran, and a gateway identity of its own', async () => {
  const [a, b] = [path.join(scratch, 'a'), path.join(scratch, 'b')];
  const first = await openDatabase({ dir: a }, { template: root });
  const second = await openDatabase({ dir: b }, { template: root });
  try {
    // Copied, not migrated again: both copies hold the template's rows of knex_migrations, to the millisecond.
    assert.deepEqual(await ran(first.knex), await ran(second.knex));
    assert.deepEqual((await ran(first.knex)).map((row) => row.name), await migrationSource.getMigrations([]));
    const [one, two] = [await identity(first.knex), await identity(second.knex)];
    assert.equal(one.length, 1);
    assert.match(one[0], /^[0-9a-f]{12}$/);
    assert.notDeepEqual(one, two);
  } finally {
    await Promise.all([first.close(), second.close()]);
  }
  // Reopened, a store keeps the identity it drew.
  const reopened = await openDatabase({ dir: a }, { template: root });
  try {
    assert.equal((await identity(reopened.knex)).length, 1);
  } finally {
    await reopened.close();
  }
});

test('a template holding the first migrations only is copied, then the newer migrations run on the copy', async () => {
  // A template one migration behind: a copy with its last migration undone, under the record without it.
  const behind = path.join(scratch, 'behind');
  const made = await openDatabase({ dir: path.join(scratch, 'made-behind') }, { template: root });
  await made.knex.migrate.down({ migrationSource });
  await made.knex('gateway_identity').delete();
  const before_ms = Date.now();
  await made.close();
  const held: TemplateRecord = { ...record, migrations: record.migrations.slice(0, -1) };
  await mkdir(path.join(behind, templateKey(held)), { recursive: true });
  await cp(path.join(scratch, 'made-behind'), path.join(behind, templateKey(held), 'data'), { recursive: true });
  await writeFile(path.join(behind, templateKey(held), 'template.json'), JSON.stringify(held));

  const store = await openDatabase({ dir: path.join(scratch, 'from-behind') }, { template: behind });
  try {
    const rows = await ran(store.knex);
    assert.deepEqual(rows.map((row) => row.name), await migrationSource.getMigrations([]));
    // The last one ran now, on the copy; the others came with it.
    assert.ok(Date.parse(rows.at(-1)!.migration_time) >= before_ms, JSON.stringify(rows.at(-1)));
    assert.ok(rows.slice(0, -1).every((row) => Date.parse(row.migration_time) < before_ms));
    assert.equal((await identity(store.knex)).length, 1);
  } finally {
    await store.close();
  }
});

test('a template that does not match what runs is ignored: another PGlite, a migration changed, moved or missing', async () => {
  const changed = (n: number): TemplateRecord => ({ ...record, migrations: record.migrations.map((m, i) => (i === n ? { ...m, sha256: '0'.repeat(64) } : m)) });
  assert.equal(usable(record, record), true);
  assert.equal(usable({ ...record, migrations: record.migrations.slice(0, 3) }, record), true);
  assert.equal(usable({ ...record, pglite: '0.0.1' }, record), false);
  assert.equal(usable(changed(0), record), false);
  assert.equal(usable({ ...record, migrations: [record.migrations[1], record.migrations[0], ...record.migrations.slice(2)] }, record), false);
  assert.equal(usable({ ...record, migrations: record.migrations.slice(1) }, record), false);
  assert.equal(usable({ ...record, migrations: [...record.migrations, { name: '999_later', sha256: '0'.repeat(64) }] }, record), false);

  // On disk: the built template with one migration's text changed in its record is not copied.
  const stale = path.join(scratch, 'stale');
  const key = (await readdir(root))[0];
  await cp(path.join(root, key), path.join(stale, key), { recursive: true });
  const file = path.join(stale, key, 'template.json');
  const text = JSON.parse(await readFile(file, 'utf8')) as TemplateRecord;
  await writeFile(file, JSON.stringify({ ...text, migrations: changed(record.migrations.length - 1).migrations }));
  const dir = path.join(scratch, 'not-seeded');
  await mkdir(dir);
  assert.equal(await seedFromTemplate(dir, stale), false);
  assert.deepEqual(await readdir(dir), []);
  assert.equal(await seedFromTemplate(dir, root), true);
});

test('a directory holding anything is never copied over; a copy a killed process left beside it is replaced', async () => {
  const full = path.join(scratch, 'full');
  await mkdir(full);
  await writeFile(path.join(full, 'mine.txt'), 'kept');
  assert.equal(await seedFromTemplate(full, root), false);
  assert.deepEqual(await readdir(full), ['mine.txt']);

  const dir = path.join(scratch, 'after-kill');
  await mkdir(dir);
  await mkdir(`${dir}.seed`);
  await writeFile(path.join(`${dir}.seed`, 'half-copied'), '');
  assert.equal(await seedFromTemplate(dir, root), true);
  assert.ok((await readdir(dir)).includes('PG_VERSION'));
  assert.ok(!(await readdir(dir)).includes('half-copied'));
  await assert.rejects(readdir(`${dir}.seed`), { code: 'ENOENT' });
});
