/**
 * The reference host `agents/host.mjs` over real MCP, through the MCP runtime, and the shipped
 * agent `holon-labs/csv-profile` (gateway §6).
 */
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { parseManifest } from '../../src/contracts/manifest.ts';
import { createMcpRuntime } from '../../src/runtimes/mcp.ts';
import type { RunOutcome } from '../../src/runtimes/types.ts';
import { remoteTarget, runRequest, startHost, type TestHost } from '../helpers/runtimes.ts';

const manifestText = await readFile(new URL('../../agents/csv-profile/holon.yaml', import.meta.url), 'utf8');
const runtime = createMcpRuntime();
let host: TestHost;
before(async () => {
  host = await startHost();
});
after(() => host.close());

/** Profiles `input` with csv-profile on the host. */
function profile(input: Record<string, unknown>): Promise<RunOutcome> {
  return runtime.run(runRequest(remoteTarget('mcp', host.url, 'csv-profile'), { input }));
}

/** The output of a successful profile. */
async function profileOf(input: Record<string, unknown>): Promise<Profile> {
  const outcome = await profile(input);
  if (outcome.kind !== 'output') assert.fail(JSON.stringify(outcome));
  return outcome.output as Profile;
}

/** csv-profile's output. */
interface Profile {
  delimiter: string;
  rows: number;
  columns: Record<string, unknown>[];
}

test('the host serves csv-profile with its manifest schemas; summarize is excluded by default', async () => {
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(host.url)));
  try {
    const { tools } = await client.listTools();
    const { manifest } = parseManifest(manifestText);
    assert.deepEqual(tools.map((tool) => tool.name), ['csv-profile']);
    assert.deepEqual(tools[0]!.inputSchema, manifest.interface.input);
    assert.deepEqual(tools[0]!.outputSchema, manifest.interface.output);
  } finally {
    await client.close();
  }
});

test("csv-profile's manifest is valid and its example is exactly what it answers", async () => {
  const { manifest } = parseManifest(manifestText);
  assert.equal(manifest.id, 'holon-labs/csv-profile');
  assert.ok(manifest.examples && manifest.examples.length > 0);
  for (const example of manifest.examples!) {
    assert.deepEqual(await profile(example.input as Record<string, unknown>), { kind: 'output', output: example.output, units: null, quote: null });
  }
});

test('quoted fields keep delimiters and doubled quotes', async () => {
  const output = await profileOf({ csv: 'name,quote\n"Smith, J.","He said ""hi"""\n' });
  assert.deepEqual(output.columns.map((c) => c.samples), [['Smith, J.'], ['He said "hi"']]);
});

test('a line break inside a quoted field stays in the value', async () => {
  const output = await profileOf({ csv: 'id,address\n1,"1 Main St\nSpringfield"\n2,"2 Elm St"\n' });
  assert.equal(output.rows, 2);
  assert.deepEqual(output.columns[1]!.samples, ['1 Main St\nSpringfield', '2 Elm St']);
});

test('a UTF-8 BOM is not part of the first column name', async () => {
  const output = await profileOf({ csv: '\ufeffid,name\n1,a\n' });
  assert.deepEqual(output.columns.map((c) => c.name), ['id', 'name']);
});

test('; tab and | are detected; a given delimiter is used as is', async () => {
  const semicolon = await profileOf({ csv: 'city;price\nLyon;1,50\nNice;2,75\n' });
  assert.equal(semicolon.delimiter, ';');
  assert.deepEqual(semicolon.columns.map((c) => [c.name, c.type, c.min, c.max]), [
    ['city', 'string', 'Lyon', 'Nice'],
    ['price', 'string', '1,50', '2,75'],
  ]);
  assert.equal((await profileOf({ csv: 'a\tb\n1\t2\n' })).delimiter, '\t');
  assert.equal((await profileOf({ csv: 'a|b|c\n1|2|3\n' })).delimiter, '|');
  const given = await profileOf({ csv: 'a;b\n1;2\n', delimiter: ',' });
  assert.deepEqual([given.delimiter, given.columns.length], [',', 1]);
});

test('types, nulls, distinct, min and max', async () => {
  const csv = [
    'zip,qty,ratio,when,flag,empty',
    '01234,10,1.5,2024-02-29T23:30:00-01:00,true,',
    '98765,-3,2e-1,2024-03-01T00:15:00Z,FALSE,NULL',
    '01234,,NaN,2024-03-01,n/a,na',
  ].join('\n');
  const output = await profileOf({ csv });
  assert.deepEqual(output.columns, [
    { name: 'zip', type: 'string', nulls: 0, distinct: 2, min: '01234', max: '98765', samples: ['01234', '98765'] },
    { name: 'qty', type: 'integer', nulls: 1, distinct: 2, min: '-3', max: '10', samples: ['10', '-3'] },
    { name: 'ratio', type: 'number', nulls: 1, distinct: 2, min: '2e-1', max: '1.5', samples: ['1.5', '2e-1'] },
    { name: 'when', type: 'date', nulls: 0, distinct: 3, min: '2024-03-01', max: '2024-02-29T23:30:00-01:00', samples: ['2024-02-29T23:30:00-01:00', '2024-03-01T00:15:00Z', '2024-03-01'] },
    { name: 'flag', type: 'boolean', nulls: 1, distinct: 2, min: 'FALSE', max: 'true', samples: ['true', 'FALSE'] },
    { name: 'empty', type: 'string', nulls: 3, distinct: 0, min: null, max: null, samples: [] },
  ]);
});

test('not_csv: a row with another field count, an unclosed quote, an empty text, binary data', async () => {
  const cases: [string, RegExp][] = [
    ['a,b\n1,2\n3,4,5\n', /Invalid Record Length: expect 2, got 3 on line 3/],
    ['a,b\n1,"2\n', /Quote Not Closed/],
    [' \n\n', /empty/],
    ['a,b\n\u0000\u0001,2\n', /NUL/],
  ];
  for (const [csv, message] of cases) {
    const outcome = await profile({ csv });
    assert.equal(outcome.kind === 'error' && outcome.code, 'not_csv', csv);
    assert.match((outcome as { message: string }).message, message);
  }
});

test('too_large: over 100,000 rows, or over 5 MiB', async () => {
  const rows = await profile({ csv: `n\n${'1\n'.repeat(100_001)}` });
  assert.equal(rows.kind === 'error' && rows.code, 'too_large');
  const fits = await profile({ csv: `n\n${'1\n'.repeat(100_000)}` });
  assert.equal(fits.kind, 'output');
  const bytes = await profile({ csv: `n\n${'x'.repeat(5 * 1024 * 1024)}` });
  assert.equal(bytes.kind === 'error' && bytes.code, 'too_large');
});

test('arguments outside the input schema are refused by the host as invalid_input', async () => {
  const outcome = await profile({ text: 'a,b' });
  assert.equal(outcome.kind === 'error' && outcome.code, 'invalid_input');
});

test('requests from browser pages (an Origin header) are refused', async () => {
  const response = await fetch(host.url, { method: 'POST', headers: { origin: 'http://evil.example', 'content-type': 'application/json' }, body: '{}' });
  assert.equal(response.status, 403);
});

/** A host over a directory of test tools: metered, crashing, and slow (waits for its signal). */
test('the host reports units and quote, hides crashes, and its tool sees the cancellation at the timeout', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'holon-host-'));
  const tools: Record<string, string> = {
    metered: `export default async (input, ctx) => { ctx.units(2); ctx.units(1); ctx.quote('0.015'); if (input.fail) throw ctx.error('over_budget', 'too dear'); return { ok: true }; };`,
    crash: `export default async () => { throw new Error('secret stack'); };`,
    slow: `export default (input, ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', () => { console.error('slow: cancelled'); resolve({}); }));`,
  };
  for (const [name, source] of Object.entries(tools)) {
    await mkdir(join(dir, name));
    await writeFile(join(dir, name, 'tool.mjs'), source);
    const schema = '{ type: object }';
    await writeFile(join(dir, name, 'holon.yaml'), `id: test/${name}\nsummary: ${name}\ninterface: { input: ${schema}, output: ${schema} }\nruntime: { kind: mcp, endpoint: http://x/mcp, tool: ${name} }\n`);
  }
  const testHost = await startHost(['--dir', dir]);
  try {
    const call = (tool: string, overrides: Parameters<typeof runRequest>[1] = {}) => runtime.run(runRequest(remoteTarget('mcp', testHost.url, tool), overrides));
    assert.deepEqual(await call('metered'), { kind: 'output', output: { ok: true }, units: 3, quote: '0.015' });
    assert.deepEqual(await call('metered', { input: { fail: true } }), { kind: 'error', code: 'over_budget', message: 'too dear', units: 3, quote: '0.015' });
    const crashed = await call('crash');
    assert.deepEqual(crashed, { kind: 'failure', code: 'agent_error', message: 'the tool failed without structuredContent.error.code: crash failed; the host log has the details' });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    assert.equal((await call('slow', { signal: controller.signal })).kind === 'failure', true);
    for (let i = 0; i < 50 && !testHost.stderr().includes('slow: cancelled'); i++) await new Promise((r) => setTimeout(r, 20));
    assert.match(testHost.stderr(), /slow: cancelled/);
    assert.match(testHost.stderr(), /secret stack/);
  } finally {
    await testHost.close();
    await rm(dir, { recursive: true, force: true });
  }
});
