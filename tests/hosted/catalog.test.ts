/**
 * The public catalogue and the demo of the hosted gateway (gateway §7 "Extra endpoints"; issue
 * 10 §9): `GET /v0/catalog` lists every agent of the registry, declared and, with
 * `HOLON_RECORDS=1` only, measured from `call_events`; `POST /v0/demo/{ns}/{name}` runs the
 * platform's own cheap agents on a narrowed input, 10 tries per visitor and 600 per hour in all,
 * CORS for `HOLON_SITE_URL` only, never billed nor measured.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readCatalog } from '../../src/hosted/catalog.ts';
import { failOnce } from '../helpers/faults.ts';
import { DEMO_PER_HOUR, DEMO_PER_VISITOR_PER_HOUR } from '../../src/hosted/demo.ts';
import { Registry } from '../../src/gateway/registry.ts';
import { bearer, startTestHosted, useHostedAccount, useTestHosted } from '../helpers/hosted.ts';

const SITE = 'https://site.example';

describe('GET /v0/catalog', () => {
  const hosted = useTestHosted({ settings: { records: true, site_url: SITE, trust_proxy: true } });
  const account = useHostedAccount(hosted);
  const entry = async (id: string) => (await hosted.http.get('/v0/catalog').expect(200)).body.agents.find((agent: { id: string }) => agent.id === id);

  test('lists every agent of the registry in id order, with what its author declares, to anyone', async () => {
    const { body } = await hosted.http.get('/v0/catalog').expect(200);
    assert.deepEqual(body.agents.map((agent: { id: string }) => agent.id), hosted.running.gateway && (await Registry.fromDatabase(hosted.running.db.knex)).latest().map((agent) => agent.loaded.manifest.id));
    const run = body.agents.find((agent: { id: string }) => agent.id === 'gt/run');
    assert.deepEqual({ ...run, measured: undefined }, {
      id: 'gt/run',
      version: '1.0.0',
      versions: ['1.0.0'],
      published: false,
      proprietary: false,
      declared: { summary: run.declared.summary, capabilities: ['gt.run'], price: { model: 'per_run', currency: 'EUR', amount: '0.10' }, license: 'Apache-2.0', runtime: 'dev', errors: ['over_budget', 'unbilled_failure'] },
      measured: undefined,
    });
    assert.equal((await hosted.http.get('/v0/catalog').set(bearer(account.agent))).status, 200);
  });

  test('the measured record is computed from call_events: runs, successes, failures by code, billed; demo tries are not measured', async () => {
    const before_calls = await entry('gt/run');
    for (const input of [{ do: 'ok' }, { do: 'ok', marker: 'm2' }, { do: 'unbilled_error' }]) {
      await hosted.http.post('/v0/calls').set(bearer(account.agent)).send({ mandate: account.mandate, agent: 'gt/run', input });
    }
    const measured = (await entry('gt/run')).measured;
    assert.deepEqual(
      [measured.runs, measured.successes, measured.billed, measured.errors, measured.delegated_runs],
      [before_calls.measured.runs + 3, before_calls.measured.successes + 2, '0.20', [{ code: 'unbilled_failure', runs: 1 }], 0],
    );
    assert.equal(measured.success_rate, measured.successes / measured.runs);
    assert.equal(typeof measured.median_latency_ms, 'number');
    await hosted.http.post('/v0/demo/gt/free').send({ do: 'ok' }).set('x-forwarded-for', '198.51.100.200').expect(200);
    assert.equal((await entry('gt/free')).measured.runs, 0);
  });

  test('the catalogue and the agent search count the same runs: calls that reached the agent, not a call refused before it ran', async () => {
    const counts = async () => {
      const catalog = (await entry('gt/run')).measured;
      const agent = (await hosted.http.get('/v0/agents/gt/run').expect(200)).body.measured;
      const listed = (await hosted.http.get('/v0/agents?q=gt/run').expect(200)).body.agents.find((found: { id: string }) => found.id === 'gt/run');
      return { catalog: [catalog.runs, catalog.successes], agent: [agent.runs, agent.successes], search_rate: listed.success_rate, catalog_rate: catalog.success_rate };
    };
    const before_calls = await counts();
    const call = (input: unknown) => hosted.http.post('/v0/calls').set(bearer(account.agent)).send({ mandate: account.mandate, agent: 'gt/run', input });
    assert.equal((await call({ do: 'ok' })).status, 200);
    assert.equal((await call({ do: 'unbilled_error' })).status, 502);
    assert.equal((await call({ do: 'crash' })).status, 502);
    // The agent ran, then writing its receipt failed: the call ends a gateway error, and it was a run.
    await failOnce(hosted.running.db.knex, 'catalog_finish', 'UPDATE', 'gateway_receipts', `NEW.status = 'succeeded' AND NEW.root_mandate = '${account.mandate}'`);
    const cut = await call({ do: 'ok', marker: 'cut' });
    assert.deepEqual([cut.status, cut.body.code], [502, 'gateway_error']);
    // Refused at the input check, before the agent ran: no run.
    assert.deepEqual([(await call({ do: 'nope' })).status, (await call({ extra: 1 })).body.code], [422, 'rejected_input']);
    const [runs, successes] = before_calls.catalog;
    const after_calls = await counts();
    assert.deepEqual([after_calls.catalog, after_calls.agent], [[runs + 4, successes + 1], [runs + 4, successes + 1]]);
    assert.equal(after_calls.search_rate, (successes + 1) / (runs + 4));
    assert.equal(after_calls.catalog_rate, (successes + 1) / (runs + 4));
  });

  test('records are off by default: measured is null', async () => {
    const plain = await startTestHosted();
    try {
      const { body } = await plain.http.get('/v0/catalog').expect(200);
      assert.equal(body.records, false);
      assert.ok(body.agents.length > 0);
      assert.ok(body.agents.every((agent: { measured: unknown }) => agent.measured === null));
    } finally {
      await plain.close();
    }
  });

  test('a published agent in the registry is listed, labelled published (and proprietary when it is)', async () => {
    const db = hosted.running.db.knex;
    const free = await db('gateway_agents').where({ id: 'gt/free' }).first();
    const manifest = { ...(typeof free.manifest === 'string' ? JSON.parse(free.manifest) : free.manifest), id: 'pubns/closed', license: 'proprietary' };
    await db('gateway_agents').insert({ ...free, id: 'pubns/closed', manifest: JSON.stringify(manifest), source: 'https://agent.example/mcp', published: true });
    const catalog = await readCatalog(db, await Registry.fromDatabase(db), false);
    const listed = catalog.agents.find((agent) => agent.id === 'pubns/closed');
    assert.deepEqual([listed?.published, listed?.proprietary, listed?.declared.license], [true, true, 'proprietary']);
    // A published version can never be deleted (gateway §7, enforced by the database): yank it, so the rest of the file sees the registry as before.
    await db('gateway_agents').where({ id: 'pubns/closed' }).update({ listed: false });
  });

  describe('POST /v0/demo/{ns}/{name}', () => {
    const demo = (agent: string, input: unknown, visitor: string) => hosted.http.post(`/v0/demo/${agent}`).set('x-forwarded-for', visitor).send(input as object);

    test('runs a shipped cheap agent, free: no receipt, no event, no key needed', async () => {
      const count = async (table: string) => Number((await hosted.running.db.knex(table).count('* as n'))[0].n);
      const [receipts, events] = [await count('gateway_receipts'), await count('call_events')];
      const tried = await demo('gt/free', { do: 'ok' }, '198.51.100.1').expect(200);
      assert.deepEqual(tried.body, { agent: 'gt/free@1.0.0', output: { done: true, children: [], max_cost: null, said: null }, billed: false });
      assert.deepEqual([await count('gateway_receipts'), await count('call_events')], [receipts, events]);
    });

    test('refuses agents outside the demo: priced above 0.01 EUR, delegating, unknown', async () => {
      for (const [agent, status, code] of [['gt/run', 404, 'not_in_demo'], ['gto/tree', 404, 'not_in_demo'], ['gt/nothing', 404, 'no_such_agent']] as const) {
        const refused = await demo(agent, { do: 'ok' }, '198.51.100.2');
        assert.deepEqual([refused.status, refused.body.code], [status, code], agent);
      }
    });

    test('narrows the input: 2000 characters a string, 4096 bytes in all, no file handle; the interface still applies', async () => {
      for (const input of [{ do: 'ok', marker: 'x'.repeat(2001) }, { do: 'ok', marker: 'holon://files/f1' }, { do: 'ok', calls: Array.from({ length: 20 }, () => ({ pad: 'y'.repeat(300) })) }]) {
        const refused = await demo('gt/free', input, '198.51.100.3');
        assert.deepEqual([refused.status, refused.body.code], [422, 'demo_input_too_large']);
      }
      assert.equal((await demo('gt/free', { do: 'ok', marker: 'x'.repeat(2000) }, '198.51.100.3')).status, 200);
      const invalid = await demo('gt/free', { do: 'dance' }, '198.51.100.3');
      assert.deepEqual([invalid.status, invalid.body.code], [422, 'rejected_input']);
    });

    test(`at most ${DEMO_PER_VISITOR_PER_HOUR} tries per visitor, then 429 with Retry-After; another visitor still tries`, async () => {
      for (let i = 0; i < DEMO_PER_VISITOR_PER_HOUR; i++) await demo('gt/free', { do: 'ok' }, '198.51.100.4').expect(200);
      const refused = await demo('gt/free', { do: 'ok' }, '198.51.100.4');
      assert.deepEqual([refused.status, refused.body.code], [429, 'rate_limited']);
      assert.match(refused.body.error, /at most 10 per 3600 s/);
      assert.ok(Number(refused.headers['retry-after']) > 0);
      // A forged X-Forwarded-For entry before the proxy's own buys nothing.
      assert.equal((await hosted.http.post('/v0/demo/gt/free').set('x-forwarded-for', '203.0.113.9, 198.51.100.4').send({ do: 'ok' })).status, 429);
      await demo('gt/free', { do: 'ok' }, '198.51.100.5').expect(200);
    });

    test(`at most ${DEMO_PER_HOUR} tries per hour in all`, async () => {
      let visitor = 0;
      let ran = 0;
      // Every try so far in this gateway counts: run until the overall bound answers.
      for (;;) {
        const tried = await demo('gt/free', { do: 'ok' }, `10.9.${Math.floor(visitor / 250)}.${visitor % 250}`);
        if (tried.status === 429) {
          assert.match(tried.body.error, /of the demo in all \(at most 600 per 3600 s\)/);
          break;
        }
        assert.equal(tried.status, 200);
        ran++;
        if (ran % DEMO_PER_VISITOR_PER_HOUR === 0) visitor++;
        assert.ok(ran <= DEMO_PER_HOUR, 'the overall bound never answered');
      }
    });

    test('CORS for HOLON_SITE_URL only: the site gets its header and preflight; a foreign origin is refused 403 without one', async () => {
      const fromSite = await hosted.http.post('/v0/demo/gt/free').set('origin', SITE).set('x-forwarded-for', '198.51.100.6').send({ do: 'ok' });
      assert.deepEqual([fromSite.status, fromSite.headers['access-control-allow-origin']], [429, SITE]);
      const preflight = await hosted.http.options('/v0/demo/gt/free').set('origin', SITE).set('access-control-request-method', 'POST');
      assert.deepEqual([preflight.status, preflight.headers['access-control-allow-origin'], preflight.headers['access-control-allow-methods']], [204, SITE, 'POST']);
      for (const origin of ['https://evil.example', 'https://site.example.evil.example', 'http://site.example', 'null']) {
        const foreign = await hosted.http.post('/v0/demo/gt/free').set('origin', origin).set('x-forwarded-for', '198.51.100.7').send({ do: 'ok' });
        assert.deepEqual([foreign.status, foreign.body.code, foreign.headers['access-control-allow-origin']], [403, 'not_permitted', undefined], origin);
      }
      // The site's origin opens the demo, nothing else.
      const elsewhere = await hosted.http.get('/v0/catalog').set('origin', SITE);
      assert.deepEqual([elsewhere.status, elsewhere.headers['access-control-allow-origin']], [403, undefined]);
    });
  });
});
