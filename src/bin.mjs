#!/usr/bin/env node
// The `holon` executable: runs the compiled command line of dist/ (built by `npm install`'s
// `prepare`, `npm test` and `node src/cli/build.mjs`) when it is as new as its sources; otherwise
// (no build, or a source changed since) registers tsx and runs the sources of `cli.ts` as they are,
// so `holon` never runs stale code. Either way it parses the command line with the same program.
import { compiledCli } from './cli/compiled.mjs';

const compiled = compiledCli();
if (!compiled) (await import('tsx/esm/api')).register();
const { program } = compiled ? await import(compiled) : await import('./cli.ts');
await program.parseAsync(process.argv);
