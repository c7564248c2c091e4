#!/usr/bin/env node
// The `holon` executable: registers tsx so the TypeScript sources run as they are, then parses the command line with the program of `cli.ts`.
import { register } from 'tsx/esm/api';

register();
const { program } = await import('./cli.ts');
await program.parseAsync(process.argv);
