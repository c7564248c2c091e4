/**
 * Opening the database brings its schema up to date (`src/db/index.ts`). Several gateway
 * processes may start at once on one empty Postgres (issue 12 §4): each must come up with the
 * whole schema, none refused because another is migrating. (On PGlite a directory has one
 * process, so there is no race to test.) A migration is frozen history (issue 25 item 2): it
 * imports nothing of `src/` nor another migration, so what it runs never changes after it ran.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { openDatabase } from '../../src/db/index.ts';
import { migrationSource } from '../../migrations/index.ts';
import { freshStore, storeTarget } from '../helpers/gateway.ts';

test('a database that already ran every migration opens without knex migrating it again (issue 21 §4)', async () => {
  const store = await freshStore();
  try {
    const first = await openDatabase(storeTarget(store, 'gateway'));
    // A lock knex's migrate would refuse to pass ("Migration table is already locked"): only a start that skips it opens.
    await first.knex('knex_migrations_lock').update({ is_locked: 1 });
    await first.close();
    const again = await openDatabase(storeTarget(store, 'gateway'));
    try {
      const rows: Array<{ name: string }> = await again.knex('knex_migrations').orderBy('id').select('name');
      assert.deepEqual(rows.map((row) => row.name), await migrationSource.getMigrations([]));
    } finally {
      await again.close();
    }
  } finally {
    await rm(store.db, { recursive: true, force: true });
  }
});

test('a database that lacks the newest migrations is brought up to date when it opens', async () => {
  const store = await freshStore();
  const names = await migrationSource.getMigrations([]);
  try {
    // A store an older version left: every migration but the last two.
    const older = await openDatabase(storeTarget(store, 'gateway'));
    for (let undone = 0; undone < 2; undone++) await older.knex.migrate.down({ migrationSource });
    assert.equal((await older.knex('knex_migrations').select('name')).length, names.length - 2);
    await older.close();
    const opened = await openDatabase(storeTarget(store, 'gateway'));
    try {
      const rows: Array<{ name: string }> = await opened.knex('knex_migrations').orderBy('id').select('name');
      assert.deepEqual(rows.map((row) => row.name), names);
    } finally {
      await opened.close();
    }
  } finally {
    await rm(store.db, { recursive: true, force: true });
  }
});

test('four processes opening one empty Postgres at once all start, and each migration runs exactly once', { skip: !process.env.DATABASE_URL && 'needs DATABASE_URL' }, async () => {
  const store = await freshStore();
  try {
    const opened = await Promise.allSettled(Array.from({ length: 4 }, () => openDatabase({ url: store.database_url! }, { poolMax: 2 })));
    const failures = opened.filter((o) => o.status === 'rejected').map((o) => String((o as PromiseRejectedResult).reason));
    const databases = opened.filter((o) => o.status === 'fulfilled').map((o) => (o as PromiseFulfilledResult<Awaited<ReturnType<typeof openDatabase>>>).value);
    try {
      assert.deepEqual(failures, []);
      const rows: Array<{ name: string }> = await databases[0].knex('knex_migrations').orderBy('id').select('name');
      assert.deepEqual(rows.map((row) => row.name), await migrationSource.getMigrations([]));
    } finally {
      await Promise.all(databases.map((database) => database.close()));
    }
  } finally {
    await rm(store.db, { recursive: true, force: true });
  }
});

test('a process waits for another one migrating at most migrationWaitS, then fails naming the bound', { skip: !process.env.DATABASE_URL && 'needs DATABASE_URL' }, async () => {
  const store = await freshStore();
  const other = new pg.Client({ connectionString: store.database_url });
  await other.connect();
  try {
    // Another process holding the migration lock and never letting go.
    await other.query("SELECT pg_advisory_lock(7525352728209221991)");
    await assert.rejects(openDatabase({ url: store.database_url! }, { migrationWaitS: 1 }), {
      message: 'another process has been migrating this database for more than 1 s (the bound on waiting for it): is it stuck?',
    });
    await other.query("SELECT pg_advisory_unlock(7525352728209221991)");
    const database = await openDatabase({ url: store.database_url! }, { migrationWaitS: 1 });
    await database.close();
  } finally {
    await other.end();
    await rm(store.db, { recursive: true, force: true });
  }
});

test('a migration imports only packages: nothing of src/ and no other migration (only index.ts lists them)', async () => {
  const dir = path.resolve(import.meta.dirname, '../../migrations');
  const names = (await readdir(dir)).filter((name) => /^\d{3}_.*\.ts$/.test(name));
  assert.equal(names.length, (await migrationSource.getMigrations([])).length);
  const relative: string[] = [];
  for (const name of names) {
    const text = await readFile(path.join(dir, name), 'utf8');
    for (const [, from] of text.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s+'([^']+)'/gm)) {
      if (from.startsWith('.') || from.startsWith('/')) relative.push(`${name} imports ${from}`);
    }
    for (const [, from] of text.matchAll(/\bimport\(\s*'([^']+)'/g)) relative.push(`${name} imports ${from} dynamically`);
  }
  assert.deepEqual(relative, []);
});
