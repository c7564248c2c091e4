// Which `holon` program to run (issue 21 §4): the compiled one of dist/ that `./build.mjs` wrote,
// when it is at least as new as every source it was built from. Plain JavaScript, so `src/bin.mjs`
// decides without loading TypeScript.
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The repository's root, as a directory URL. */
const ROOT = new URL('../../', import.meta.url);

/** The build's directory, at the repository's root. */
export const DIST = fileURLToPath(new URL('dist/', ROOT));

/** The record `./build.mjs` writes last: `{ started_ms, inputs }`, the inputs as paths from the root. */
export const BUILD_RECORD = `${DIST}build.json`;

/**
 * The URL of the compiled program (`dist/cli.js` under `root`, a directory URL) when its build is
 * complete and fresh: its record `dist/build.json` exists, and each source it lists exists and was
 * last modified before the build started (milliseconds since the epoch). Null otherwise (never
 * built, installed with `--ignore-scripts`, or a source edited, checked out or regenerated since):
 * the caller then runs the sources. One `stat` per source, about 220 files, a few milliseconds.
 */
export function compiledCli(root = ROOT) {
  let record;
  try {
    record = JSON.parse(readFileSync(new URL('dist/build.json', root), 'utf8'));
  } catch {
    return null;
  }
  if (!Number.isFinite(record?.started_ms) || !Array.isArray(record.inputs)) return null;
  for (const input of record.inputs) {
    const stats = statSync(new URL(input, root), { throwIfNoEntry: false });
    if (!stats || stats.mtimeMs > record.started_ms) return null;
  }
  return new URL('dist/cli.js', root).href;
}
