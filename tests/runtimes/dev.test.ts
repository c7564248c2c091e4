/** The dev runtime (gateway §6 "Dev runtime"): `agent.mjs` with `run(input, ctx)`. */
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import { createDevRuntime } from '../../src/runtimes/dev.ts';
import type { RuntimeTarget } from '../../src/runtimes/types.ts';
import { runRequest } from '../helpers/runtimes.ts';

let root: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'holon-dev-'));
});
after(() => rm(root, { recursive: true, force: true }));

/** A dev agent whose `agent.mjs` is `source`. */
async function agent(name: string, source: string): Promise<RuntimeTarget> {
  const dir = join(root, name);
  await mkdir(dir);
  await writeFile(join(dir, 'agent.mjs'), source);
  return { id: `acme/${name}`, version: '0.1.0', runtime: { kind: 'dev' }, dir };
}

const runtime = createDevRuntime();

test('the returned value is the output, crossing as JSON', async () => {
  const target = await agent('double', 'export default async (input) => ({ doubled: input.n * 2, at: new Date(0) });');
  const outcome = await runtime.run(runRequest(target, { input: { n: 21 } }));
  assert.deepEqual(outcome, { kind: 'output', output: { doubled: 42, at: '1970-01-01T00:00:00.000Z' }, units: null, quote: null });
});

test('ctx.units calls add up; ctx.quote keeps the last value, numbers written as decimals', async () => {
  const target = await agent(
    'metered',
    `export default async (input, ctx) => { ctx.units(2); ctx.units(3); ctx.units(0); ctx.quote('0.50'); ctx.quote(2.5e-7); return {}; };`,
  );
  assert.deepEqual(await runtime.run(runRequest(target)), { kind: 'output', output: {}, units: 5, quote: '0.00000025' });
});

test('invalid reports end the run as agent_error', async () => {
  for (const [name, call] of [['fractional', 'ctx.units(1.5)'], ['negative', 'ctx.units(-1)'], ['bad-quote', "ctx.quote('1e3')"]]) {
    const target = await agent(name, `export default async (input, ctx) => { ${call}; return {}; };`);
    const outcome = await runtime.run(runRequest(target));
    assert.equal(outcome.kind === 'failure' && outcome.code, 'agent_error', name);
  }
});

test('a thrown ctx.error is an error outcome with its code and the units reported before it', async () => {
  const target = await agent('declared', `export default async (input, ctx) => { ctx.units(4); throw ctx.error('no_table_found', 'page 3 has no table'); };`);
  assert.deepEqual(await runtime.run(runRequest(target)), {
    kind: 'error',
    code: 'no_table_found',
    message: 'page 3 has no table',
    units: 4,
    quote: null,
  });
});

test('any other throw is agent_error', async () => {
  const target = await agent('crash', `export default async () => { throw new TypeError('boom'); };`);
  assert.deepEqual(await runtime.run(runRequest(target)), { kind: 'failure', code: 'agent_error', message: 'agent.mjs threw: boom' });
});

test('an output that is not JSON is agent_error', async () => {
  const target = await agent('undefined', `export default async () => undefined;`);
  const outcome = await runtime.run(runRequest(target));
  assert.equal(outcome.kind === 'failure' && outcome.code, 'agent_error');
});

test('the abort signal ends the run as timeout at once, even when the agent ignores it; ctx.call is then refused', async () => {
  const target = await agent(
    'stuck',
    `export let late;
     export default async (input, ctx) => { await new Promise((r) => setTimeout(r, 300)); late = ctx.call('acme/other', {}).then(() => 'sent', (e) => e.message); return {}; };`,
  );
  const controller = new AbortController();
  let delegated = 0;
  const started = Date.now();
  setTimeout(() => controller.abort(), 50);
  const outcome = await runtime.run(runRequest(target, { signal: controller.signal, delegate: async () => (delegated++, { ok: true, output: {}, receipt: 'r2' }) }));
  assert.equal(outcome.kind === 'failure' && outcome.code, 'timeout');
  assert.ok(Date.now() - started < 250, 'answered at the abort, not when the agent returned');
  await new Promise((r) => setTimeout(r, 350));
  const module = (await import(pathToFileURL(join(target.dir!, 'agent.mjs')).href)) as { late: Promise<string> };
  assert.match(await module.late, /after the run ended/);
  assert.equal(delegated, 0);
});

test('ctx.call delegates through the gateway; ctx.max_cost is the cap', async () => {
  const target = await agent(
    'orchestrator',
    `export default async (input, ctx) => { const r = await ctx.call({ capability: 'data.profile' }, { csv: 'a' }, { max_cost: '0.01' }); return { child: r.output, cap: ctx.max_cost }; };`,
  );
  const seen: unknown[] = [];
  const outcome = await runtime.run(
    runRequest(target, {
      max_cost: { amount: '0.20', currency: 'EUR' },
      delegate: async (...args) => (seen.push(args), { ok: true, output: { rows: 1 }, receipt: 'r2' }),
    }),
  );
  assert.deepEqual(seen, [[{ capability: 'data.profile' }, { csv: 'a' }, { max_cost: '0.01' }]]);
  assert.deepEqual(outcome, { kind: 'output', output: { child: { rows: 1 }, cap: { amount: '0.20', currency: 'EUR' } }, units: null, quote: null });
});

test('a missing agent.mjs is runtime_unavailable; a module without a default function is agent_error', async () => {
  const missing = await runtime.run(runRequest({ id: 'acme/none', version: '0.1.0', runtime: { kind: 'dev' }, dir: join(root, 'nowhere') }));
  assert.equal(missing.kind === 'failure' && missing.code, 'runtime_unavailable');
  const target = await agent('no-default', 'export const run = () => ({});');
  const outcome = await runtime.run(runRequest(target));
  assert.equal(outcome.kind === 'failure' && outcome.code, 'agent_error');
});
