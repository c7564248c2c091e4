/**
 * `Server-Timing` on `POST /v0/calls` (issue 12 §2, `src/gateway/server-timing.ts`): off by
 * default; with `HOLON_SERVER_TIMING=1`, the phases a call went through, in the order of gateway
 * §1, then `total`, each a duration in ms.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serverTimingFromEnv } from '../../src/gateway/server-timing.ts';
import { useTestGateway, type TestMandate } from '../helpers/gateway.ts';
import { setUp } from '../helpers/hooks.ts';

const timed = useTestGateway({ server_timing: true });
const plain = useTestGateway();
let mandate: TestMandate;
setUp(async () => {
  mandate = await timed.mandate();
});

/** The header as [name, ms] pairs; throws on an entry that is not `name;dur=<decimal>`. */
function phases(header: string | undefined): Array<[string, number]> {
  assert.ok(header, 'no Server-Timing header');
  return header.split(', ').map((entry) => {
    const match = /^([a-z]+);dur=(\d+\.\d{2})$/.exec(entry);
    assert.ok(match, `malformed entry ${JSON.stringify(entry)}`);
    return [match[1], Number(match[2])];
  });
}

test('a billed call lists mandate, admit, reserve, hold, run, finish and total; the phases add up to at most the total', async () => {
  const response = await timed.call({ mandate: mandate.id, agent: 'gt/run', input: { sleep_ms: 50 } }).expect(200);
  assert.equal(response.body.receipt.billed, true);
  const listed = phases(response.headers['server-timing']);
  assert.deepEqual(listed.map(([name]) => name), ['mandate', 'admit', 'reserve', 'hold', 'run', 'finish', 'total']);
  const total = listed.at(-1)![1];
  const sum = listed.slice(0, -1).reduce((s, [, ms]) => s + ms, 0);
  assert.ok(sum <= total + 0.07, `phases ${sum} ms over total ${total} ms`);
  // The agent slept 50 ms: the run phase holds it.
  const run = listed.find(([name]) => name === 'run')![1];
  assert.ok(run >= 50, `run ${run} ms`);
});

test('a free call opens no hold, so it lists no hold phase', async () => {
  const response = await timed.call({ mandate: mandate.id, agent: 'gt/free', input: {} }).expect(200);
  assert.deepEqual(phases(response.headers['server-timing']).map(([name]) => name), ['mandate', 'admit', 'reserve', 'run', 'finish', 'total']);
});

test('a call denied at admission lists only the mandate read and the total', async () => {
  const narrow = await timed.mandate({ deny: { agents: ['gt/run'] } });
  const response = await timed.call({ mandate: narrow.id, agent: 'gt/run', input: {} }).expect(403);
  assert.deepEqual(phases(response.headers['server-timing']).map(([name]) => name), ['mandate', 'total']);
});

test('off by default: no Server-Timing header', async () => {
  const other = await plain.mandate();
  const response = await plain.call({ mandate: other.id, agent: 'gt/run', input: {} }).expect(200);
  assert.equal(response.headers['server-timing'], undefined);
});

test('HOLON_SERVER_TIMING: 1 turns it on, unset, empty or 0 leave it off, anything else is refused naming the variable', () => {
  assert.equal(serverTimingFromEnv({ HOLON_SERVER_TIMING: '1' }), true);
  for (const off of [{}, { HOLON_SERVER_TIMING: '' }, { HOLON_SERVER_TIMING: '0' }]) assert.equal(serverTimingFromEnv(off), false);
  for (const bad of ['yes', 'true', '2', ' 1']) assert.throws(() => serverTimingFromEnv({ HOLON_SERVER_TIMING: bad }), /HOLON_SERVER_TIMING must be 1 \(on\) or 0 \(off\)/);
});
