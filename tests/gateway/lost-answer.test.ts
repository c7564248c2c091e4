/**
 * A closing commit whose answer is lost (issue 27 §2: a failover breaks the connection after the
 * database committed): the call reads its receipt back and answers from the books. Committed:
 * 200, billed once, the payer charged exactly once. Not committed: 502 `gateway_error`, nothing
 * billed, the hold released. Both engines: the gateway's pool is wrapped so that the finishing
 * statement (`holon_gateway_finish_call`) runs, or not, and then its connection answers with the
 * error a broken connection gives.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Knex } from 'knex';
import { FINISH_CALL } from '../../src/gateway/call-writes.ts';
import { useTestGateway, waitFor } from '../helpers/gateway.ts';

const gw = useTestGateway();

type Query = (config: unknown, values?: unknown[]) => Promise<unknown>;

/**
 * Makes the next finishing statement on `knex`'s pool lose its answer: run first when `committed`,
 * never when not. Answers a function that undoes the wrapping.
 */
function loseNextFinish(knex: Knex, committed: boolean): () => void {
  const client = knex.client as { acquireConnection(): Promise<{ query: Query }> };
  const acquire = client.acquireConnection.bind(client);
  // The pool's own connection objects get an own `query` (the pool must get back what it lent).
  const patched = new Map<{ query: Query }, Query>();
  let armed = true;
  client.acquireConnection = async () => {
    const connection = await acquire();
    if (!patched.has(connection)) {
      const original = connection.query;
      const query = original.bind(connection) as Query;
      connection.query = async (config, values) => {
        const text = typeof config === 'string' ? config : (config as { text: string }).text;
        if (armed && text === FINISH_CALL.statement.text) {
          armed = false;
          if (committed) await query(config, values);
          throw new Error('Connection terminated unexpectedly');
        }
        return query(config, values);
      };
      patched.set(connection, original);
    }
    return connection;
  };
  return () => {
    client.acquireConnection = acquire;
    for (const [connection, original] of patched) connection.query = original;
  };
}

test('a closing commit that went through although its answer was lost: 200, billed once, charged once', async () => {
  const mandate = await gw.mandate();
  const before = await gw.balances([mandate.payer]);
  const restore = loseNextFinish(gw.running.db.knex, true);
  try {
    const response = await gw.call({ mandate: mandate.id, agent: 'gt/sleeper', input: {} });
    assert.equal(response.status, 200, JSON.stringify(response.body));
    assert.equal(response.body.output.done, true, 'the output the agent gave');
    assert.equal(response.body.receipt.status, 'succeeded');
    assert.equal(response.body.receipt.billed, true);
    const receipt = await gw.receipt(response.body.receipt.id);
    assert.equal(receipt.status, 'succeeded');
    assert.deepEqual(receipt.cost, { own: '0.10', downstream: '0.00', total: '0.10' });
  } finally {
    restore();
  }
  const after = await gw.balances([mandate.payer]);
  assert.equal(before[mandate.payer] - after[mandate.payer], 100_000, 'charged 0.10 EUR exactly once');
  await waitFor(async () => (await gw.reserved(mandate.payer)) === 0);
  const budget = (await gw.http.get(`/v0/mandates/${mandate.id}`).expect(200)).body.budget;
  assert.deepEqual(budget, { currency: 'EUR', total: '10.00', spent: '0.10', reserved: '0.00', remaining: '9.90' });
});

test('a closing commit that did not go through: 502 gateway_error, nothing billed, the hold released', async () => {
  const mandate = await gw.mandate();
  const before = await gw.balances([mandate.payer]);
  const restore = loseNextFinish(gw.running.db.knex, false);
  let id: string;
  try {
    const response = await gw.call({ mandate: mandate.id, agent: 'gt/sleeper', input: {} });
    assert.equal(response.status, 502, JSON.stringify(response.body));
    assert.equal(response.body.code, 'gateway_error');
    id = response.body.receipt.id;
  } finally {
    restore();
  }
  const receipt = await gw.receipt(id);
  assert.equal(receipt.status, 'failed');
  assert.equal(receipt.billed, false);
  assert.deepEqual(await gw.balances([mandate.payer]), before);
  await waitFor(async () => (await gw.reserved(mandate.payer)) === 0);
  const budget = (await gw.http.get(`/v0/mandates/${mandate.id}`).expect(200)).body.budget;
  assert.deepEqual(budget, { currency: 'EUR', total: '10.00', spent: '0.00', reserved: '0.00', remaining: '10.00' });
});
