/**
 * Fixed statements with named parameters (`src/db/raw-sql.ts`): the gateway's hot writes are one
 * statement composed of CTE texts that name one value in several places; the same text runs on a
 * pooled raw connection and inside a knex transaction, on both engines.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openDatabase, type Database } from '../../src/db/index.ts';
import { namedStatement, rawRunner, runnerOf, transactionRunner } from '../../src/db/raw-sql.ts';
import { freshStore, storeTarget } from '../helpers/gateway.ts';

let db: Database;

before(async () => {
  const store = await freshStore();
  db = await openDatabase(storeTarget(store, 'gateway'));
});

after(async () => {
  await db?.close();
});

test('each distinct :name becomes one $n in order of first use; a ::type cast is not a parameter', () => {
  const sum = namedStatement<'a' | 'b'>('t_sum', 'SELECT :a::integer + :b::integer + :a::integer AS n');
  assert.equal(sum.statement.text, 'SELECT $1::integer + $2::integer + $1::integer AS n');
  assert.deepEqual(sum.values({ b: 2, a: 1 }), [1, 2]);
});

test('a parameter without a value is refused by name; null is a value', () => {
  const one = namedStatement<'a' | 'b'>('t_missing', 'SELECT :a::integer, :b::text');
  assert.throws(() => one.values({ a: 1 } as Record<'a' | 'b', unknown>), /statement t_missing: parameter :b has no value/);
  assert.deepEqual(one.values({ a: 1, b: null }), [1, null]);
});

test('a value named twice reaches both places on a raw connection and inside a transaction', async () => {
  const sum = namedStatement<'a' | 'b'>('t_sum_run', 'SELECT :a::integer * 100 + :b::integer * 10 + :a::integer AS n');
  const values = sum.values({ a: 3, b: 5 });
  assert.deepEqual(await rawRunner(db.knex)(sum.statement, values), [{ n: 353 }]);
  assert.deepEqual(await db.knex.transaction((trx) => transactionRunner(trx)(sum.statement, values)), [{ n: 353 }]);
  assert.deepEqual(await db.knex.transaction((trx) => runnerOf(trx)(sum.statement, values)), [{ n: 353 }]);
});

test('runnerOf a transaction runs inside it: what it wrote is gone when the transaction rolls back', async () => {
  await db.knex.raw('CREATE TABLE IF NOT EXISTS raw_sql_probe (v integer)');
  const insert = namedStatement<'v'>('t_probe_insert', 'INSERT INTO raw_sql_probe (v) VALUES (:v::integer)');
  await assert.rejects(
    db.knex.transaction(async (trx) => {
      await runnerOf(trx)(insert.statement, insert.values({ v: 7 }));
      throw new Error('roll back');
    }),
    /roll back/,
  );
  await runnerOf(db.knex)(insert.statement, insert.values({ v: 8 }));
  assert.deepEqual(await db.knex('raw_sql_probe').pluck('v'), [8]);
});
