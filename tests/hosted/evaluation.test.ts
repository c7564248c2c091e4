/**
 * The evaluation runner (gateway §7 "Evaluation at publish time"), on agent versions registered
 * here: the shipped suites pass against the shipped agents that claim their capabilities
 * (`extraction.table`: acme/table-extract and its fork; `data.profile`: holon-labs/csv-profile
 * over MCP), a wrong agent fails the cases it gets wrong with what it answered stored, private
 * suites replace the public ones and are stored as pass/fail only, nothing is billed, and a
 * malformed suite fails its evaluation with the file named.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { openDatabase, type Database } from '../../src/db/index.ts';
import { Registry, type ListedAgent } from '../../src/gateway/registry.ts';
import { runtimeFor } from '../../src/runtimes/index.ts';
import { evaluateVersion, readEvaluations, type EvaluationDeps } from '../../src/hosted/evaluation.ts';
import { MAX_CASES_PER_SUITE, suiteSourceFromEnv } from '../../src/hosted/eval-suites.ts';
import { freshStore, storeTarget } from '../helpers/gateway.ts';
import { startHost, type TestHost } from '../helpers/runtimes.ts';

let database: Database;
let host: TestHost;
let registry: Registry;
let scratch: string;
let store: { db: string; database_url?: string };
const logger = pino({ level: 'silent' });
const deps = (source: EvaluationDeps['source'] = { dir: 'evals', suite: 'public' }): EvaluationDeps => ({ db: database.knex, runtimeFor: (agent) => runtimeFor(agent.loaded.manifest.runtime.kind), credentialFor: async () => null, source, logger });
const listed = (id: string, version: string): ListedAgent => {
  const agent = registry.get(id, version);
  assert.ok(agent, `${id}@${version} is registered`);
  return agent;
};

/** A dev agent claiming `capability` whose `agent.mjs` is `code`, in the scratch registry directory. */
async function writeAgent(name: string, capability: string, code: string): Promise<void> {
  const dir = path.join(scratch, 'agents', name);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'holon.yaml'), [
    `id: evaltest/${name}`,
    'version: 0.1.0',
    'summary: an agent of the evaluation test',
    `capabilities: [${capability}]`,
    'interface:',
    '  input: { type: object, properties: { text: { type: string }, csv: { type: string }, delimiter: { type: string } } }',
    '  output: { type: object }',
    '  errors: { no_table_found: { billed: false } }',
    'price: { model: per_run, currency: EUR, amount: "0.50" }',
    'runtime: { kind: dev }',
    'license: Apache-2.0',
    '',
  ].join('\n'));
  await writeFile(path.join(dir, 'agent.mjs'), code);
}

before(async () => {
  store = await freshStore();
  database = await openDatabase(storeTarget(store, 'gateway'));
  host = await startHost();
  scratch = await mkdtemp(path.join(tmpdir(), 'holon-evals-'));
  await writeAgent('wrong', 'extraction.table', 'export default async function run() { return { rows: [["a", "b"]] }; }\n');
  await writeAgent('profiler', 'data.profile', 'export default async function run() { return { columns: [] }; }\n');
  await Registry.loadShipped(database.knex, ['examples', 'agents', path.join(scratch, 'agents')], ['holon-labs/summarize'], new Map([['agents', host.url]]));
  registry = await Registry.fromDatabase(database.knex);
});

after(async () => {
  await database?.close();
  await host?.close();
  await rm(scratch, { recursive: true, force: true });
  await rm(store.db, { recursive: true, force: true });
});

test('the extraction.table suite passes against acme/table-extract and its fork lena/table-extract-plus', async () => {
  const cases = (await readdir('evals/extraction.table')).filter((f) => f.endsWith('.json')).length;
  assert.ok(cases >= 5);
  for (const [id, version] of [['acme/table-extract', '1.0.0'], ['lena/table-extract-plus', '1.0.0']]) {
    const [evaluation] = await evaluateVersion(deps(), listed(id, version));
    assert.equal(evaluation.capability, 'extraction.table');
    assert.equal(evaluation.status, 'done');
    assert.deepEqual([evaluation.passed, evaluation.total], [cases, cases], JSON.stringify(evaluation.cases.filter((c) => !c.pass)));
  }
  const [stored] = await readEvaluations(database.knex, 'acme/table-extract', '1.0.0');
  const noTable = stored.cases.find((c) => c.name === 'no-table')!;
  assert.deepEqual(noTable.expect, { error: 'no_table_found' });
  assert.equal((noTable.got as { error: string }).error, 'no_table_found');
  assert.equal(noTable.pass, true);
});

test('the data.profile suite passes against holon-labs/csv-profile, over MCP', async () => {
  const cases = (await readdir('evals/data.profile')).filter((f) => f.endsWith('.json')).length;
  const [evaluation] = await evaluateVersion(deps(), listed('holon-labs/csv-profile', '0.1.0'));
  assert.equal(evaluation.status, 'done');
  assert.deepEqual([evaluation.passed, evaluation.total], [cases, cases], JSON.stringify(evaluation.cases.filter((c) => !c.pass)));
  assert.deepEqual(await readEvaluations(database.knex, 'holon-labs/csv-profile'), [evaluation]);
});

test('a wrong agent fails the cases it gets wrong; public cases store input, expectation and answer; nothing is billed', async () => {
  const receipts = async () => Number((await database.knex('gateway_receipts').count('* as n'))[0].n);
  const before = await receipts();
  const [evaluation] = await evaluateVersion(deps(), listed('evaltest/wrong', '0.1.0'));
  assert.equal(evaluation.passed, 0);
  assert.equal(evaluation.total, 5);
  const first = evaluation.cases.find((c) => c.name === 'semicolon-default')!;
  assert.deepEqual(first, {
    name: 'semicolon-default',
    pass: false,
    input: { text: 'pens;2;1.50\npaper;1;4.00' },
    expect: { output: { rows: [['pens', '2', '1.50'], ['paper', '1', '4.00']] } },
    got: { output: { rows: [['a', 'b']] } },
  });
  assert.equal(await receipts(), before);
});

test('HOLON_PRIVATE_EVALS replaces the public suites; private cases are stored as pass/fail only', async () => {
  const privateDir = path.join(scratch, 'private');
  await mkdir(path.join(privateDir, 'extraction.table'), { recursive: true });
  await writeFile(path.join(privateDir, 'extraction.table', 'holdout-1.json'), JSON.stringify({ input: { text: 'q;r' }, expect: { output: { rows: [['q', 'r']] } } }));
  await writeFile(path.join(privateDir, 'extraction.table', 'holdout-2.json'), JSON.stringify({ input: { text: 'q;r' }, expect: { output: { rows: [] } } }));
  const [evaluation] = await evaluateVersion(deps({ dir: privateDir, suite: 'private' }), listed('acme/table-extract', '1.0.0'));
  assert.equal(evaluation.suite, 'private');
  assert.deepEqual(evaluation.cases, [{ name: 'holdout-1', pass: true }, { name: 'holdout-2', pass: false }]);
  assert.deepEqual([evaluation.passed, evaluation.total], [1, 2]);
  // The private directory has no data.profile suite: the public one is not used in its place.
  assert.deepEqual(await evaluateVersion(deps({ dir: privateDir, suite: 'private' }), listed('evaltest/profiler', '0.1.0')), []);
  assert.deepEqual(await readEvaluations(database.knex, 'evaltest/profiler'), []);
});

test('a malformed or oversized suite fails its evaluation, naming the file and the bound', async () => {
  const broken = path.join(scratch, 'broken');
  await mkdir(path.join(broken, 'extraction.table'), { recursive: true });
  await writeFile(path.join(broken, 'extraction.table', 'bad.json'), JSON.stringify({ input: {}, expect: { output: 1, error: 'x' } }));
  const [evaluation] = await evaluateVersion(deps({ dir: broken, suite: 'public' }), listed('acme/table-extract', '1.0.0'));
  assert.equal(evaluation.status, 'failed');
  assert.match(evaluation.error!, /bad\.json: expect is \{"output": …\} or \{"error": "<code>"\}/);
  const large = path.join(scratch, 'large');
  await mkdir(path.join(large, 'extraction.table'), { recursive: true });
  for (let i = 0; i <= MAX_CASES_PER_SUITE; i++) await writeFile(path.join(large, 'extraction.table', `c${i}.json`), '{"input": {}, "expect": {"error": "x"}}');
  const [tooMany] = await evaluateVersion(deps({ dir: large, suite: 'public' }), listed('acme/table-extract', '1.0.0'));
  assert.equal(tooMany.status, 'failed');
  assert.match(tooMany.error!, /holds 201 cases; a suite runs at most 200/);
});

test('the suites come from evals/ (public) unless HOLON_PRIVATE_EVALS names a private directory', () => {
  assert.deepEqual(suiteSourceFromEnv({}), { dir: 'evals', suite: 'public' });
  assert.deepEqual(suiteSourceFromEnv({ HOLON_PRIVATE_EVALS: '/srv/holdout' }), { dir: '/srv/holdout', suite: 'private' });
});
