/**
 * Issue 22 §3: logs that join up. Every log line of a request carries its request id (and the
 * trace id the caller sent, and once known the receipt id); the response carries `x-request-id`,
 * an incoming one kept when well-formed and replaced otherwise; a refusal's line names its code;
 * and no key, token or input the run used appears anywhere in its log.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import { REQUEST_ID_PATTERN } from '../../src/observe/requests.ts';
import { requestLogger } from '../../src/observe/log-context.ts';
import { useTestGateway } from '../helpers/gateway.ts';

const lines: string[] = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    done();
  },
});
const gw = useTestGateway({ logger: requestLogger({ level: 'info' }, sink) });

const SECRET_TOKEN = 'hlk_u_secrettoken_9c1d2e3f4a5b6c7d';
const INPUT_MARKER = 'input-marker-never-logged-51e0';
const TRACE = '0af7651916cd43dd8448eb211c80319c';

/** The log lines (parsed) that carry `request_id`. */
const linesOf = (request_id: string) => lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.request_id === request_id);

describe('§3 logs that join up', () => {
  test('a well-formed incoming x-request-id is kept; every line of its request carries it, the trace id and the receipt id', async () => {
    const mandate = await gw.mandate();
    const response = await gw
      .call({ mandate: mandate.id, agent: 'gt/run', input: { marker: INPUT_MARKER } })
      .set('x-request-id', 'caller-chosen.id:42')
      .set('traceparent', `00-${TRACE}-b7ad6b7169203331-01`)
      .set('authorization', `Bearer ${SECRET_TOKEN}`)
      .expect(200);
    assert.equal(response.headers['x-request-id'], 'caller-chosen.id:42');
    const ours = linesOf('caller-chosen.id:42');
    assert.ok(ours.length >= 1);
    for (const line of ours) {
      assert.equal(line.trace_id, TRACE);
      assert.equal(line.receipt_id, response.body.receipt.id);
    }
    assert.ok(ours.some((line) => line.path === '/v0/calls' && line.status === 200));
  });

  test('a malformed incoming x-request-id is replaced by a fresh one', async () => {
    const response = await gw.http.get('/v0/agents').set('x-request-id', 'bad id with spaces and "quotes"').expect(200);
    const id = response.headers['x-request-id'];
    assert.notEqual(id, 'bad id with spaces and "quotes"');
    assert.match(id, REQUEST_ID_PATTERN);
    assert.equal(linesOf(id).length, 1);
    const long = await gw.http.get('/v0/agents').set('x-request-id', 'x'.repeat(129)).expect(200);
    assert.notEqual(long.headers['x-request-id'], 'x'.repeat(129));
  });

  test("a refusal's line names its code", async () => {
    const mandate = await gw.mandate({ allow: { agents: ['gt/run'] } });
    const response = await gw.call({ mandate: mandate.id, agent: 'gt/unit', input: { units: 1 } }).expect(403);
    const [line] = linesOf(response.headers['x-request-id']);
    assert.equal(line.code, 'not_allowed');
    assert.match(String(line.msg), / not_allowed$/);
    const missing = await gw.http.get('/v0/receipts/r-none').expect(404);
    assert.equal(linesOf(missing.headers['x-request-id'])[0].code, 'no_such_receipt');
  });

  test('no key, token or input of the run is in its log', () => {
    const log = lines.join('\n');
    assert.ok(lines.length >= 4);
    assert.ok(!log.includes(SECRET_TOKEN), 'the bearer token is not logged');
    assert.ok(!log.includes(INPUT_MARKER), 'the input is not logged');
  });
});
