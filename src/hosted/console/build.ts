/**
 * Builds the console's script (issue 11): `src/hosted/console/browser/main.ts` and what it imports (the typed
 * client of `clients/src`, the money parser of `src/contracts`) bundled by esbuild into one
 * browser file, `src/hosted/console/dist/console.js`. The bundle is committed, so a gateway installed
 * without dev dependencies or scripts (the `Dockerfile`) serves it as it is;
 * `tests/hosted/console/pages.test.ts` fails when it differs from what this writes.
 *
 * `node --import tsx src/hosted/console/build.ts` (or `npm run build:console`) rewrites it.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** Where the committed bundle lives. */
export const CONSOLE_BUNDLE = path.join(HERE, 'dist', 'console.js');

/** Bundles the console: one ES2020 script, minified, no source map, no absolute path left in it. */
export async function bundleConsole(): Promise<string> {
  const result = await build({
    entryPoints: [path.join(HERE, 'browser', 'main.ts')],
    // The repository's root: the bundle is the same wherever the repository lies.
    absWorkingDir: path.resolve(HERE, '..', '..', '..'),
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2020',
    minify: true,
    legalComments: 'none',
    charset: 'utf8',
    write: false,
    logLevel: 'silent',
  });
  return result.outputFiles[0].text;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await writeFile(CONSOLE_BUNDLE, await bundleConsole());
  console.log(`wrote ${path.relative(process.cwd(), CONSOLE_BUNDLE)}`);
}
