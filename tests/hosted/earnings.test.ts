/**
 * Earnings (gateway §7 "Earnings"): `GET /v0/me/agents` computes what each version earned from
 * the journal, exact to the micro-unit, against figures computed by hand for a chain of forks:
 *
 *   L/base@1.0.0    per_run 0.100000
 *   M/fork@1.0.0    per_run 0.035000, fork of L/base@1.0.0, royalty 0.15
 *   N/refork@1.0.0  per_run 0.012345, fork of M/fork@1.0.0, royalty 0.20
 *
 * A caller calls base once, fork twice, refork three times. Per call (micro-units; the fee is 10%
 * rounded down, each royalty rounded down, gateway §2 "Split"):
 *   base   100000: fee 10000, L 90000
 *   fork    35000: fee 3500, revenue 31500, royalty to L floor(4725) = 4725, M keeps 26775
 *   refork  12345: fee 1234, revenue 11111, royalty to M floor(2222.2) = 2222, N keeps 8889;
 *                  M pays L floor(333.3) = 333 of it, keeps 1889
 * So: L share 90000, royalties 2×4725 + 3×333 = 10449, total 100449;
 *     M share 2×26775 = 53550, royalties 3×1889 = 5667, total 59217;
 *     N share 3×8889 = 26667, royalties 0, total 26667.
 * Paid 207035 = fees 20702 + authors 186333: nothing is lost.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseMoney } from '../../src/contracts/money.ts';
import { Registry } from '../../src/gateway/registry.ts';
import { EARNINGS_DAYS, earningsByDay } from '../../src/hosted/earnings.ts';
import { signInWithStandin, standinSettings, useGithubStandin } from '../helpers/github-standin.ts';
import { useHttpsAgent } from '../helpers/https-agent.ts';
import { useTestHosted } from '../helpers/hosted.ts';

const github = useGithubStandin();
const server = useHttpsAgent(() => ({ ok: true }));
const hosted = useTestHosted(() => ({
  // The agent serves on loopback: private endpoints allowed, as in development (gateway §7 "Network safety").
  settings: { ...standinSettings(github), allow_private_endpoints: true },
  ca: server.ca,
}));
let nextId = 8000;

/** A GitHub user signed in, then its agent `name` published (proprietary: no source to check). */
async function authorWith(name: string, price: string, lineage?: { fork_of: string; royalty: string }) {
  const id = nextId++;
  const author = await signInWithStandin(hosted.http, github, { id, login: `Earner-${id}`, emails: [{ email: `earner-${id}@example.test`, primary: true, verified: true }] });
  const manifest = {
    id: `${author.handle}/${name}`,
    version: '1.0.0',
    summary: `${name}.`,
    capabilities: [`earn.${name}`],
    interface: { input: { type: 'object' }, output: { type: 'object' } },
    price: { model: 'per_run', amount: price, currency: 'EUR' },
    runtime: { kind: 'webhook', endpoint: `${server.url}/${name}` },
    license: 'proprietary',
    ...(lineage ? { lineage } : {}),
  };
  const published = await hosted.http.post('/v0/agents').set('authorization', `Bearer ${author.human}`).send(manifest);
  assert.equal(published.status, 201, JSON.stringify(published.body));
  return { ...author, agent: published.body.agent as string, id: manifest.id };
}

/** Waits until the outbox has posted every settlement (each poll is bounded; 400 polls at most). */
async function allPosted(): Promise<void> {
  for (let poll = 0; poll < 400; poll += 1) {
    const pending = await hosted.running.db.knex('gateway_settlement_intents').where({ status: 'pending' }).count({ n: '*' });
    if (Number(pending[0].n) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('settlements still pending after 400 polls');
}

const balanceOf = async (human: string) => parseMoney((await hosted.http.get('/v0/me').set('authorization', `Bearer ${human}`).expect(200)).body.balance.balance);

test('each version earns its share and its royalties from forks, exact to the micro-unit, as the journal holds them', async () => {
  const L = await authorWith('base', '0.10');
  const M = await authorWith('fork', '0.035', { fork_of: L.agent, royalty: '0.15' });
  const N = await authorWith('refork', '0.012345', { fork_of: M.agent, royalty: '0.20' });
  const before = { L: await balanceOf(L.human), M: await balanceOf(M.human), N: await balanceOf(N.human) };

  const caller = await hosted.signup();
  for (const [agent, times] of [[L.id, 1], [M.id, 2], [N.id, 3]] as const) {
    for (let i = 0; i < times; i += 1) {
      const call = await hosted.http.post('/v0/calls').set('authorization', `Bearer ${caller.human}`).send({ mandate: caller.mandate, agent, input: {} });
      assert.equal(call.status, 200, JSON.stringify(call.body));
    }
  }
  await allPosted();

  const earned = async (human: string) => {
    const view = (await hosted.http.get('/v0/me/agents').set('authorization', `Bearer ${human}`).expect(200)).body;
    return { total: view.total, versions: view.versions.map((v: any) => [v.agent, v.earned, v.credential_set, v.evaluations]) };
  };
  assert.deepEqual(await earned(L.human), { total: '0.100449', versions: [[L.agent, { calls: 1, share: '0.09', royalties: '0.010449', total: '0.100449' }, false, []]] });
  assert.deepEqual(await earned(M.human), { total: '0.059217', versions: [[M.agent, { calls: 2, share: '0.05355', royalties: '0.005667', total: '0.059217' }, false, []]] });
  assert.deepEqual(await earned(N.human), { total: '0.026667', versions: [[N.agent, { calls: 3, share: '0.026667', royalties: '0.00', total: '0.026667' }, false, []]] });

  // The journal agrees: each author's balance grew by exactly what the view says it earned.
  assert.deepEqual(
    { L: (await balanceOf(L.human)) - before.L, M: (await balanceOf(M.human)) - before.M, N: (await balanceOf(N.human)) - before.N },
    { L: 100449, M: 59217, N: 26667 },
  );

  // By day (the console's chart): every settlement on the day it was posted. One of N's three
  // settlements is moved two days back in the journal: it counts there, the other two today.
  const [moved] = await hosted.running.db.knex('gateway_settlement_intents').where({ operation: 'settle', status: 'posted' }).whereRaw(`body->>'owner' = ?`, [N.handle]).whereLike('txn_id', 'settle:%').select('txn_id', 'posted_at');
  await hosted.running.db.knex('gateway_settlement_intents').where({ txn_id: moved.txn_id }).update({ posted_at: new Date(new Date(moved.posted_at).getTime() - 2 * 86_400_000) });
  const days = (await hosted.http.get('/v0/me/agents').set('authorization', `Bearer ${N.human}`).expect(200)).body.by_day as Array<{ day: string; total: string }>;
  const today = new Date(moved.posted_at).toISOString().slice(0, 10);
  assert.equal(days.length, EARNINGS_DAYS);
  assert.equal(days[EARNINGS_DAYS - 1].day, today);
  assert.deepEqual(days.filter((day) => day.total !== '0.00'), [
    { day: new Date(Date.parse(today) - 2 * 86_400_000).toISOString().slice(0, 10), total: '0.008889' },
    { day: today, total: '0.017778' },
  ]);
});

test('by day: the last 30 UTC days up to today, oldest first, days without earnings as 0, older days left out', () => {
  const now = new Date('2026-03-02T23:59:59.999Z');
  const days = earningsByDay(new Map([['2026-03-02', 5], ['2026-02-01', 7], ['2026-01-31', 11], ['2026-03-03', 13]]), now);
  assert.equal(days.length, 30);
  assert.deepEqual([days[0], days[29]], [{ day: '2026-02-01', total: '0.000007' }, { day: '2026-03-02', total: '0.000005' }]);
  assert.equal(days[27].day, '2026-02-28');
  assert.deepEqual(days.slice(1, 29).map((day) => day.total), Array(28).fill('0.00'));
});

test('an account that published nothing sees no versions and earned 0', async () => {
  const id = nextId++;
  const nobody = await signInWithStandin(hosted.http, github, { id, login: `Idle-${id}`, emails: [] });
  const view = await hosted.http.get('/v0/me/agents').set('authorization', `Bearer ${nobody.human}`).expect(200);
  assert.deepEqual({ ...view.body, by_day: undefined }, { currency: 'EUR', versions: [], total: '0.00', by_day: undefined });
  assert.deepEqual(new Set(view.body.by_day.map((day: { total: string }) => day.total)), new Set(['0.00']));
});

test('a fork keeps paying its royalty after its upstream is yanked, in this process and after a restart', async () => {
  const L = await authorWith('old', '0.10');
  const M = await authorWith('heir', '0.035', { fork_of: L.agent, royalty: '0.15' });
  await hosted.http.delete(`/v0/agents/${L.agent}`).set('authorization', `Bearer ${L.human}`).expect(200);
  const caller = await hosted.signup();
  const call = await hosted.http.post('/v0/calls').set('authorization', `Bearer ${caller.human}`).send({ mandate: caller.mandate, agent: M.id, input: {} });
  assert.equal(call.status, 200, JSON.stringify(call.body));
  assert.deepEqual(call.body.receipt.splits, [
    { to: 'holon', amount: '0.0035' },
    { to: M.handle, amount: '0.026775' },
    { to: L.handle, amount: '0.004725' },
  ]);
  await allPosted();
  const view = (await hosted.http.get('/v0/me/agents').set('authorization', `Bearer ${L.human}`).expect(200)).body;
  assert.deepEqual(view.versions.map((v: any) => [v.agent, v.listed, v.earned.royalties]), [[L.agent, false, '0.004725']]);
  // A restart rebuilds the registry from the database: the yanked version is not listed, yet known for royalties.
  const rebuilt = await Registry.fromDatabase(hosted.running.db.knex);
  assert.deepEqual([rebuilt.resolve(L.id), rebuilt.manifestOf(L.agent)?.id], [null, L.id]);
});
