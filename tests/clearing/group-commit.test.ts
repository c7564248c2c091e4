/**
 * Group commit in the reference binding's write path (issue 12 §1): concurrent writes share one
 * statement (one transaction), each answered with its own outcome; a refusal never affects
 * another request; a batch that fails as a whole is retried item by item; batches lock their
 * accounts in id order (no deadlock); the waiting queue is bounded; the switch is validated.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Knex } from 'knex';
import { RESOLVE_SQL } from '../../src/clearing/accounts.ts';
import { rawQuery } from '../../src/db/raw-sql.ts';
import { settleOp } from '../../src/clearing/settlements.ts';
import { keysOf } from '../../src/clearing/op-keys.ts';
import type { LedgerOp, OpOutcome } from '../../src/clearing/ledger-op.ts';
import { APPLY_SQL, applyBatch, WritePath, writePathOptionsFromEnv, type BatchRunner } from '../../src/clearing/write-path.ts';
import { HttpError } from '../../src/http/errors.ts';
import { MAX_BALANCE_MICROS } from '../../src/contracts/money.ts';
import { inOneHour, unique, useTestBinding } from '../helpers/clearing.ts';

const binding = useTestBinding();

/** A write path on the test database; `window_ms` long enough that concurrent calls of one test share a batch. `run` may record the batches sent. */
const writePath = (group_commit: boolean, queue_max = 100, run: BatchRunner = applyBatch, per_account_max = 1) =>
  new WritePath(binding.db.knex, { group_commit, window_ms: 10, batch_max: 64, per_account_max, queue_max }, run);

/** A write path that records the transaction or hold id of every operation of every batch it sends, batch by batch. */
function recordingWritePath(per_account_max = 1): { writes: WritePath; sent: string[][] } {
  const sent: string[][] = [];
  const record: BatchRunner = (db, ops) => {
    sent.push(ops.map((op) => String(op.txn_id ?? op.hold_id)));
    return applyBatch(db, ops);
  };
  const writes = writePath(true, 100, record, per_account_max);
  return { writes, sent };
}

/** An open-hold operation as the open-hold door builds it (§6.11), open for an hour. */
function openHoldOp(account: string, amount: number, hold_id = unique('gc-hold')): LedgerOp {
  const expires_at = inOneHour();
  return { op: 'open-hold', hold_id, account, amount, expires_raw: expires_at, expires_at };
}

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
  const payers = [await binding.funded(1_000_000, 'payer'), await binding.funded(1_000_000, 'payer'), await binding.funded(1_000_000, 'payer')];
  const owners = [await binding.account('owner'), unique('nobody'), await binding.account('owner')];
  const writes = writePath(true);
  const ops = [
    settleOp({ txnId: unique('gc'), caller: payers[0], owner: owners[0], rate: 100, retail: 120 }),
    settleOp({ txnId: unique('gc'), caller: payers[1], owner: owners[1], rate: 100, retail: 120 }),
    settleOp({ txnId: unique('gc'), caller: payers[2], owner: owners[2], rate: 300, retail: 330 }),
  ];
  const answers = await Promise.allSettled(ops.map((op) => writes.apply(op)));
  assert.deepEqual(writes.stats, { batches: 1, operations: 3, held: 0 });
  assert.deepEqual(answers[0], { status: 'fulfilled', value: { applied: true } });
  assert.equal(answers[1].status, 'rejected');
  const refusal = (answers[1] as PromiseRejectedResult).reason as HttpError;
  assert.equal(refusal.status, 404);
  assert.equal(refusal.code, 'no_such_object');
  assert.equal(refusal.message, `there is no account ${owners[1]}`);
  assert.deepEqual(answers[2], { status: 'fulfilled', value: { applied: true } });
  assert.deepEqual(await Promise.all(payers.map(async (p) => (await binding.balanceOf(p)).balance)), [1_000_000 - 120, 1_000_000, 1_000_000 - 330]);
  assert.equal((await binding.balanceOf(owners[0])).balance, 100);
  assert.equal((await binding.balanceOf(owners[2])).balance, 300);
});

test('issue 12 §1: a batch that fails at commit is retried one by one: the good writes apply, only the bad one fails', async () => {
  const a = await binding.account('a');
  const b = await binding.account('b');
  const c = await binding.account('c');
  const writes = writePath(true);
  // The middle credit does not balance: the deferred zero-sum check refuses the whole statement at commit.
  const answers = await Promise.allSettled([writes.apply(creditOp(a, 700)), writes.apply(creditOp(b, 50, 49)), writes.apply(creditOp(c, 900))]);
  assert.deepEqual(writes.stats, { batches: 4, operations: 6, held: 0 });
  assert.deepEqual(answers[0], { status: 'fulfilled', value: { applied: true } });
  assert.equal(answers[1].status, 'rejected');
  assert.match(String((answers[1] as PromiseRejectedResult).reason.message), /does not balance: its postings sum to -1/);
  assert.deepEqual(answers[2], { status: 'fulfilled', value: { applied: true } });
  assert.equal((await binding.balanceOf(a)).balance, 700);
  assert.equal((await binding.balanceOf(b)).balance, 0);
  assert.equal((await binding.balanceOf(c)).balance, 900);
});

test('issue 12 §2: a failed batch is retried write by write: writes of one account one after another, in order; writes of other accounts at once', async () => {
  const started: string[] = [];
  const finish = new Map<string, () => void>();
  let batches = 0;
  // The batch fails as a whole (a dropped connection); each retry waits until the test lets it answer.
  const run: BatchRunner = async (_db, ops) => {
    if (batches++ === 0) throw new Error('connection lost');
    const id = String(ops[0].txn_id);
    started.push(id);
    await new Promise<void>((resolve) => finish.set(id, resolve));
    return [{ applied: true }];
  };
  const until = async (check: () => boolean) => {
    for (let turn = 0; !check(); turn++) {
      assert.ok(turn < 1000, `still waiting; started: ${started.join(', ')}`);
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  const writes = writePath(true, 100, run, 16);
  const [a1, b1, a2] = [creditOp('gc-retry-a', 1), creditOp('gc-retry-b', 1), creditOp('gc-retry-a', 2)];
  const answers = Promise.all([a1, b1, a2].map((op) => writes.apply(op)));
  await until(() => started.length === 2);
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(started, [a1.txn_id, b1.txn_id], 'the second write of account a waits for the first');
  finish.get(String(a1.txn_id))!();
  await until(() => started.length === 3);
  assert.equal(started[2], a2.txn_id);
  finish.get(String(b1.txn_id))!();
  finish.get(String(a2.txn_id))!();
  assert.deepEqual(await answers, [{ applied: true }, { applied: true }, { applied: true }]);
  assert.deepEqual(writes.stats, { batches: 4, operations: 6, held: 0 });
});

test('issue 12 §1: with group commit off every write is its own statement', async () => {
  const a = await binding.account('a');
  const writes = writePath(false);
  await Promise.all([writes.apply(creditOp(a, 1)), writes.apply(creditOp(a, 2)), writes.apply(creditOp(a, 3))]);
  assert.deepEqual(writes.stats, { batches: 3, operations: 3, held: 0 });
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
  assert.deepEqual(writePathOptionsFromEnv({}), { group_commit: true, window_ms: 1, batch_max: 32, per_account_max: 16, queue_max: 4096 });
  assert.deepEqual(
    writePathOptionsFromEnv({ HOLON_CLEARING_GROUP_COMMIT: 'off', HOLON_CLEARING_GROUP_WINDOW_MS: '2', HOLON_CLEARING_GROUP_MAX: '8', HOLON_CLEARING_GROUP_PER_ACCOUNT: '4' }),
    { group_commit: false, window_ms: 2, batch_max: 8, per_account_max: 4, queue_max: 4096 },
  );
  assert.throws(() => writePathOptionsFromEnv({ HOLON_CLEARING_GROUP_PER_ACCOUNT: '0' }), { message: 'HOLON_CLEARING_GROUP_PER_ACCOUNT must be a whole number from 1 to 64 (operations per account per batch; default 16); got "0"' });
  assert.throws(() => writePathOptionsFromEnv({ HOLON_CLEARING_GROUP_COMMIT: 'yes' }), { message: 'HOLON_CLEARING_GROUP_COMMIT=yes is neither on nor off' });
  assert.throws(() => writePathOptionsFromEnv({ HOLON_CLEARING_GROUP_MAX: '65' }), { message: 'HOLON_CLEARING_GROUP_MAX must be a whole number from 1 to 64 (operations per batch; default 32); got "65"' });
  assert.throws(() => writePathOptionsFromEnv({ HOLON_CLEARING_GROUP_WINDOW_MS: '1.5' }), { message: 'HOLON_CLEARING_GROUP_WINDOW_MS must be a whole number from 0 to 10 (milliseconds a batch waits for more requests; default 1); got "1.5"' });
});

test('issue 12 §1: every function of the write path is PL/pgSQL (a LANGUAGE sql helper called from PL/pgSQL is planned again in every transaction)', async () => {
  const { rows } = await binding.db.knex.raw(
    `SELECT p.proname, l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
      WHERE p.proname LIKE 'clearing\\_%' AND l.lanname <> 'plpgsql' ORDER BY p.proname`,
  );
  assert.deepEqual(rows, []);
});

test('issue 12 §1: an account the journal names cannot be deleted nor renamed (what the postings\' foreign key refused); one it does not name can', async () => {
  const named = await binding.funded(500, 'named');
  const unnamed = await binding.account('unnamed');
  await assert.rejects(binding.db.knex('clearing_accounts').where({ id: named }).delete(), (error: any) => error.code === '23503' && error.message.includes(`account ${named} is named by the journal`));
  await assert.rejects(binding.db.knex('clearing_accounts').where({ id: named }).update({ id: `${named}-renamed` }), (error: any) => error.code === '23503');
  assert.equal((await binding.balanceOf(named)).balance, 500);
  await binding.db.knex('clearing_accounts').where({ id: unnamed }).delete();
  assert.deepEqual(await binding.db.knex('clearing_accounts').whereIn('id', [named, unnamed]).pluck('id'), [named]);
});

test('issue 12 §1: a batch whose settles skip their own lock still holds every account it locked up front, through a refused settle, until it commits', { skip: !process.env.DATABASE_URL && 'PGlite has one connection: no second one to try the lock from' }, async () => {
  const payer = await binding.funded(1_000_000, 'payer');
  const owner = await binding.account('owner');
  // Credited only by a write refused after its trigger moved the balance: only the batch's own lock is left on it.
  const refused = await binding.account('refused');
  const batch = [
    settleOp({ txnId: unique('held'), caller: payer, owner, rate: 100, retail: 120 }),
    settleOp({ txnId: unique('held'), caller: payer, owner: unique('nobody'), rate: 100, retail: 120 }),
    creditOp(refused, MAX_BALANCE_MICROS + 1),
    settleOp({ txnId: unique('held'), caller: payer, owner, rate: 100, retail: 120 }),
  ];
  const trx = await binding.db.knex.transaction();
  try {
    const { rows } = await trx.raw('SELECT clearing_apply(?::jsonb) AS outcomes', [JSON.stringify(batch)]);
    assert.deepEqual(rows[0].outcomes.map((o: OpOutcome) => o.applied ?? o.error.sqlstate), [true, 'H1404', 'H1460', true]);
    for (const account of [payer, owner, refused]) {
      await assert.rejects(binding.db.knex.raw('SELECT 1 FROM clearing_accounts WHERE id = ? FOR UPDATE NOWAIT', [account]), (error: any) => error.code === '55P03');
    }
    await trx.commit();
  } finally {
    if (!trx.isCompleted()) await trx.rollback();
  }
  assert.equal((await binding.balanceOf(payer)).balance, 1_000_000 - 240);
  assert.equal((await binding.balanceOf(owner)).balance, 200);
  assert.equal((await binding.balanceOf(refused)).balance, 0);
});

test('issue 12 §1: the statements of a batch and the zero-sum check at commit are planned without sequential scans, so a small, just-vacuumed accounts table keeps its index lookups', async () => {
  const { rows } = await binding.db.knex.raw(
    `SELECT proname, proconfig FROM pg_proc WHERE proname IN ('clearing_apply', 'clearing_check_balanced') ORDER BY proname`,
  );
  assert.deepEqual(rows.map((r: { proname: string; proconfig: string[] | null }) => [r.proname, r.proconfig]), [
    ['clearing_apply', ['enable_seqscan=off']],
    ['clearing_check_balanced', ['enable_seqscan=off']],
  ]);
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

test('issue 12 §1: a posting that names no account, holder or machinery, is refused 404 by the posting trigger and nothing of its entry is written', async () => {
  const account = await binding.account('real');
  for (const missing of [unique('nobody'), 'external:nowhere']) {
    const txnId = unique('ghost');
    const insert = binding.db.knex.transaction(async (trx) => {
      await trx('clearing_transactions').insert({ txn_id: txnId, door: 'credit', account, amount: 5, terms: { account, amount: 5 } });
      await trx('clearing_postings').insert([
        { txn_id: txnId, account: missing, delta: -5, kind: 'funding' },
        { txn_id: txnId, account, delta: 5, kind: 'credit' },
      ]);
    });
    await assert.rejects(insert, (error: any) => error.code === 'H1404' && error.message.includes('no such account') && JSON.parse(error.detail).account === missing);
    assert.equal((await binding.db.knex('clearing_transactions').where({ txn_id: txnId })).length, 0);
  }
  assert.equal((await binding.balanceOf(account)).balance, 0);
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

test('issue 12 §2: concurrent settles from one shared payer go in separate batches, in arrival order; settles between other accounts share the first', async () => {
  const shared = await binding.funded(1_000_000, 'shared');
  const [a, b, c, d] = [await binding.funded(1_000_000, 'a'), await binding.account('b'), await binding.funded(1_000_000, 'c'), await binding.account('d')];
  const owners = [await binding.account('o1'), await binding.account('o2'), await binding.account('o3')];
  const settles = [
    { txnId: unique('gc-p1'), caller: shared, owner: owners[0], rate: 100, retail: 120 },
    { txnId: unique('gc-ab'), caller: a, owner: b, rate: 10, retail: 11 },
    { txnId: unique('gc-p2'), caller: shared, owner: owners[1], rate: 200, retail: 240 },
    { txnId: unique('gc-cd'), caller: c, owner: d, rate: 20, retail: 22 },
    { txnId: unique('gc-p3'), caller: shared, owner: owners[2], rate: 300, retail: 360 },
  ];
  const { writes, sent } = recordingWritePath();
  const answers = await Promise.all(settles.map((body) => writes.apply(settleOp(body))));
  assert.deepEqual(answers, settles.map(() => ({ applied: true })));
  const [p1, ab, p2, cd, p3] = settles.map((s) => s.txnId);
  assert.deepEqual(sent, [[p1, ab, cd], [p2], [p3]]);
  assert.deepEqual(writes.stats, { batches: 3, operations: 5, held: 2 });
  assert.equal((await binding.balanceOf(shared)).balance, 1_000_000 - 120 - 240 - 360);
  assert.deepEqual(await Promise.all(owners.map(async (o) => (await binding.balanceOf(o)).balance)), [100, 200, 300]);
  assert.equal((await binding.balanceOf(b)).balance, 10);
  assert.equal((await binding.balanceOf(d)).balance, 20);
});

test('issue 12 §2: with per_account_max 2, a batch takes two operations of the shared payer, in arrival order, and the third waits for the next', async () => {
  const shared = await binding.funded(1_000_000, 'shared');
  const owner = await binding.account('owner');
  const settles = [1, 2, 3].map((n) => ({ txnId: unique(`gc-p${n}`), caller: shared, owner, rate: 100 * n, retail: 120 * n }));
  const { writes, sent } = recordingWritePath(2);
  assert.deepEqual(await Promise.all(settles.map((body) => writes.apply(settleOp(body)))), settles.map(() => ({ applied: true })));
  const [p1, p2, p3] = settles.map((s) => s.txnId);
  assert.deepEqual(sent, [[p1, p2], [p3]]);
  assert.equal((await binding.balanceOf(shared)).balance, 1_000_000 - 720);
  assert.equal((await binding.balanceOf(owner)).balance, 600);
});

test('issue 12 §2: concurrent holds on one account keep arrival order every time: 700 then 700 then 300 of 1000, the second refused insufficient_funds, the others applied', async () => {
  for (let round = 0; round < 8; round++) {
    const account = await binding.funded(1_000, 'holds');
    const { writes, sent } = recordingWritePath();
    const ops = [openHoldOp(account, 700), openHoldOp(account, 700), openHoldOp(account, 300)];
    const answers = await Promise.allSettled(ops.map((op) => writes.apply(op)));
    assert.deepEqual(sent, ops.map((op) => [op.hold_id]));
    assert.equal(answers[0].status, 'fulfilled');
    assert.deepEqual([(answers[0] as PromiseFulfilledResult<any>).value.applied, (answers[0] as PromiseFulfilledResult<any>).value.available], [true, 300]);
    const refusal = (answers[1] as PromiseRejectedResult).reason as HttpError;
    assert.equal(refusal.status, 422);
    assert.equal(refusal.code, 'insufficient_funds');
    assert.equal(refusal.message, `a hold of 700 does not fit: 300 available on ${account} (balance 1000, reserved 700)`);
    assert.equal(answers[2].status, 'fulfilled');
    assert.deepEqual([(answers[2] as PromiseFulfilledResult<any>).value.applied, (answers[2] as PromiseFulfilledResult<any>).value.available], [true, 0]);
    assert.deepEqual(await binding.balanceOf(account), { account, balance: 1_000, available: 0, reserved: 1_000, pending: 0 });
  }
});

test('issue 12 §2: each write-path operation is kept apart by the accounts, hold and transaction ids it names; machinery accounts and an unnamed hold account are not keys', () => {
  const settle = settleOp({ txnId: 't1', caller: 'payer', owner: 'owner', rate: 1, retail: 2 });
  assert.deepEqual(keysOf(settle), ['account:payer', 'account:owner', 'txn:t1']);
  const credit = creditOp('acct', 5);
  assert.deepEqual(keysOf(credit), ['account:acct', `txn:${credit.txn_id}`]);
  assert.deepEqual(keysOf({ op: 'open-hold', hold_id: 'h1', account: 'payer', amount: 5 }), ['account:payer', 'hold:h1']);
  assert.deepEqual(keysOf({ op: 'resize-hold', hold_id: 'h1', amount: 9 }), ['hold:h1']);
  assert.deepEqual(keysOf({ op: 'release-hold', hold_id: 'h1' }), ['hold:h1']);
  assert.deepEqual(keysOf({ op: 'draw', txn_id: 't2', hold_id: 'h1', caller: 'payer', owner: 'owner', lines: [] }), ['account:payer', 'account:owner', 'hold:h1', 'txn:t2']);
  assert.deepEqual(keysOf({ op: 'reverse', txn_id: 't3', reverses: 't1' }), ['txn:t3', 'txn:t1']);
  // A settle whose caller is its owner: one key, not two.
  assert.deepEqual(keysOf(settleOp({ txnId: 't4', caller: 'same', owner: 'same', rate: 1, retail: 1 })), ['account:same', 'txn:t4']);
});

test('issue 12 §2: a write waits for the batch at the database that holds its account, even when that batch is stalled behind a lock, so the first hold wins', { skip: !process.env.DATABASE_URL && 'PGlite serializes transactions: a row lock cannot stall one batch while another runs' }, async () => {
  // `aaa-…` sorts before `payer-…`: the first batch locks it first, and stalls there while it is held.
  const blocker = await binding.account('aaa');
  const payer = await binding.funded(1_000, 'payer');
  const writes = writePath(true);
  const lock = await binding.db.knex.transaction();
  try {
    await lock.raw('SELECT 1 FROM clearing_accounts WHERE id = ? FOR UPDATE', [blocker]);
    const first = writes.apply(openHoldOp(payer, 700));
    const credit = writes.apply(creditOp(blocker, 5));
    await waitForLockWaiter(1);
    const second = writes.apply(openHoldOp(payer, 700));
    assert.equal(writes.stats.held, 1);
    await lock.commit();
    const answers = await Promise.allSettled([first, credit, second]);
    assert.deepEqual(answers.map((a) => a.status), ['fulfilled', 'fulfilled', 'rejected']);
    assert.equal(((answers[2] as PromiseRejectedResult).reason as HttpError).code, 'insufficient_funds');
    assert.deepEqual(writes.stats, { batches: 2, operations: 3, held: 1 });
  } finally {
    if (!lock.isCompleted()) await lock.rollback();
  }
});

/** Waits until `count` sessions of this database wait for a row lock (at most 500 looks, 10 ms apart). Throws when they never do. */
async function waitForLockWaiter(count: number): Promise<void> {
  for (let look = 0; look < 500; look++) {
    const { rows } = await binding.db.knex.raw(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    if (rows[0].n >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`no ${count} session(s) waiting for a lock after 500 looks`);
}
