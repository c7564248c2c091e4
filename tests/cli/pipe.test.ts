/**
 * A reader that stops early (`holon --help | head -2`) closes the pipe under the command line:
 * both executables then stop quietly with exit 0, as Unix tools do, instead of printing an
 * EPIPE stack trace.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { BIN } from '../helpers/cli.ts';

const KIT = path.join(fileURLToPath(new URL('../..', import.meta.url)), 'conformance', 'src', 'cli.ts');

/** Runs `argv` with its stdout's reading end closed before it writes; answers its exit code and stderr. */
function withClosedStdout(argv: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.destroy();
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stderr }));
  });
}

test('holon --help into a closed pipe exits 0 without a stack trace', async () => {
  assert.deepEqual(await withClosedStdout([BIN, '--help']), { code: 0, stderr: '' });
});

test('holon-conformance --help into a closed pipe exits 0 without a stack trace', async () => {
  assert.deepEqual(await withClosedStdout(['--import', 'tsx', KIT, '--help']), { code: 0, stderr: '' });
});
