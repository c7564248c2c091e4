/**
 * Crash test of the reference binding (clearing-contract invariant 9, §9, invariant 6): the
 * binding runs as its own process (`holon clearing serve`), takes concurrent settles, is
 * SIGKILLed mid-load and restarted on the same data. Afterwards every attempted settlement is
 * whole or absent, every acknowledged one is present, replays apply exactly the missing ones,
 * every balance is what the settled charges say, and the ledger sums to zero.
 *
 * Storage: a PGlite directory by default; with `DATABASE_URL` set, a fresh database created on
 * that server for this run (so the zero-sum check sees nothing but this test's entries).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { expectOk, JsonClient, startBinding, type ChildBinding } from '../../bench/clearing/binding.ts';

/** Holder accounts created, funded and settled between. */
const HOLDERS = 6;
/** What each holder is funded with, in micro-units. */
const FUNDING_MICROS = 10_000_000_000;
/** Concurrent loops posting settles. */
const LOOPS = 8;
/** Acknowledged settlements to wait for before the kill is scheduled (so the kill lands mid-load). */
const ACKED_BEFORE_KILL = 150;
/** Least time under load before the kill is scheduled. */
const LOAD_MIN_MS = 1_500;
/** Bound on the wait for ACKED_BEFORE_KILL acknowledgements. */
const LOAD_WAIT_MAX_MS = 20_000;
/** Parallel requests of the checking phase. */
const CHECK_PARALLELISM = 16;
/**
 * Starts after the kill: the binding itself waits ~12 s for the dead process's PGlite lock to go
 * stale (10 s), which leaves little slack on a loaded machine; a supervisor would start it again,
 * and so does this test, once.
 */
const RESTART_ATTEMPTS = 2;

/** The terms of one attempted settlement (§6.8). */
interface Attempt {
  txnId: string;
  caller: string;
  owner: string;
  rate: number;
  retail: number;
}

/** Where the binding keeps its data for this run, the child's environment, and how to remove it. */
interface Storage {
  engine: 'pglite' | 'postgres';
  dir: string;
  env: NodeJS.ProcessEnv;
  dispose(): Promise<void>;
}

/** A fresh PGlite directory, or a fresh database on the `DATABASE_URL` server. */
async function freshStorage(): Promise<Storage> {
  const parent = await mkdtemp(path.join(os.tmpdir(), 'holon-crash-'));
  const dir = path.join(parent, 'data');
  const url = process.env.DATABASE_URL;
  if (!url) {
    const env = { ...process.env };
    delete env.DATABASE_URL;
    return { engine: 'pglite', dir, env, dispose: () => rm(parent, { recursive: true, force: true }) };
  }
  const name = `holon_crash_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const own = new URL(url);
  own.pathname = `/${name}`;
  return {
    engine: 'postgres',
    dir,
    env: { ...process.env, DATABASE_URL: own.toString() },
    async dispose() {
      const cleanup = new pg.Client({ connectionString: url });
      await cleanup.connect();
      await cleanup.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await cleanup.end();
      await rm(parent, { recursive: true, force: true });
    },
  };
}

/**
 * The `n`th settlement of loop `loop`: a pure function of both, so a replay after the restart
 * repeats exactly the terms of the first attempt. The margin is never zero, so every settled
 * entry has exactly three legs.
 */
function attemptOf(prefix: string, holders: string[], loop: number, n: number): Attempt {
  const caller = holders[(loop + n) % HOLDERS];
  const owner = holders[(loop + n + 1 + (n % (HOLDERS - 1))) % HOLDERS];
  const rate = 1_000 + ((loop * 7_919 + n * 104_729) % 50_000);
  return { txnId: `${prefix}-L${loop}-${n}`, caller, owner, rate, retail: rate + 1 + (n % 997) };
}

/** Runs `work` over `items` with at most `limit` in flight. */
async function forEachLimit<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** The balances the settled attempts imply: funding, minus retail paid, plus rate earned; fees get the margins. */
function expectedBalances(holders: string[], settled: Iterable<Attempt>): Map<string, number> {
  const expected = new Map<string, number>(holders.map((h) => [h, FUNDING_MICROS]));
  let fees = 0;
  for (const a of settled) {
    expected.set(a.caller, expected.get(a.caller)! - a.retail);
    expected.set(a.owner, expected.get(a.owner)! + a.rate);
    fees += a.retail - a.rate;
  }
  expected.set('platform:fees', fees);
  expected.set('external:funding', -FUNDING_MICROS * holders.length);
  expected.set('external:adjustments', 0);
  return expected;
}

/** Reads every balance `expected` names and checks each figure and their zero sum (invariant 6). */
async function checkBalances(client: JsonClient, expected: Map<string, number>, when: string): Promise<void> {
  let sum = 0;
  for (const [account, balance] of expected) {
    const read = expectOk(await client.get(`/internal/ledger/balance/${encodeURIComponent(account)}`), `read-balance ${account}`);
    assert.equal(read.balance, balance, `${when}: balance of ${account}`);
    sum += read.balance;
  }
  assert.equal(sum, 0, `${when}: the balances of all accounts sum to ${sum}, not 0`);
}

test('a SIGKILL mid-load leaves every settlement whole or absent, and the ledger balanced', { timeout: 120_000 }, async (t) => {
  const storage = await freshStorage();
  let binding: ChildBinding | null = null;
  let client: JsonClient | null = null;
  t.after(async () => {
    await client?.close();
    await binding?.stop();
    await storage.dispose();
  });

  binding = await startBinding({ dir: storage.dir, env: storage.env });
  client = new JsonClient(binding.url);
  const prefix = `crash-${randomBytes(4).toString('hex')}`;
  const holders = Array.from({ length: HOLDERS }, (_, i) => `${prefix}-h${i}`);
  for (const account of holders) {
    expectOk(await client.post('/internal/reference/accounts', { account }), `create-account ${account}`);
    expectOk(await client.post('/internal/ledger/purchase', { txnId: `${prefix}-fund-${account}`, account, amount: FUNDING_MICROS }), `credit ${account}`);
  }

  // Load: LOOPS concurrent loops, each posting its own deterministic settlements back to back.
  const attempted = new Map<string, Attempt>();
  const acknowledged = new Set<string>();
  const anomalies: string[] = [];
  let killed = false;
  const loadClient = client;
  const loops = Array.from({ length: LOOPS }, async (_, loop) => {
    for (let n = 0; !killed; n++) {
      const attempt = attemptOf(prefix, holders, loop, n);
      attempted.set(attempt.txnId, attempt);
      const { txnId, caller, owner, rate, retail } = attempt;
      try {
        const answer = await loadClient.post('/internal/ledger/charge', { txnId, caller, owner, rate, retail });
        if (answer.status === 200 && answer.body.applied === true) acknowledged.add(txnId);
        else anomalies.push(`${txnId}: ${answer.status} ${JSON.stringify(answer.body)}`);
      } catch (error) {
        if (!killed) anomalies.push(`${txnId}: transport failure before the kill: ${(error as Error).message}`);
        return;
      }
    }
  });
  const loadStarted = Date.now();
  const loading = () => Date.now() - loadStarted < LOAD_MIN_MS || acknowledged.size < ACKED_BEFORE_KILL;
  while (loading() && anomalies.length === 0 && Date.now() - loadStarted < LOAD_WAIT_MAX_MS) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await new Promise((resolve) => setTimeout(resolve, 100 + Math.floor(Math.random() * 400)));
  killed = true;
  await binding.kill();
  await Promise.all(loops);
  await client.close();
  const killedAfterMs = Date.now() - loadStarted;
  const inFlight = attempted.size - acknowledged.size;
  t.diagnostic(`${storage.engine}: killed after ${killedAfterMs} ms of load; ${attempted.size} attempted, ${acknowledged.size} acknowledged, ${inFlight} in flight`);
  assert.deepEqual(anomalies, [], 'every settle before the kill was accepted with applied: true');
  assert.ok(acknowledged.size >= ACKED_BEFORE_KILL, `only ${acknowledged.size} settlements were acknowledged in ${LOAD_WAIT_MAX_MS} ms`);

  // Restart on the same data (on PGlite the killed process's directory lock must go stale first).
  const restartStarted = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      binding = await startBinding({ dir: storage.dir, env: storage.env });
      break;
    } catch (error) {
      const locked = /already being used by another process/.test((error as Error).message);
      if (!locked || attempt >= RESTART_ATTEMPTS) throw error;
      t.diagnostic(`${storage.engine}: restart attempt ${attempt} found the directory still locked; starting again`);
    }
  }
  client = new JsonClient(binding.url);
  t.diagnostic(`${storage.engine}: restarted in ${Date.now() - restartStarted} ms`);
  const checkClient = client;

  // Every attempted settlement is whole or absent (invariant 9); every acknowledged one is present.
  const present = new Set<string>();
  const attempts = [...attempted.values()];
  await forEachLimit(attempts, CHECK_PARALLELISM, async (a) => {
    const read = expectOk(await checkClient.get(`/internal/ledger/settlement/${encodeURIComponent(a.txnId)}`), `read-settlement ${a.txnId}`);
    if (read.state === 'unknown') {
      assert.deepEqual(read.legs, [], `${a.txnId} is unknown and has no legs`);
      return;
    }
    assert.equal(read.state, 'settled', `${a.txnId} is settled or unknown`);
    assert.equal(read.account, a.caller, `${a.txnId}: the paying account`);
    assert.equal(read.amount, a.retail, `${a.txnId}: the amount paid`);
    assert.equal(read.reversed_by, null, `${a.txnId} was never reversed`);
    const byKind = (x: { kind: string }, y: { kind: string }) => x.kind.localeCompare(y.kind);
    assert.deepEqual(
      [...read.legs].sort(byKind),
      [
        { account: a.caller, delta: -a.retail, kind: 'charge' },
        { account: a.owner, delta: a.rate, kind: 'earn' },
        { account: 'platform:fees', delta: a.retail - a.rate, kind: 'fee' },
      ].sort(byKind),
      `${a.txnId}: exactly the three legs of its terms`,
    );
    present.add(a.txnId);
  });
  const lostAcks = [...acknowledged].filter((id) => !present.has(id));
  assert.deepEqual(lostAcks, [], 'every acknowledged settlement survived the kill');
  const missing = attempts.filter((a) => !present.has(a.txnId));
  t.diagnostic(`${storage.engine}: after the restart ${present.size} present (${present.size - acknowledged.size} unacknowledged but committed), ${missing.length} absent`);

  // The balances are exactly what the present settlements imply, and sum to zero.
  await checkBalances(client, expectedBalances(holders, attempts.filter((a) => present.has(a.txnId))), 'after the restart');

  // Replaying every attempted id applies exactly the absent ones (§9).
  const appliedByReplay = new Set<string>();
  await forEachLimit(attempts, CHECK_PARALLELISM, async ({ txnId, caller, owner, rate, retail }) => {
    const answer = expectOk(await checkClient.post('/internal/ledger/charge', { txnId, caller, owner, rate, retail }), `replay of ${txnId}`);
    assert.equal(answer.applied, !present.has(txnId), `replay of ${txnId} applies exactly when it was absent`);
    if (answer.applied) appliedByReplay.add(txnId);
  });
  assert.equal(appliedByReplay.size, missing.length, 'the replays applied exactly the absent settlements');

  // Now every attempted settlement is present once, and the books still balance.
  await forEachLimit(attempts, CHECK_PARALLELISM, async (a) => {
    const read = expectOk(await checkClient.get(`/internal/ledger/settlement/${encodeURIComponent(a.txnId)}`), `read-settlement ${a.txnId}`);
    assert.equal(read.state, 'settled', `${a.txnId} is settled after the replays`);
  });
  await checkBalances(client, expectedBalances(holders, attempts), 'after the replays');
});
