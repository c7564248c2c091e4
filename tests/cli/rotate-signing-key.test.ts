/**
 * `holon rotate-signing-key` (issue 23 §1): makes the first key, then retires it for a new one,
 * the retired one listed for `HOLON_SIGNING_KEY_RETAIN_DAYS`; refused without `HOLON_FILE_SECRET`
 * or with a retention out of range, one line and exit 1, the keys unchanged.
 */
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { test } from 'node:test';
import { holon } from '../helpers/cli.ts';
import { freshStore } from '../helpers/gateway.ts';

const SECRET = 'rotate-test-file-secret-0123456789abcdef';

test('rotate-signing-key: the first key, a rotation, and the refusals', async () => {
  const store = await freshStore();
  const env = { DATABASE_URL: store.database_url, HOLON_FILE_SECRET: SECRET, HOLON_SIGNING_KEY_RETAIN_DAYS: '30' };
  try {
    const first = await holon(['rotate-signing-key', '--db', store.db], { env });
    assert.equal(first.code, 0, first.stderr);
    const [, kid] = /^signing key (k-[0-9a-f-]+) is active\n$/.exec(first.stdout)!;
    const second = await holon(['rotate-signing-key', '--db', store.db], { env });
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, new RegExp(`^signing key k-[0-9a-f-]+ is active; ${kid} retired, listed for at least 30 days\\n$`));
    const noSecret = await holon(['rotate-signing-key', '--db', store.db], { env: { ...env, HOLON_FILE_SECRET: undefined } });
    assert.deepEqual([noSecret.code, noSecret.stderr], [1, 'holon rotate-signing-key: HOLON_FILE_SECRET (32 or more characters) must be set: the key is stored sealed under it\n']);
    const tooLong = await holon(['rotate-signing-key', '--db', store.db], { env: { ...env, HOLON_SIGNING_KEY_RETAIN_DAYS: '9999' } });
    assert.equal(tooLong.code, 1);
    assert.match(tooLong.stderr, /^holon rotate-signing-key: HOLON_SIGNING_KEY_RETAIN_DAYS must be .*3650.*; got "9999"\n$/);
  } finally {
    await rm(store.db, { recursive: true, force: true });
  }
});
