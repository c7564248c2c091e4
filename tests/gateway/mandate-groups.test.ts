/**
 * Group commit on a mandate's row (issue 21 §2, `src/gateway/mandate-groups.ts`): concurrent
 * writes on one mandate go as the statements of one transaction, the budget stays exact, and one
 * failing write does not sink the others of its group. On both engines: the grouping is in the
 * process, so PGlite groups too.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { openDatabase, type Database } from '../../src/db/index.ts';
import { namedStatement } from '../../src/db/raw-sql.ts';
import { MANDATE_GROUP_MAX, MandateWriteGroups } from '../../src/gateway/mandate-groups.ts';
import { freshStore, storeTarget } from '../helpers/gateway.ts';

let db: Database;
const table = `t_groups_${randomUUID().replaceAll('-', '').slice(0, 8)}`;

before(async () => {
  db = await openDatabase(storeTarget(await freshStore(), 'gateway'));
  await db.knex.raw(`CREATE TABLE ${table} (id text PRIMARY KEY, reserved integer NOT NULL, total integer NOT NULL)`);
});

after(async () => {
  await db?.knex.raw(`DROP TABLE IF EXISTS ${table}`);
  await db?.close();
});

/** Reserves `:amount` on row `:id` only while it fits its total (the shape of the gateway's reserve); answers the transaction it ran in. */
const reserve = () =>
  namedStatement<'id' | 'amount'>(
    `t_groups_reserve_${table}`,
    `UPDATE ${table} SET reserved = reserved + :amount::integer WHERE id = :id::text AND total - reserved >= :amount::integer RETURNING txid_current()::text AS txn`,
  );

test('5N writes at once on one mandate with room for N: exactly N reserved, in fewer transactions than writes, none larger than the bound', async () => {
  const N = 40;
  await db.knex(table).insert({ id: 'm1', reserved: 0, total: N });
  const groups = new MandateWriteGroups(db.knex);
  const write = reserve();
  const answers = await Promise.all(Array.from({ length: 5 * N }, () => groups.write('m1', write.statement, write.values({ id: 'm1', amount: 1 }))));
  const reserved = answers.filter((rows) => rows.length === 1);
  assert.equal(reserved.length, N);
  assert.equal((await db.knex(table).where({ id: 'm1' }).first()).reserved, N);
  const perTransaction = new Map<string, number>();
  for (const [row] of reserved) perTransaction.set(row.txn, (perTransaction.get(row.txn) ?? 0) + 1);
  // The first write went alone; the others waited for it and went in groups of at most the bound.
  assert.ok(perTransaction.size < N, `${N} reservations in ${perTransaction.size} transactions`);
  assert.ok(Math.max(...perTransaction.values()) <= MANDATE_GROUP_MAX);
});

test('a lone write goes alone, at once; writes on another mandate are not grouped with it', async () => {
  await db.knex(table).insert([{ id: 'm2', reserved: 0, total: 10 }, { id: 'm3', reserved: 0, total: 10 }]);
  const groups = new MandateWriteGroups(db.knex);
  const write = reserve();
  const [a, b] = await Promise.all([groups.write('m2', write.statement, write.values({ id: 'm2', amount: 1 })), groups.write('m3', write.statement, write.values({ id: 'm3', amount: 1 }))]);
  assert.notEqual(a[0].txn, b[0].txn);
});

test('a write that fails in a group fails alone: the others of its group are written once', async () => {
  await db.knex(table).insert({ id: 'm4', reserved: 0, total: 100 });
  const groups = new MandateWriteGroups(db.knex);
  const write = reserve();
  const first = groups.write('m4', write.statement, write.values({ id: 'm4', amount: 1 }));
  // Queued behind the first: these three go as one group, whose second statement fails (not an integer).
  const rest = [1, 'x', 1].map((amount) => groups.write('m4', write.statement, write.values({ id: 'm4', amount })));
  await first;
  const outcomes = await Promise.allSettled(rest);
  assert.deepEqual(outcomes.map((outcome) => outcome.status), ['fulfilled', 'rejected', 'fulfilled']);
  assert.equal((await db.knex(table).where({ id: 'm4' }).first()).reserved, 3);
});

test('a group bound outside 1 to 64 is refused', () => {
  assert.throws(() => new MandateWriteGroups(db.knex, 0), /1 to 64 writes, not 0/);
  assert.throws(() => new MandateWriteGroups(db.knex, 65), /1 to 64 writes, not 65/);
});

test("values reach a group's statements as they were given: quotes, backslashes and JSON text included", async () => {
  const id = `m5 ' \\' \\\\ " $1 :id ${'{"a":"b\\\\"}'}`;
  await db.knex(table).insert({ id, reserved: 0, total: 10 });
  const groups = new MandateWriteGroups(db.knex);
  const write = reserve();
  const answers = await Promise.all([1, 2, 3].map(() => groups.write(id, write.statement, write.values({ id, amount: 2 }))));
  assert.deepEqual(answers.map((rows) => rows.length), [1, 1, 1]);
  assert.equal((await db.knex(table).where({ id }).first()).reserved, 6);
});
