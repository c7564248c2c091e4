/**
 * The root mandates a process keeps (`mandate-cache.ts`, issue 21 §1): a kept mandate answers
 * without a read for its time to live and is read again after it; a mandate that does not exist
 * is never kept; past the bound the oldest read goes first; and a kept document can never let a
 * call overrun its budget, because reserving checks the row's own total (a dev mandate replaced
 * with a smaller budget by another process refuses at once).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Database } from '../../src/db/index.ts';
import { rawQuery } from '../../src/db/raw-sql.ts';
import { RESERVE_CALL } from '../../src/gateway/call-writes.ts';
import { MandateCache } from '../../src/gateway/mandate-cache.ts';
import { budgetOf, reserveParams, storeMandate, subMandateParams } from '../../src/gateway/mandates.ts';
import { costView, now, receiptParams, type Receipt } from '../../src/gateway/receipts.ts';
import { openFreshDatabase } from '../helpers/clearing.ts';

let db: Database;
let dispose: () => Promise<void>;

before(async () => {
  ({ db, dispose } = await openFreshDatabase());
});

after(() => dispose());

/** A root mandate of `total` EUR (a decimal string) for `grantee`, paid by `dev`. */
function document(id: string, total: string, grantee = `${id}-grantee`) {
  return { id, issuer: 'dev', grantee, allow: { agents: ['*'] }, budget: { total, currency: 'EUR' } };
}

/** Replaces the stored document of `id` as the dev gateway's start does (`replace`). */
async function replace(id: string, total: string, grantee: string): Promise<void> {
  await storeMandate(db.knex, document(id, total, grantee), { parent: null, payer: 'dev', replace: true });
}

test('a kept mandate answers without a read until its time to live has passed, then is read again', async () => {
  await storeMandate(db.knex, document('dev/kept', '1.00', 'first'), { parent: null, payer: 'dev' });
  const kept = new MandateCache(db.knex, 60_000);
  const fresh = new MandateCache(db.knex, 0);
  assert.equal((await kept.get('dev/kept'))!.mandate.grantee, 'first');
  assert.equal((await fresh.get('dev/kept'))!.mandate.grantee, 'first');
  await replace('dev/kept', '1.00', 'second');
  assert.equal((await kept.get('dev/kept'))!.mandate.grantee, 'first');
  assert.equal((await fresh.get('dev/kept'))!.mandate.grantee, 'second');
  assert.deepEqual(Object.keys((await kept.get('dev/kept'))!).sort(), ['document', 'id', 'mandate', 'parent', 'payer']);
});

test('a mandate that does not exist is not kept: once stored, the next call finds it', async () => {
  const cache = new MandateCache(db.knex, 60_000);
  assert.equal(await cache.get('dev/later'), null);
  await storeMandate(db.knex, document('dev/later', '1.00', 'later'), { parent: null, payer: 'dev' });
  assert.equal((await cache.get('dev/later'))!.mandate.grantee, 'later');
  assert.equal(await cache.get('dev/later.sub'), null);
});

test('past its bound the cache lets the oldest read go first', async () => {
  for (const name of ['a', 'b', 'c']) await storeMandate(db.knex, document(`dev/bound-${name}`, '1.00', 'old'), { parent: null, payer: 'dev' });
  const cache = new MandateCache(db.knex, 60_000, 2);
  for (const name of ['a', 'b', 'c']) await cache.get(`dev/bound-${name}`);
  for (const name of ['a', 'b', 'c']) await replace(`dev/bound-${name}`, '1.00', 'new');
  assert.deepEqual(await Promise.all(['b', 'c'].map(async (name) => (await cache.get(`dev/bound-${name}`))!.mandate.grantee)), ['old', 'old']);
  assert.equal((await cache.get('dev/bound-a'))!.mandate.grantee, 'new');
});

test("reserving checks the row's own total, not the kept document's: a budget cut by a replacement refuses at once", async () => {
  await storeMandate(db.knex, document('dev/cut', '10.00'), { parent: null, payer: 'dev' });
  const kept = (await new MandateCache(db.knex, 60_000).get('dev/cut'))!;
  await replace('dev/cut', '1.00', 'dev/cut-grantee');
  assert.equal(kept.mandate.budget.total_micros, 10_000_000);
  const receipt = { id: 'rcut', parent: null, status: 'running', agent: null, approval: null, error: null, duration_ms: 0, billed: false, cost: costView(0, 0), created_at: now() } as unknown as Receipt;
  const reserve = (worst_case_micros: number) =>
    rawQuery(db.knex, RESERVE_CALL.statement, RESERVE_CALL.values({ ...reserveParams(kept, 'rcut', worst_case_micros), ...subMandateParams(null).params, ...receiptParams(receipt, kept.id, { running: { hold_id: null, process: 1 } }) }));
  assert.deepEqual(await reserve(2_000_000), []);
  assert.deepEqual(await budgetOf(db.knex, 'dev/cut', 1_000_000), { total_micros: 1_000_000, spent_micros: 0, reserved_micros: 0, remaining_micros: 1_000_000 });
  assert.deepEqual(await reserve(1_000_000), [{ id: 'dev/cut' }]);
});
