/**
 * Bad usage of the command line exits 2 (docs/callers.md "Exit codes", issue 26): an unknown command, an
 * unknown option, a missing argument or required option, and no command at all, each with
 * commander's one line on stderr; `--help` and `--version` still exit 0. None of these needs a
 * gateway: they are refused before any command runs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXIT } from '../../src/cli/client-commands.ts';
import { holon } from '../helpers/cli.ts';

test('an unknown command exits 2 naming it', async () => {
  const result = await holon(['frob']);
  assert.deepEqual(result, { code: EXIT.usage, stdout: '', stderr: "error: unknown command 'frob'\n" });
});

test('an unknown option exits 2 naming it, on a server command and on a client command', async () => {
  assert.deepEqual(await holon(['serve', '--frob']), { code: EXIT.usage, stdout: '', stderr: "error: unknown option '--frob'\n" });
  assert.deepEqual(await holon(['receipts', '--colour', 'red']), { code: EXIT.usage, stdout: '', stderr: "error: unknown option '--colour'\n" });
});

test('a missing argument or required option exits 2 naming it', async () => {
  assert.deepEqual(await holon(['mandate']), { code: EXIT.usage, stdout: '', stderr: "error: missing required argument 'id'\n" });
  assert.deepEqual(await holon(['backup']), { code: EXIT.usage, stdout: '', stderr: "error: required option '--out <file>' not specified\n" });
});

test('no command at all prints the help on stderr and exits 2; --help and --version exit 0', async () => {
  const none = await holon([]);
  assert.equal(none.code, EXIT.usage);
  assert.match(none.stderr, /^Usage: holon \[options\] \[command\]\n/);
  const help = await holon(['--help']);
  assert.equal(help.code, EXIT.ok);
  assert.match(help.stdout, /^Usage: holon \[options\] \[command\]\n/);
  assert.equal((await holon(['--version'])).code, EXIT.ok);
});
