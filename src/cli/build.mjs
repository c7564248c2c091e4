// Builds the `holon` command line into dist/ (issue 21 §4): `src/cli.ts` and everything it
// imports from this repository (src/, generated/, clients/src/, migrations/) bundled by esbuild
// into ES modules, npm packages left as imports, so `holon` starts without a TypeScript loader:
// `dist/cli.js` (the program, which `src/bin.mjs` parses the command line with) and `dist/holon.js`
// (the program run at once, the Docker image's command: `src/cli/run.ts`).
// The root's `prepare` runs it (so `npm install` / `npm ci` build it) and so does `npm test`;
// `node src/cli/build.mjs` rebuilds by hand. `src/bin.mjs` runs the build only while it is newer
// than every source it was built from (dist/build.json lists them): see `./compiled.mjs`.
// Then it makes sure dist/pglite/ holds the migrated PGlite template new stores start from
// (src/db/template.ts), unless `--no-template` (the Docker image, which runs on PostgreSQL).
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { BUILD_RECORD, DIST } from './compiled.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Every module keeps the `import.meta.url` of its source file, so what it reads beside itself
 * (`../../openapi/`, `../../docs/`, the console's files) is found as under tsx. Output files all
 * lie in dist/ (flat chunk names), one level below the root: the source's URL is
 * `new URL('../<path from the root>', import.meta.url)` from any of them.
 */
const sourceUrls = {
  name: 'source-import-meta-url',
  setup(esbuild) {
    esbuild.onLoad({ filter: /\.ts$/ }, async (args) => {
      const text = await readFile(args.path, 'utf8');
      if (!text.includes('import.meta.url')) return undefined;
      const fromRoot = path.relative(ROOT, args.path).split(path.sep).join('/');
      return { contents: text.replaceAll('import.meta.url', `new URL(${JSON.stringify(`../${fromRoot}`)}, import.meta.url).href`), loader: 'ts' };
    });
  },
};

/** The template's folder in dist/: kept across builds, since rebuilding it costs seconds and its key says when it is stale. */
const TEMPLATE = 'pglite';

const started_ms = Date.now();
for (const entry of await readdir(DIST).catch(() => [])) if (entry !== TEMPLATE) await rm(path.join(DIST, entry), { recursive: true, force: true });
const result = await build({
  absWorkingDir: ROOT,
  entryPoints: { cli: 'src/cli.ts', holon: 'src/cli/run.ts', 'pglite-template': 'src/db/template-build.ts' },
  outdir: DIST,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.18',
  packages: 'external',
  chunkNames: '[name]-[hash]',
  metafile: true,
  plugins: [sourceUrls],
  logLevel: 'warning',
});
// Written last: a build that failed half-way leaves no record, and `src/bin.mjs` does not run it.
const inputs = Object.keys(result.metafile.inputs).filter((input) => !input.includes('node_modules/')).sort();
await writeFile(BUILD_RECORD, `${JSON.stringify({ started_ms, inputs }, null, 1)}\n`);
if (!process.argv.includes('--no-template')) {
  const { refreshTemplate } = await import(pathToFileURL(path.join(DIST, 'pglite-template.js')).href);
  await refreshTemplate(path.join(DIST, TEMPLATE), { prune: true });
}
