#!/usr/bin/env node
// The `holon` executable: registers tsx so the TypeScript sources run as they are, then starts the CLI.
import { register } from 'tsx/esm/api';

register();
await import('./cli.ts');
