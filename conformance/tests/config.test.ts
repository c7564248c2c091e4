/**
 * Config validation and check selection: what the kit accepts before it sends anything.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, parseConfig } from '../src/config.ts';
import { selectChecks } from '../src/runner.ts';

const fixtures = { agent_key: 'a', unknown_agent_key: 'b', accounts: { payer: 'p', payee: 'q' } };

test('defaults: headers {}, access loopback, prefunded 0, timeout 10 s; a trailing slash is dropped', () => {
  assert.deepEqual(parseConfig({ url: 'http://127.0.0.1:4100/', fixtures }), {
    url: 'http://127.0.0.1:4100', headers: {}, access: 'loopback',
    fixtures: { ...fixtures, prefunded: 0 }, timeout_ms: 10_000, tls: null,
  });
});

test('refuses what cannot work, naming the field', () => {
  const cases: [unknown, RegExp][] = [
    [null, /config must be an object/],
    [{ fixtures }, /url must be a non-empty string/],
    [{ url: 'not a url', fixtures }, /absolute http\(s\) URL/],
    [{ url: 'ftp://x', fixtures }, /http or https/],
    [{ url: 'http://x', fixtures, access: 'public' }, /access must be/],
    [{ url: 'http://x', fixtures, headers: { a: 1 } }, /headers\.a must be a non-empty string/],
    [{ url: 'http://x', fixtures: { ...fixtures, accounts: { payer: 'p', payee: 'p' } } }, /payer and payee must differ/],
    [{ url: 'http://x', fixtures: { ...fixtures, unknown_agent_key: 'a' } }, /must differ/],
    [{ url: 'http://x', fixtures: { ...fixtures, prefunded: -1 } }, /prefunded must be a non-negative integer/],
    [{ url: 'http://x', fixtures: { ...fixtures, prefunded: 1.5 } }, /prefunded must be a non-negative integer/],
  ];
  for (const [input, message] of cases) assert.throws(() => parseConfig(input), (e: unknown) => e instanceof ConfigError && message.test(e.message));
});

test('--only selects by id, section name or prefix*, and refuses an entry that selects nothing', () => {
  assert.deepEqual(selectChecks(['settle.moves-value']).map((c) => c.id), ['settle.moves-value']);
  assert.ok(selectChecks(['idempotency']).every((c) => c.section === 'idempotency'));
  assert.ok(selectChecks(['draw.*']).every((c) => c.id.startsWith('draw.')));
  assert.ok(selectChecks(['draw.*']).length >= 5);
  assert.throws(() => selectChecks(['nope']), ConfigError);
});

test('check ids are unique and name their area', () => {
  const ids = selectChecks().map((c) => c.id);
  assert.equal(new Set(ids).size, ids.length);
  for (const id of ids) assert.match(id, /^[a-z]+\.[a-z-]+$/);
});
