/**
 * Any process serves any request (issue 27 §1): two hosted gateway processes on one Postgres
 * database behind a real haproxy (round robin, `tests/helpers/fleet.ts`). A rate limit of L per
 * minute is counted across both (per account, and per client address as the balancer appended
 * it, a forged `X-Forwarded-For` buying nothing): 2L requests spread over both processes get L
 * answers and L refusals, within ±5%. A `wait_s` on one process is answered by a decision on the
 * other, with the same answer the deciding process gave its approver. Calls and approvals through
 * the balancer reach both processes. Postgres only, haproxy needed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fleetSkip, send, startFleet, type Fleet } from '../helpers/fleet.ts';

/** The rate limit of the fleet, per minute: per account and per address. */
const L = 60;

/** Runs `count` requests made by `make(i)`, `width` at a time (a real client's concurrency, spread by the balancer). */
async function burst<T>(count: number, width: number, make: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await make(i);
      }
    }),
  );
  return results;
}

/** How many answers of each status, and of each process. */
function tally(answers: ReadonlyArray<{ status: number; server: string | null }>) {
  const by = (key: (answer: { status: number; server: string | null }) => string) =>
    answers.reduce<Record<string, number>>((counts, answer) => ({ ...counts, [key(answer)]: (counts[key(answer)] ?? 0) + 1 }), {});
  return { status: by((answer) => String(answer.status)), server: by((answer) => answer.server ?? 'none') };
}

describe('any process serves any request', { skip: fleetSkip() }, () => {
  let fleet: Fleet;
  let human: string;
  let agent: string;
  let mandate: string;

  before(async () => {
    fleet = await startFleet({ env: { HOLON_RATE_ACCOUNT: String(L), HOLON_RATE_ADDRESS: String(L) } });
    const handle = `fleet${Date.now().toString(36)}`;
    const signed = await send(fleet.balancer_url, '/v0/signup', { body: { handle, email: `${handle}@example.test` } });
    assert.equal(signed.status, 201, JSON.stringify(signed.body));
    human = signed.body.human_key.key;
    // Approval above 0.05: gt/run's worst case is held for a human.
    const created = await send(fleet.balancer_url, '/v0/mandates', { key: human, body: { id: 'careful', grantee: `${handle}/bot`, allow: { agents: ['*'] }, approval: { above: '0.05' }, budget: { total: '3.00' } } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    mandate = `${handle}/careful`;
    const key = await send(fleet.balancer_url, '/v0/keys', { key: human, body: { mandate } });
    assert.equal(key.status, 201, JSON.stringify(key.body));
    agent = key.body.key;
  });
  after(async () => {
    await fleet?.stop();
  });

  /** A call held for approval, sent through the balancer: its approval id. */
  const held = async () => {
    const call = await send(fleet.balancer_url, '/v0/calls', { key: agent, body: { mandate, agent: 'gt/run', input: { do: 'ok' } } });
    assert.equal(call.status, 202, JSON.stringify(call.body));
    return call.body.approval.id as string;
  };

  test('calls and approvals through the balancer reach both processes', async () => {
    const ids = [await held(), await held(), await held(), await held()];
    const decided = [];
    for (const id of ids) decided.push(await send(fleet.balancer_url, `/v0/approvals/${id}`, { key: human, body: {} }));
    assert.deepEqual(decided.map((answer) => [answer.status, answer.body.receipt?.status]), ids.map(() => [200, 'succeeded']));
    const reads = [];
    for (const id of ids) reads.push(await send(fleet.balancer_url, `/v0/approvals/${id}`, { key: agent }));
    // Read back on whichever process the balancer chose: the approver's answer, wherever it was decided.
    assert.deepEqual(reads.map((answer) => answer.body.result), decided.map((answer) => answer.body));
    const servers = new Set([...decided, ...reads].map((answer) => answer.server));
    assert.deepEqual([...servers].sort(), ['g0', 'g1']);
  });

  test('a wait_s on one process is answered by a decision on the other, with the answer the deciding process gave', { timeout: 30_000 }, async () => {
    const [waiter, decider] = fleet.processes;
    for (const decision of ['approve', 'reject'] as const) {
      const id = await held();
      const waiting = send(waiter.url, `/v0/approvals/${id}?wait_s=60`, { key: agent });
      // The waiter reads the approval as pending before it waits (a decision first would be answered at once: no test of the wake-up).
      await new Promise((resolve) => setTimeout(resolve, 300));
      const reply = await send(decider.url, `/v0/approvals/${id}`, { key: human, body: { decision } });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      const answer = await waiting;
      assert.equal(answer.status, 200);
      if (decision === 'approve') {
        assert.equal(answer.body.approval.status, 'approved');
        assert.equal(reply.body.receipt.status, 'succeeded');
        assert.deepEqual(answer.body.result, reply.body);
      } else {
        assert.equal(answer.body.approval.status, 'rejected');
        assert.deepEqual(answer.body.approval, reply.body.approval);
        assert.equal('result' in answer.body, false);
      }
    }
  });

  test(`a limit of ${L} per account per minute holds across both processes: ${2 * L} requests, ${L} answered (±5%)`, async (t) => {
    // An account of its own: the other tests' requests spent some of the first account's window.
    const handle = `fleetlimit${Date.now().toString(36)}`;
    const fresh = (await send(fleet.balancer_url, '/v0/signup', { body: { handle, email: `${handle}@example.test` } })).body.human_key.key as string;
    const started = Date.now();
    const answers = await burst(2 * L, 8, () => send(fleet.balancer_url, '/v0/me', { key: fresh }));
    t.diagnostic(`${2 * L} requests in ${Date.now() - started} ms: ${JSON.stringify(tally(answers))}`);
    const { status, server } = tally(answers);
    assert.ok(Math.abs((status['200'] ?? 0) - L) <= 0.05 * L, `answered ${status['200']} of ${2 * L}, expected ${L} ±5%`);
    assert.equal((status['200'] ?? 0) + (status['429'] ?? 0), 2 * L, JSON.stringify(status));
    assert.ok(server.g0 > L / 2 && server.g1 > L / 2, `round robin over both: ${JSON.stringify(server)}`);
    const refused = answers.find((answer) => answer.status === 429)!;
    assert.equal(refused.body.code, 'rate_limited');
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
    assert.match(refused.body.error, new RegExp(`at most ${L} per 60 s`));
  });

  test(`a limit of ${L} per address holds across both processes, counted on the address the balancer appended`, async () => {
    // Every request forges another X-Forwarded-For entry; the balancer appends 203.0.113.77 after them.
    const answers = await burst(2 * L, 8, (i) => send(fleet.balancer_url, '/healthz', { peer: '203.0.113.77', headers: { 'x-forwarded-for': `10.66.${i >> 8}.${i & 255}` } }));
    const { status, server } = tally(answers);
    assert.ok(Math.abs((status['200'] ?? 0) - L) <= 0.05 * L, `answered ${status['200']} of ${2 * L}, expected ${L} ±5%`);
    assert.equal((status['200'] ?? 0) + (status['429'] ?? 0), 2 * L, JSON.stringify(status));
    assert.ok(server.g0 > 0 && server.g1 > 0, JSON.stringify(server));
    // Another client address is counted apart.
    assert.equal((await send(fleet.balancer_url, '/healthz', { peer: '203.0.113.78' })).status, 200);
  });
});
