// Builds the publishable kit into dist/: one ES module per entry (the command line and the
// library), with the generated clearing client and the package's own metadata compiled in, and
// the declared dependencies (commander, fast-check, junit-report-builder, undici, yaml) left as imports.
import { rm } from 'node:fs/promises';
import { build } from 'esbuild';

const here = new URL('.', import.meta.url).pathname;
await rm(`${here}dist`, { recursive: true, force: true });
await build({
  absWorkingDir: here,
  entryPoints: { cli: 'src/cli.ts', index: 'src/index.ts' },
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.18',
  packages: 'external',
  chunkNames: 'chunks/[name]-[hash]',
  logLevel: 'warning',
});
