#!/usr/bin/env node
// The holon-conformance command: registers tsx so the TypeScript sources run as they are.
import { register } from 'tsx/esm/api';

register();
await import('./cli.ts');
