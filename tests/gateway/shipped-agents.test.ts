/**
 * Listing the shipped agents at start-up (`Registry.loadShipped`, gateway §6; issue 21 §4): a
 * version stored from the same directory with the same content is neither validated nor written
 * again; a manifest whose content changed (its endpoint included) is validated and replaces the
 * stored one, an invalid one is refused naming its file, and an excluded agent is taken out.
 */
import assert from 'node:assert/strict';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { openDatabase, type Database } from '../../src/db/index.ts';
import { Registry } from '../../src/gateway/registry.ts';
import { freshStore, storeTarget } from '../helpers/gateway.ts';

let scratch = '';
let store: { db: string; database_url?: string };
let database: Database;
/** A directory of shipped agents: a copy of `examples/word-stats` and `examples/estimate`. */
let shipped = '';
const WORD_STATS = 'holon-labs/word-stats';

before(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'holon-shipped-test-'));
  shipped = path.join(scratch, 'shipped');
  for (const agent of ['word-stats', 'estimate']) await cp(path.join('examples', agent), path.join(shipped, agent), { recursive: true });
  store = await freshStore();
  database = await openDatabase(storeTarget(store, 'gateway'));
});
after(async () => {
  await database?.close();
  await rm(scratch, { recursive: true, force: true });
  if (store) await rm(store.db, { recursive: true, force: true });
});

/** The stored row of `id` from the test's directory: its row version (`xmin`, new at every write) and its summary. */
async function storedRow(id: string): Promise<{ xmin: string; summary: string } | undefined> {
  const row = await database.knex('gateway_agents').where({ id, source: path.resolve(shipped, id.split('/')[1]) }).first(database.knex.raw('xmin::text AS xmin'), 'manifest');
  if (!row) return undefined;
  const manifest = typeof row.manifest === 'string' ? JSON.parse(row.manifest) : row.manifest;
  return { xmin: row.xmin as string, summary: manifest.summary as string };
}

test('an unchanged shipped agent is not written again; a changed one replaces what was stored', async () => {
  await Registry.loadShipped(database.knex, [shipped], []);
  const first = await storedRow(WORD_STATS);
  assert.ok(first);
  await Registry.loadShipped(database.knex, [shipped], []);
  assert.deepEqual(await storedRow(WORD_STATS), first);

  const file = path.join(shipped, 'word-stats', 'holon.yaml');
  const text = await readFile(file, 'utf8');
  await writeFile(file, text.replace(/^summary: .*$/m, 'summary: Counts words, edited.'));
  try {
    await Registry.loadShipped(database.knex, [shipped], []);
    const edited = await storedRow(WORD_STATS);
    assert.equal(edited?.summary, 'Counts words, edited.');
    assert.notEqual(edited?.xmin, first.xmin);
    // What is listed is what was stored.
    const registry = await Registry.fromDatabase(database.knex);
    assert.equal(registry.get(WORD_STATS, '1.0.0')?.loaded.manifest.summary, 'Counts words, edited.');
  } finally {
    await writeFile(file, text);
  }
});

test('an edited manifest that breaks the schema is refused naming its file, though the same version was stored valid', async () => {
  await Registry.loadShipped(database.knex, [shipped], []);
  const file = path.join(shipped, 'word-stats', 'holon.yaml');
  const text = await readFile(file, 'utf8');
  await writeFile(file, text.replace('license: Apache-2.0\n', ''));
  try {
    await assert.rejects(Registry.loadShipped(database.knex, [shipped], []), (error: Error) => error.message.startsWith(`${path.join(shipped, 'word-stats', 'holon.yaml')}: `) && /license/.test(error.message));
  } finally {
    await writeFile(file, text);
  }
});

test('an unchanged agent that is now excluded is taken out', async () => {
  await Registry.loadShipped(database.knex, [shipped], []);
  assert.ok(await storedRow(WORD_STATS));
  await Registry.loadShipped(database.knex, [shipped], [WORD_STATS]);
  assert.equal(await storedRow(WORD_STATS), undefined);
  assert.ok(await storedRow('acme/estimate'));
});
