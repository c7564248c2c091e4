/**
 * holon-labs/summarize on the reference host, against a local stand-in of the Anthropic Messages
 * API (never the network): billed per started 1k tokens through `_meta["holon/units"]`.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { parseManifest } from '../../src/contracts/manifest.ts';
import { createMcpRuntime } from '../../src/runtimes/mcp.ts';
import { remoteTarget, runRequest, startHost, startHttp, type TestHost, type TestServer } from '../helpers/runtimes.ts';

let anthropic: TestServer;
let host: TestHost;
before(async () => {
  anthropic = await startHttp((req, res) => {
    if (req.method !== 'POST' || req.url !== '/v1/messages') return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_test' }).end(
      JSON.stringify({
        id: 'msg_test',
        type: 'message',
        role: 'assistant',
        model: 'claude-haiku-4-5',
        content: [{ type: 'text', text: 'Ada Lovelace wrote the first program.' }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 1500, output_tokens: 600 },
      }),
    );
  });
  host = await startHost([], { HOLON_EXCLUDE: '', ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: anthropic.url });
});
after(async () => {
  await host.close();
  await anthropic.close();
});

const runtime = createMcpRuntime();
const target = () => remoteTarget('mcp', host.url, 'summarize');

test('its manifest is valid: per_unit per 1k tokens, with a max', async () => {
  const { manifest } = parseManifest(await readFile(new URL('../../agents/summarize/holon.yaml', import.meta.url), 'utf8'));
  assert.equal(manifest.id, 'holon-labs/summarize');
  assert.deepEqual([manifest.runtime.kind, manifest.runtime.tool], ['mcp', 'summarize']);
  assert.equal(manifest.price.model, 'per_unit');
});

test('a summary, with units = ceil((input + output tokens) / 1000)', async () => {
  const outcome = await runtime.run(runRequest(target(), { input: { text: 'Ada Lovelace … (a long text)', max_words: 20, language: 'English' } }));
  assert.deepEqual(outcome, { kind: 'output', output: { summary: 'Ada Lovelace wrote the first program.' }, units: 3, quote: null });
  const request = anthropic.received.at(-1)!;
  assert.match(String(request.headers['x-api-key'] ?? request.headers.authorization), /^(Bearer )?sk-ant-test$/);
  const body = JSON.parse(request.body) as { model: string; max_tokens: number; messages: { content: string }[] };
  assert.equal(body.model, 'claude-haiku-4-5');
  assert.equal(body.max_tokens, 20 * 2 + 64);
  assert.match(body.messages[0]!.content, /in English, in at most 20 words\.\n\n<document>\nAda Lovelace … \(a long text\)\n<\/document>/);
});

test('over_budget before any token is spent when the cap cannot cover the estimate', async () => {
  const before = anthropic.received.length;
  const outcome = await runtime.run(runRequest(target(), { input: { text: 'x'.repeat(8000) }, max_cost: { amount: '0.004', currency: 'EUR' } }));
  assert.equal(outcome.kind === 'error' && outcome.code, 'over_budget');
  assert.equal(anthropic.received.length, before);
  const fits = await runtime.run(runRequest(target(), { input: { text: 'x'.repeat(8000) }, max_cost: { amount: '0.012', currency: 'EUR' } }));
  assert.equal(fits.kind, 'output');
});
