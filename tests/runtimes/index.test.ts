/** `runtimeFor(kind)`: one runtime per manifest `runtime.kind` (gateway §6). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runtimeFor } from '../../src/runtimes/index.ts';
import { runRequest } from '../helpers/runtimes.ts';

test('container and a2a answer runtime_unavailable: not supported in v0', async () => {
  for (const kind of ['container', 'a2a'] as const) {
    const outcome = await runtimeFor(kind).run(runRequest({ id: 'acme/boxed', version: '1.0.0', runtime: { kind } }));
    assert.deepEqual(outcome, {
      kind: 'failure',
      code: 'runtime_unavailable',
      message: `runtime kind "${kind}" is not supported in v0: run the agent as mcp or webhook`,
    });
  }
});

test('remote runtimes use the fetch they are given (the hosted gateway passes its guarded client)', async () => {
  const seen: string[] = [];
  const guarded: typeof fetch = async (url) => {
    seen.push(String(url));
    throw new TypeError('fetch failed', { cause: { code: 'EPRIVATEADDRESS' } });
  };
  for (const kind of ['mcp', 'webhook'] as const) {
    const target = { id: 'acme/remote', version: '1.0.0', runtime: { kind, endpoint: 'http://10.0.0.1/x', tool: 'x' } };
    const outcome = await runtimeFor(kind, { fetch: guarded }).run(runRequest(target));
    assert.equal(outcome.kind === 'failure' && outcome.code, 'runtime_unavailable', kind);
    assert.match((outcome as { message: string }).message, /EPRIVATEADDRESS/);
  }
  assert.deepEqual(seen, ['http://10.0.0.1/x', 'http://10.0.0.1/x']);
});

test('a remote agent without an endpoint is runtime_unavailable', async () => {
  for (const kind of ['mcp', 'webhook'] as const) {
    const outcome = await runtimeFor(kind).run(runRequest({ id: 'acme/lost', version: '1.0.0', runtime: { kind } }));
    assert.equal(outcome.kind === 'failure' && outcome.code, 'runtime_unavailable', kind);
  }
});
