/**
 * Builds the migrated PGlite template that new stores start from (`./template.ts`, issue 21 §4).
 * `npm run build` (`src/cli/build.mjs`, so `npm install`'s `prepare` and `npm test` too) runs
 * {@link refreshTemplate} on `dist/pglite/`; the tests' helpers run it on a scratch directory of
 * their own. A template already built for the current record is kept, so only a change of
 * PGlite or of `migrations/` costs a new one.
 */
import { randomUUID } from 'node:crypto';
import { access, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { openDatabase } from './index.ts';
import { currentRecord, TEMPLATE_ROOT, templateKey } from './template.ts';

/**
 * Makes sure `root` holds the template of the current record, and answers its directory
 * (`<root>/<key>`, holding `data/` and `template.json`). When it is missing: a store is created
 * and migrated from nothing under a private name, its gateway identity removed, its record written,
 * and the whole renamed into place, so a template directory that exists is complete; when another
 * process renamed its own first, that one is kept. `prune` removes every other entry of `root`
 * (older templates): for a root only one build uses at a time, as `dist/pglite/` is.
 */
export async function refreshTemplate(root = TEMPLATE_ROOT, options: { prune?: boolean } = {}): Promise<string> {
  const record = await currentRecord();
  const dir = path.join(root, templateKey(record));
  const built = await access(path.join(dir, 'template.json')).then(
    () => true,
    () => false,
  );
  if (!built) {
    await mkdir(root, { recursive: true });
    const building = `${dir}.build-${process.pid}-${randomUUID().slice(0, 8)}`;
    try {
      const database = await openDatabase({ dir: path.join(building, 'data') }, { template: null });
      try {
        await database.knex('gateway_identity').delete();
      } finally {
        await database.close();
      }
      await writeFile(path.join(building, 'template.json'), `${JSON.stringify(record, null, 1)}\n`);
      await rename(building, dir).catch(async (error) => {
        // Another process built the same template first (rename(2) onto a non-empty directory fails): keep theirs.
        if (!(await access(path.join(dir, 'template.json')).then(() => true, () => false))) throw error;
      });
    } finally {
      await rm(building, { recursive: true, force: true });
    }
  }
  if (options.prune) {
    for (const entry of await readdir(root)) if (entry !== path.basename(dir)) await rm(path.join(root, entry), { recursive: true, force: true });
  }
  return dir;
}
