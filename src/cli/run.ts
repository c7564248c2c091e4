/**
 * The entry of the compiled `holon` alone (issue 21 §4): `src/cli/build.mjs` builds this file into
 * `dist/holon.js`, which runs the command line straight from the build, with no check of the
 * sources beside it and no TypeScript loader. For an install that only ever runs the build, as the
 * Docker image does (`node dist/holon.js serve --hosted`); a checkout runs `src/bin.mjs`, which
 * falls back to the sources when the build is stale.
 */
import { program } from '../cli.ts';

await program.parseAsync(process.argv);
