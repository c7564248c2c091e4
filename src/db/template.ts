/**
 * The migrated template of a PGlite store (issue 21 §4 "Start fast"). Creating a store runs
 * PGlite's initdb and then every migration, seconds of CPU, and `holon serve` creates two (the
 * gateway's and the reference binding's). The build does it once, into a template
 * (`./template-build.ts`, run by `npm run build`), and `openDatabase` starts a new store directory
 * as a copy of that template ({@link seedFromTemplate}), then runs only the migrations newer than
 * it: knex's table of migrations, copied with the rest, says which the template holds.
 *
 * A template is a directory `<root>/<key>/` holding `data/` (a closed PGlite data directory) and
 * `template.json` ({@link TemplateRecord}), written last. It is trusted only while its record
 * matches what runs: the same PGlite version, and every migration it holds still there, in the
 * same order, with the same text (sha256), at the head of `migrations/`. A stale or broken
 * template is ignored, never trusted, and the store is created as before.
 *
 * A template holds no gateway identity (migration 003's random id, which transaction and hold ids
 * carry): every copy would share it. A PGlite store without one draws its own when it is opened
 * ({@link drawIdentity}).
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { cp, readdir, readFile, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Knex } from 'knex';
import { migrationSource } from '../../migrations/index.ts';

/** Where `npm run build` keeps the template: `dist/pglite/` at the repository's root. */
export const TEMPLATE_ROOT = fileURLToPath(new URL('../../dist/pglite/', import.meta.url));

/** The folder of the migration files, `<name>.ts` for each name of `migrationSource`. */
const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

/** What a template was made with, in `template.json`: the PGlite version, and each migration it ran, in order, with the sha256 (hex) of its file. */
export interface TemplateRecord {
  pglite: string;
  migrations: Array<{ name: string; sha256: string }>;
}

/** The installed PGlite's version (its package.json, found beside the entry point Node resolves). */
async function pgliteVersion(): Promise<string> {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const manifest = JSON.parse(await readFile(path.join(path.dirname(entry), '..', 'package.json'), 'utf8')) as { version: string };
  return manifest.version;
}

/** The record a template made now would have: this PGlite, every migration of `migrations/` with its file's sha256. */
export async function currentRecord(): Promise<TemplateRecord> {
  const names = await migrationSource.getMigrations([]);
  const migrations = await Promise.all(
    names.map(async (name) => ({ name, sha256: createHash('sha256').update(await readFile(path.join(MIGRATIONS_DIR, `${name}.ts`))).digest('hex') })),
  );
  return { pglite: await pgliteVersion(), migrations };
}

/** The directory name of a template with `record`: the first 16 hex digits of the sha256 of its JSON. */
export function templateKey(record: TemplateRecord): string {
  return createHash('sha256').update(JSON.stringify(record)).digest('hex').slice(0, 16);
}

/** Whether a store copied from a template with `held` can be brought up to `current` by migrating: same PGlite, and `held`'s migrations are `current`'s first ones, unchanged. */
export function usable(held: TemplateRecord, current: TemplateRecord): boolean {
  if (held.pglite !== current.pglite || !Array.isArray(held.migrations) || held.migrations.length > current.migrations.length) return false;
  return held.migrations.every((migration, n) => migration?.name === current.migrations[n].name && migration.sha256 === current.migrations[n].sha256);
}

/**
 * The usable template of `root` holding the most migrations (the fewest left to run), as its
 * directory; null when there is none. What runs is read only when `root` holds a template, so a
 * process that has no templates (nor its `migrations/` files: the Docker image) never reads it.
 */
async function bestTemplate(root: string): Promise<string | null> {
  const entries = (await readdir(root).catch(() => [] as string[])).filter((entry) => /^[0-9a-f]{16}$/.test(entry));
  if (entries.length === 0) return null;
  const current = await currentRecord();
  let best: { dir: string; held: number } | null = null;
  for (const entry of entries) {
    let held: TemplateRecord;
    try {
      held = JSON.parse(await readFile(path.join(root, entry, 'template.json'), 'utf8')) as TemplateRecord;
    } catch {
      continue;
    }
    if (usable(held, current) && (!best || held.migrations.length > best.held)) best = { dir: path.join(root, entry), held: held.migrations.length };
  }
  return best?.dir ?? null;
}

/**
 * Makes the empty directory `dir` (absolute; its lock held by the caller) a copy of the best usable
 * template of `root`; answers whether it did. Nothing is done, and false answered, when `dir` has
 * any entry or no template is usable (or what runs cannot be read). The copy is made beside it (`<dir>.seed`, left over only by
 * a copy that was killed, and removed first) and renamed into place, so `dir` is either still
 * empty or a whole copy. A copy that fails (a template being rebuilt at that moment) leaves `dir`
 * empty, and the caller creates the store as it would without a template.
 */
export async function seedFromTemplate(dir: string, root = TEMPLATE_ROOT): Promise<boolean> {
  if ((await readdir(dir)).length > 0) return false;
  const seed = `${dir}.seed`;
  try {
    const template = await bestTemplate(root);
    if (!template) return false;
    await rm(seed, { recursive: true, force: true });
    // A clone where the filesystem can (copy-on-write), else a plain copy.
    await cp(path.join(template, 'data'), seed, { recursive: true, mode: constants.COPYFILE_FICLONE });
    // Replaces the empty `dir` at once (rename(2) onto an empty directory).
    await rename(seed, dir);
    return true;
  } catch {
    await rm(seed, { recursive: true, force: true });
    return false;
  }
}

/**
 * Gives a store without a gateway identity one, drawn as migration 003 draws it (12 random hex
 * digits); a store that has one keeps it. A store copied from a template has none until this runs,
 * at every PGlite open, so a process killed between the copy and this statement leaves a store
 * that still gets its own. Only for PGlite: one process holds a PGlite directory, so the check and
 * the insert cannot race, and a Postgres database was never copied (migration 003 drew its id).
 */
export async function drawIdentity(db: Knex): Promise<void> {
  await db.raw(`INSERT INTO gateway_identity (id) SELECT substr(md5(random()::text || clock_timestamp()::text), 1, 12) WHERE NOT EXISTS (SELECT 1 FROM gateway_identity)`);
}
