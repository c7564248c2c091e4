/**
 * Group commit in the reference binding's write path (issue 12 §1): concurrent writes share one
 * statement (one transaction), each answered with its own outcome; a refusal never affects
 * another request; a batch that fails as a whole is retried item by item; batches lock their
 * accounts in id order (no deadlock); the waiting queue is bounded; the switch is validated.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Knex } from 'knex';
import { RESOLVE_SQL } from '../src/clearing/accounts.ts';
import { rawQuery } from '../src/db/raw-sql.ts';
import { settleOp } from '../src/clearing/settlements.ts';
import { APPLY_SQL } from '../src/clearing/write-path.ts';
import { WritePath, writePathOptionsFromEnv, type LedgerOp } from '../src/clearing/write-path.ts';
import { HttpError } from '../src/http/errors.ts';
import { unique, useTestBinding } from './helpers/clearing.ts';

const binding = useTestBinding();

/** A write path on the test database; `window_ms` long enough that concurrent calls of one test share a batch. */
const writePath = (group_commit: boolean, queue_max = 100) => new WritePath(binding.db.knex, { group_commit, window_ms: 10, batch_max: 64, queue_max });

/** A credit operation as the credit door builds it (§6.7), with `delta_on_account` to make it unbalanced on purpose. */
function creditOp(account: string, amount: number, delta_on_account = amount): LedgerOp {
  return {
    op: 'post',
    lock: [account],
    txn_id: unique('gc-credit'),
    door: 'credit',
    account,
    amount,
    terms: { account, amount, simulated: false },
    postings: [
      { account: 'external:funding', delta: -amount, kind: 'funding' },
      { account, delta: delta_on_account, kind: 'credit' },
    ],
  };
}

test('issue 12 §1: concurrent settles share one statement; a refused one (unknown account) leaves the others applied', async () => {
  const payer = await binding.funded(1_000_000, 'payer');
  const owner = await binding.account('owner');
  const nobody = unique('nobody');
  const writes = writePath(true);
  const ops = [
    settleOp({ txnId: unique('gc'), caller: payer, owner, rate: 100, retail: 120 }),
    settleOp({ txnId: unique('gc'), caller: payer, owner: nobody, rate: 100, retail: 120 }),
    settleOp({ txnId: unique('gc'), caller: payer, owner, rate: 300, retail: 330 }),
  ];
  const answers = await Promise.allSettled(ops.map((op) => writes.apply(op)));
  assert.deepEqual(writes.stats, { batches: 1, operations: 3 });
  assert.deepEqual(answers[0], { status: 'fulfilled', value: { applied: true } });
  assert.equal(answers[1].status, 'rejected');
  const refusal = (answers[1] as PromiseRejectedResult).reason as HttpError;
  assert.equal(refusal.status, 404);
  assert.equal(refusal.code, 'no_such_object');
  assert.equal(refusal.message, `there is no account ${nobody}`);
  assert.deepEqual(answers[2], { status: 'fulfilled', value: { applied: true } });
  assert.equal((await binding.balanceOf(payer)).balance, 1_000_000 - 120 - 330);
  assert.equal((await binding.balanceOf(owner)).balance, 400);
});

test('issue 12 §1: a batch that fails at commit is retried one by one: the good writes apply, only the bad one fails', async () => {
  const a = await binding.account('a');
  const b = await binding.account('b');
  const writes = writePath(true);
  // The middle credit does not balance: the deferred zero-sum check refuses the whole statement at commit.
  const answers = await Promise.allSettled([writes.apply(creditOp(a, 700)), writes.apply(creditOp(b, 50, 49)), writes.apply(creditOp(b, 900))]);
  assert.deepEqual(writes.stats, { batches: 4, operations: 6 });
  assert.deepEqual(answers[0], { status: 'fulfilled', value: { applied: true } });
  assert.equal(answers[1].status, 'rejected');
  assert.match(String((answers[1] as PromiseRejectedResult).reason.message), /does not balance: its postings sum to -1/);
  assert.deepEqual(answers[2], { status: 'fulfilled', value: { applied: true } });
  assert.equal((await binding.balanceOf(a)).balance, 700);
  assert.equal((await binding.balanceOf(b)).balance, 900);
});

test('issue 12 §1: with group commit off every write is its own statement', async () => {
  const a = await binding.account('a');
  const writes = writePath(false);
  await Promise.all([writes.apply(creditOp(a, 1)), writes.apply(creditOp(a, 2)), writes.apply(creditOp(a, 3))]);
  assert.deepEqual(writes.stats, { batches: 3, operations: 3 });
  assert.equal((await binding.balanceOf(a)).balance, 6);
});

test('issue 12 §1: settles in opposite directions between the same accounts, in parallel, never deadlock; sums are exact', async () => {
  const accounts = [await binding.funded(10_000_000, 'x'), await binding.funded(10_000_000, 'y'), await binding.funded(10_000_000, 'z')];
  const settles = Array.from({ length: 120 }, (_, i) => ({
    txnId: unique('gc-x'),
    caller: accounts[i % 3],
    owner: accounts[(i + 1 + (i % 2)) % 3],
    rate: 10,
    retail: 11,
  }));
  const answers = await Promise.all(settles.map((body) => binding.http.post('/internal/ledger/charge').send(body)));
  assert.deepEqual(
    answers.map((r) => r.status),
    settles.map(() => 200),
  );
  for (const account of accounts) {
    const paid = settles.filter((s) => s.caller === account).length * 11;
    const earned = settles.filter((s) => s.owner === account).length * 10;
    assert.equal((await binding.balanceOf(account)).balance, 10_000_000 - paid + earned);
  }
});

test('issue 12 §1: beyond queue_max waiting writes, a write is refused 503 overloaded naming the bound, and changes nothing', async () => {
  const a = await binding.account('a');
  const writes = writePath(true, 2);
  const answers = await Promise.allSettled([writes.apply(creditOp(a, 1)), writes.apply(creditOp(a, 2)), writes.apply(creditOp(a, 4))]);
  assert.equal(answers[2].status, 'rejected');
  const refusal = (answers[2] as PromiseRejectedResult).reason as HttpError;
  assert.equal(refusal.status, 503);
  assert.equal(refusal.code, 'overloaded');
  assert.equal(refusal.message, '2 writes are already waiting for the ledger (the bound is 2); retry shortly');
  assert.equal((await binding.balanceOf(a)).balance, 3);
});

test('issue 12 §1: the write-path settings are read from the environment and refused when malformed', () => {
  assert.deepEqual(writePathOptionsFromEnv({}), { group_commit: true, window_ms: 1, batch_max: 32, queue_max: 4096 });
  assert.deepEqual(writePathOptionsFromEnv({ HOLON_CLEARING_GROUP_COMMIT: 'off', HOLON_CLEARING_GROUP_WINDOW_MS: '2', HOLON_CLEARING_GROUP_MAX: '8' }), {
    group_commit: false,
    window_ms: 2,
    batch_max: 8,
    queue_max: 4096,
  });
  assert.throws(() => writePathOptionsFromEnv({ HOLON_CLEARING_GROUP_COMMIT: 'yes' }), { message: 'HOLON_CLEARING_GROUP_COMMIT=yes is neither on nor off' });
  assert.throws(() => writePathOptionsFromEnv({ HOLON_CLEARING_GROUP_MAX: '65' }), { message: 'HOLON_CLEARING_GROUP_MAX=65 is not an integer from 1 to 64' });
  assert.throws(() => writePathOptionsFromEnv({ HOLON_CLEARING_GROUP_WINDOW_MS: '1.5' }), { message: 'HOLON_CLEARING_GROUP_WINDOW_MS=1.5 is not an integer from 0 to 10' });
});

test('issue 12 §1: every function of the write path is PL/pgSQL (a LANGUAGE sql helper called from PL/pgSQL is planned again in every transaction)', async () => {
  const { rows } = await binding.db.knex.raw(
    `SELECT p.proname, l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
      WHERE p.proname LIKE 'clearing\\_%' AND l.lanname <> 'plpgsql' ORDER BY p.proname`,
  );
  assert.deepEqual(rows, []);
});

test('issue 12 §1: one INSERT of several postings moves each account, holder or machinery, by the sum of its postings', async () => {
  const account = await binding.account('net');
  const txnId = unique('net');
  const funding = async () => (await binding.db.knex('clearing_machinery_balances').where({ account: 'external:funding' }).sum({ total: 'balance' }))[0].total;
  const before = Number(await funding());
  await binding.db.knex.transaction(async (trx) => {
    await trx('clearing_transactions').insert({ txn_id: txnId, door: 'credit', account, amount: 10, terms: { account, amount: 10 } });
    await trx('clearing_postings').insert([
      { txn_id: txnId, account: 'external:funding', delta: -4, kind: 'funding' },
      { txn_id: txnId, account, delta: 7, kind: 'credit' },
      { txn_id: txnId, account: 'external:funding', delta: -6, kind: 'funding' },
      { txn_id: txnId, account, delta: 3, kind: 'credit' },
    ]);
  });
  assert.equal((await binding.balanceOf(account)).balance, 10);
  assert.equal(Number(await funding()), before - 10);
});

test('issue 12 §1: on Postgres the hot statements are prepared once per connection under their names, not parsed and planned per request', { skip: !process.env.DATABASE_URL && 'PGlite has no named statements' }, async () => {
  const connection = await binding.db.knex.client.acquireConnection();
  try {
    // The pool hands out this one connection, so both statements land on it.
    const pool = { client: { acquireConnection: async () => connection, releaseConnection: async () => undefined } } as unknown as Knex;
    const key = unique('unlinked');
    assert.deepEqual(await rawQuery(pool, RESOLVE_SQL, [key]), []);
    assert.deepEqual(await rawQuery(pool, RESOLVE_SQL, [key]), []);
    assert.deepEqual((await rawQuery(pool, APPLY_SQL, ['[]']))[0].outcomes, []);
    const { rows } = await connection.query('SELECT name, statement FROM pg_prepared_statements WHERE name IN ($1, $2) ORDER BY name', [APPLY_SQL.name, RESOLVE_SQL.name]);
    assert.deepEqual(rows, [
      { name: APPLY_SQL.name, statement: APPLY_SQL.text },
      { name: RESOLVE_SQL.name, statement: RESOLVE_SQL.text },
    ]);
  } finally {
    await binding.db.knex.client.releaseConnection(connection);
  }
});
