/**
 * A mandate's running budget figures (migration 013, `mandates.ts`; gateway §1 "Reserve"): the
 * migration fills them in from the reservations already stored, and reserving and closing move
 * them exactly: a worst case exactly equal to what remains fits, one micro-unit more does not and
 * writes nothing, a settled reservation counts what it spent, a released one nothing, and
 * closing twice moves nothing the second time.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { migrationSource } from '../../migrations/index.ts';
import type { Database } from '../../src/db/index.ts';
import { rawQuery } from '../../src/db/raw-sql.ts';
import { RESERVE_CALL } from '../../src/gateway/call-writes.ts';
import { budgetOf, closeReservation, loadMandate, reserveParams, storeMandate, subMandateParams, type StoredMandate } from '../../src/gateway/mandates.ts';
import { costView, now, receiptParams, type Receipt } from '../../src/gateway/receipts.ts';
import { openFreshDatabase } from '../helpers/clearing.ts';

let db: Database;
let dispose: () => Promise<void>;

before(async () => {
  ({ db, dispose } = await openFreshDatabase());
});

after(() => dispose());

/** A root mandate of `total` EUR (a decimal string) paid by `dev`. */
function document(id: string, total: string) {
  return { id, issuer: 'dev', grantee: `${id}-grantee`, allow: { agents: ['*'] }, budget: { total, currency: 'EUR' } };
}

/**
 * Reserves `worst_case_micros` under `mandate` for the call `id` as the gateway does, with
 * RESERVE_CALL (the budget, the reservation and the `running` receipt in one statement); true
 * when it fit.
 */
async function reserve(mandate: StoredMandate, id: string, worst_case_micros: number): Promise<boolean> {
  // Only what a receipt's row is written from (receiptParams); the rest of a receipt plays no part here.
  const receipt = { id, parent: null, status: 'running', agent: null, approval: null, error: null, duration_ms: 0, billed: false, cost: costView(0, 0), created_at: now() } as unknown as Receipt;
  const params = { ...reserveParams(mandate, id, worst_case_micros), ...subMandateParams(null).params, ...receiptParams(receipt, mandate.id, { running: { hold_id: null, process: 1 } }) };
  return (await rawQuery(db.knex, RESERVE_CALL.statement, RESERVE_CALL.values(params))).length === 1;
}

test('migration 013 fills in reserved and spent from the reservations stored before it', async () => {
  const knex = db.knex;
  // Undone by name: later migrations (014 on) stay applied.
  await knex.migrate.down({ migrationSource, name: '013_mandate_budget_figures' });
  try {
    await knex('gateway_mandates').insert({ id: 'dev/before', document: JSON.stringify(document('dev/before', '1.00')), parent: null, payer: 'dev', currency: 'EUR', total_micros: 1_000_000 });
    await knex('gateway_reservations').insert([
      { receipt: 'rb1', mandate: 'dev/before', worst_case_micros: 100_000, status: 'open' },
      { receipt: 'rb2', mandate: 'dev/before', worst_case_micros: 50_000, status: 'open' },
      { receipt: 'rb3', mandate: 'dev/before', worst_case_micros: 200_000, spent_micros: 30_000, status: 'settled' },
      { receipt: 'rb4', mandate: 'dev/before', worst_case_micros: 300_000, status: 'released' },
    ]);
  } finally {
    await knex.migrate.latest({ migrationSource });
  }
  assert.deepEqual(await budgetOf(knex, 'dev/before', 1_000_000), { total_micros: 1_000_000, spent_micros: 30_000, reserved_micros: 150_000, remaining_micros: 820_000 });
  assert.deepEqual((await loadMandate(knex, 'dev/before'))!.figures, { total_micros: 1_000_000, spent_micros: 30_000, reserved_micros: 150_000, remaining_micros: 820_000 });
});

test('reserving and closing move the figures exactly; what exactly remains fits, one micro-unit more is refused and writes nothing', async () => {
  const knex = db.knex;
  const mandate: StoredMandate = await storeMandate(knex, document('dev/exact-figures', '0.30'), { parent: null, payer: 'dev' });
  assert.equal(await reserve(mandate, 'rf1', 200_000), true);
  assert.equal(await reserve(mandate, 'rf2', 100_001), false);
  assert.deepEqual(await budgetOf(knex, mandate.id, 300_000), { total_micros: 300_000, spent_micros: 0, reserved_micros: 200_000, remaining_micros: 100_000 });
  assert.equal(await knex('gateway_reservations').where({ receipt: 'rf2' }).first(), undefined);
  assert.equal(await knex('gateway_receipts').where({ id: 'rf2' }).first(), undefined);
  assert.equal(await reserve(mandate, 'rf2', 100_000), true);
  assert.equal((await knex('gateway_receipts').where({ id: 'rf2' }).first('status')).status, 'running');
  await knex.transaction((trx) => closeReservation(trx, 'rf1', 120_000));
  await knex.transaction((trx) => closeReservation(trx, 'rf2', null));
  assert.deepEqual(await budgetOf(knex, mandate.id, 300_000), { total_micros: 300_000, spent_micros: 120_000, reserved_micros: 0, remaining_micros: 180_000 });
  await knex.transaction((trx) => closeReservation(trx, 'rf1', 120_000));
  await knex.transaction((trx) => closeReservation(trx, 'rf2', 50_000));
  assert.deepEqual(await budgetOf(knex, mandate.id, 300_000), { total_micros: 300_000, spent_micros: 120_000, reserved_micros: 0, remaining_micros: 180_000 });
  assert.deepEqual(
    (await knex('gateway_reservations').whereIn('receipt', ['rf1', 'rf2']).orderBy('receipt').select('receipt', 'status', 'spent_micros')).map((r) => ({ ...r, spent_micros: Number(r.spent_micros) })),
    [
      { receipt: 'rf1', status: 'settled', spent_micros: 120_000 },
      { receipt: 'rf2', status: 'released', spent_micros: 0 },
    ],
  );
});
