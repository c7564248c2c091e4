/**
 * The reference binding's value-moving doors and their reads (clearing-contract §6.3, §6.4,
 * §6.7 to §6.10, §8, §9): credit, settle, reverse, adjust, read-settlement and read-summary,
 * one namespace of transaction ids, and the ledger's own refusals (conservation, append-only,
 * balanced entries) checked directly in the database.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { refused, unique, useTestBinding } from '../helpers/clearing.ts';

const binding = useTestBinding();

async function settlement(txnId: string) {
  const res = await binding.http.get(`/internal/ledger/settlement/${encodeURIComponent(txnId)}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

const credit = (body: Record<string, unknown>) => binding.http.post('/internal/ledger/purchase').send(body);
const settle = (body: Record<string, unknown>) => binding.http.post('/internal/ledger/charge').send(body);
const reverse = (body: Record<string, unknown>) => binding.http.post('/internal/ledger/reverse').send(body);
const adjust = (body: Record<string, unknown>) => binding.http.post('/internal/ledger/adjust').send(body);

const APPLIED = { ok: true, applied: true, state: 'settled' };
const REPLAYED = { ok: true, applied: false, state: 'settled' };

test('§6.7 credit: applied once; a replay answers applied false and changes no balance', async () => {
  const account = await binding.account();
  const txnId = unique('pay');
  assert.deepEqual((await credit({ txnId, account, amount: 2_500_000, ref: 'card 4242' })).body, APPLIED);
  assert.deepEqual(await binding.balanceOf(account), { account, balance: 2_500_000, available: 2_500_000, reserved: 0, pending: 0 });
  for (let i = 0; i < 3; i++) {
    const replay = await credit({ txnId, account, amount: 2_500_000, ref: 'card 4242' });
    assert.equal(replay.status, 200);
    assert.deepEqual(replay.body, REPLAYED);
  }
  assert.equal((await binding.balanceOf(account)).balance, 2_500_000);
  const read = await settlement(txnId);
  assert.equal(read.state, 'settled');
  assert.equal(read.account, account);
  assert.equal(read.amount, 2_500_000);
  assert.deepEqual(read.legs, [
    { account: 'external:funding', delta: -2_500_000, kind: 'funding' },
    { account, delta: 2_500_000, kind: 'credit' },
  ]);
  assert.equal(read.reversed_by, null);
});

test('§6.7 credit: the same payment id with another amount or account is refused, naming the first terms', async () => {
  const account = await binding.account();
  const other = await binding.account();
  const txnId = unique('pay');
  await credit({ txnId, account, amount: 1_000 }).expect(200);
  const amount = await credit({ txnId, account, amount: 2_000 });
  assert.deepEqual(amount.body.existing, { account, amount: 1_000, simulated: false });
  assert.equal(refused(amount, 422, 'terms_conflict'), `transaction id ${txnId} was already used for a credit with other terms: ${JSON.stringify(amount.body.existing)}`);
  refused(await credit({ txnId, account: other, amount: 1_000 }), 422, 'terms_conflict');
  assert.equal((await binding.balanceOf(account)).balance, 1_000);
  assert.equal((await binding.balanceOf(other)).balance, 0);
});

test('§6.7 simulated value is recorded permanently against its entry, and a replay cannot launder it', async () => {
  const account = await binding.account();
  const simulated = unique('sim');
  const real = unique('real');
  assert.deepEqual((await credit({ txnId: simulated, account, amount: 700, simulated: true })).body, APPLIED);
  assert.deepEqual((await credit({ txnId: real, account, amount: 300 })).body, APPLIED);
  // A replay of the simulated credit that says it was real is a different set of terms.
  refused(await credit({ txnId: simulated, account, amount: 700, simulated: false }), 422, 'terms_conflict');
  refused(await credit({ txnId: simulated, account, amount: 700 }), 422, 'terms_conflict');
  assert.deepEqual((await credit({ txnId: simulated, account, amount: 700, simulated: true })).body, REPLAYED);
  const rows = await binding.db.knex('clearing_transactions').whereIn('txn_id', [simulated, real]).orderBy('amount').select('txn_id', 'simulated');
  assert.deepEqual(rows, [
    { txn_id: real, simulated: false },
    { txn_id: simulated, simulated: true },
  ]);
  // Permanently: the database refuses to flip it.
  await assert.rejects(binding.db.knex('clearing_transactions').where({ txn_id: simulated }).update({ simulated: false }), /append-only: UPDATE on clearing_transactions is refused/);
  assert.equal((await binding.balanceOf(account)).balance, 1_000);
});

test('§6.7 credit refuses an unknown account (404) and the binding\'s machinery (422)', async () => {
  const ghost = unique('ghost');
  const txnId = unique('pay');
  assert.equal(refused(await credit({ txnId, account: ghost, amount: 5 }), 404, 'no_such_object'), `there is no account ${ghost}`);
  for (const machinery of ['external:funding', 'platform:fees', 'external:adjustments']) {
    assert.equal(
      refused(await credit({ txnId, account: machinery, amount: 5 }), 422, 'invalid_request'),
      `${machinery} is this binding's own machinery and cannot be the account credited`,
    );
  }
  assert.equal((await settlement(txnId)).state, 'unknown');
});

test('§6.8 settle: caller pays retail, owner earns rate, the margin lands in platform:fees; legs sum to zero', async () => {
  const caller = await binding.funded(1_000_000, 'caller');
  const owner = await binding.account('owner');
  const txnId = unique('work');
  const res = await settle({ txnId, caller, owner, rate: 250_000, retail: 300_000, ref: 'receipt 1', memo: 'summarize', spendAgentKey: 'agent-7' });
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, APPLIED);
  assert.deepEqual(await binding.balanceOf(caller), { account: caller, balance: 700_000, available: 700_000, reserved: 0, pending: 0 });
  assert.deepEqual(await binding.balanceOf(owner), { account: owner, balance: 250_000, available: 250_000, reserved: 0, pending: 0 });
  const read = await settlement(txnId);
  assert.deepEqual(read.legs, [
    { account: caller, delta: -300_000, kind: 'charge' },
    { account: owner, delta: 250_000, kind: 'earn' },
    { account: 'platform:fees', delta: 50_000, kind: 'fee' },
  ]);
  assert.equal(read.legs.reduce((sum: number, leg: { delta: number }) => sum + leg.delta, 0), 0);
  assert.equal(read.account, caller);
  assert.equal(read.amount, 300_000);
  // The fee account holds exactly what its fee postings say.
  const fees = await binding.db.knex('clearing_postings').where({ account: 'platform:fees' }).first(binding.db.knex.raw('coalesce(sum(delta), 0)::bigint AS total'));
  assert.equal((await binding.balanceOf('platform:fees')).balance, Number(fees.total));
});

test('§6.8 settle: retail equal to rate is accepted with no fee leg; retail below rate is refused and posts nothing', async () => {
  const caller = await binding.funded(1_000, 'caller');
  const owner = await binding.account('owner');
  const even = unique('even');
  assert.deepEqual((await settle({ txnId: even, caller, owner, rate: 400, retail: 400 })).body, APPLIED);
  assert.deepEqual((await settlement(even)).legs, [
    { account: caller, delta: -400, kind: 'charge' },
    { account: owner, delta: 400, kind: 'earn' },
  ]);
  const under = unique('under');
  assert.equal(
    refused(await settle({ txnId: under, caller, owner, rate: 500, retail: 499 }), 422, 'invalid_request'),
    'retail 499 is less than rate 500; the caller cannot pay less than the owner earns',
  );
  assert.equal((await settlement(under)).state, 'unknown');
  assert.equal((await binding.balanceOf(caller)).balance, 600);
  assert.equal((await binding.balanceOf(owner)).balance, 400);
});

test('§6.8 invariant 10: settle is never refused for insufficient funds; the balance goes negative', async () => {
  const caller = await binding.funded(100, 'caller');
  const owner = await binding.account('owner');
  const txnId = unique('late');
  assert.deepEqual((await settle({ txnId, caller, owner, rate: 900, retail: 1_000 })).body, APPLIED);
  assert.deepEqual(await binding.balanceOf(caller), { account: caller, balance: -900, available: -900, reserved: 0, pending: 0 });
  assert.equal((await binding.balanceOf(owner)).balance, 900);
  // Again, from an account with nothing at all.
  const broke = await binding.account('broke');
  assert.deepEqual((await settle({ txnId: unique('late'), caller: broke, owner, rate: 1, retail: 1 })).body, APPLIED);
  assert.equal((await binding.balanceOf(broke)).balance, -1);
});

test('§6.8 §9 settle replay: applied false, no balance change; other value terms are refused naming the first', async () => {
  const caller = await binding.funded(10_000, 'caller');
  const owner = await binding.account('owner');
  const txnId = unique('work');
  await settle({ txnId, caller, owner, rate: 900, retail: 1_000 }).expect(200);
  // ref and memo are not value terms: a retry that words them differently is still the same work.
  assert.deepEqual((await settle({ txnId, caller, owner, rate: 900, retail: 1_000, memo: 'retry' })).body, REPLAYED);
  assert.deepEqual((await settle({ txnId, caller, owner, rate: 900, retail: 1_000 })).body, REPLAYED);
  const conflict = await settle({ txnId, caller, owner, rate: 900, retail: 1_100 });
  assert.deepEqual(conflict.body.existing, { caller, owner, rate: 900, retail: 1_000 });
  assert.equal(refused(conflict, 422, 'terms_conflict'), `transaction id ${txnId} was already used for a settle with other terms: ${JSON.stringify(conflict.body.existing)}`);
  const other = await binding.account('other');
  refused(await settle({ txnId, caller, owner: other, rate: 900, retail: 1_000 }), 422, 'terms_conflict');
  assert.equal((await binding.balanceOf(caller)).balance, 9_000);
  assert.equal((await binding.balanceOf(owner)).balance, 900);
  assert.equal((await binding.balanceOf(other)).balance, 0);
});

test('§6.8 settle refuses unknown accounts (404 no_such_object) and machinery as caller or owner (422)', async () => {
  const caller = await binding.funded(1_000, 'caller');
  const ghost = unique('ghost');
  const txnId = unique('work');
  assert.equal(refused(await settle({ txnId, caller, owner: ghost, rate: 1, retail: 1 }), 404, 'no_such_object'), `there is no account ${ghost}`);
  assert.equal(refused(await settle({ txnId, caller: ghost, owner: caller, rate: 1, retail: 1 }), 404, 'no_such_object'), `there is no account ${ghost}`);
  assert.equal(
    refused(await settle({ txnId, caller: 'external:funding', owner: caller, rate: 1, retail: 1 }), 422, 'invalid_request'),
    "external:funding is this binding's own machinery and cannot be the caller",
  );
  assert.equal(
    refused(await settle({ txnId, caller, owner: 'platform:fees', rate: 1, retail: 1 }), 422, 'invalid_request'),
    "platform:fees is this binding's own machinery and cannot be the owner",
  );
  assert.equal((await settlement(txnId)).state, 'unknown');
  assert.equal((await binding.balanceOf(caller)).balance, 1_000);
});

test('§9 one namespace: an id used at one door is refused at another, naming the first use; the first is unchanged', async () => {
  const account = await binding.funded(5_000, 'acct');
  const owner = await binding.account('owner');
  const txnId = unique('shared');
  await credit({ txnId, account, amount: 1_000 }).expect(200);
  const first = await settlement(txnId);
  const asSettle = await settle({ txnId, caller: account, owner, rate: 1_000, retail: 1_000 });
  assert.equal(refused(asSettle, 422, 'terms_conflict'), `transaction id ${txnId} was already used by a credit at ${first.opened_at}; a settle needs its own transaction id`);
  const asAdjust = await adjust({ txnId, account, delta: 1_000, reason: 'goodwill' });
  assert.equal(refused(asAdjust, 422, 'terms_conflict'), `transaction id ${txnId} was already used by a credit at ${first.opened_at}; an adjust needs its own transaction id`);
  const asReverse = await reverse({ txnId, reverses: unique('anything'), reason: 'oops' });
  assert.match(refused(asReverse, 422, 'terms_conflict'), new RegExp(`^transaction id ${txnId} was already used by a credit at `));
  assert.deepEqual(await settlement(txnId), first);
  assert.equal((await binding.balanceOf(account)).balance, 6_000);
  assert.equal((await binding.balanceOf(owner)).balance, 0);

  // And the other way round: a settle's id is refused at the funding door.
  const work = unique('work');
  await settle({ txnId: work, caller: account, owner, rate: 100, retail: 100 }).expect(200);
  assert.match(refused(await credit({ txnId: work, account, amount: 100 }), 422, 'terms_conflict'), /already used by a settle at .*; a credit needs its own transaction id$/);
  assert.equal((await binding.balanceOf(account)).balance, 5_900);
});

test('§6.9 reverse: the exact inverse, one call; the original stays readable and names its reversal', async () => {
  const caller = await binding.funded(1_000_000, 'caller');
  const owner = await binding.account('owner');
  const txnId = unique('work');
  await settle({ txnId, caller, owner, rate: 250_000, retail: 300_000 }).expect(200);
  const original = await settlement(txnId);
  const rid = unique('rev');
  const res = await reverse({ txnId: rid, reverses: txnId, reason: 'agent returned garbage', actor: 'ops@holon' });
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, { ...APPLIED, amount: 300_000 });
  assert.equal((await binding.balanceOf(caller)).balance, 1_000_000);
  assert.equal((await binding.balanceOf(owner)).balance, 0);

  const undone = await settlement(txnId);
  assert.deepEqual(undone, { ...original, reversed_by: rid });
  const correction = await settlement(rid);
  assert.equal(correction.state, 'settled');
  assert.equal(correction.account, caller);
  assert.equal(correction.amount, 300_000);
  assert.equal(correction.reversed_by, null);
  assert.deepEqual(correction.legs, [
    { account: caller, delta: 300_000, kind: 'reverse-charge' },
    { account: owner, delta: -250_000, kind: 'reverse-earn' },
    { account: 'platform:fees', delta: -50_000, kind: 'reverse-fee' },
  ]);
  const stored = await binding.db.knex('clearing_transactions').where({ txn_id: rid }).first('reason', 'actor', 'reverses');
  assert.deepEqual(stored, { reason: 'agent returned garbage', actor: 'ops@holon', reverses: txnId });
});

test('§6.9 §9 reverse replay answers the same amount with applied false; a second reversal is refused naming the first', async () => {
  const caller = await binding.funded(10_000, 'caller');
  const owner = await binding.account('owner');
  const txnId = unique('work');
  await settle({ txnId, caller, owner, rate: 1_800, retail: 2_000 }).expect(200);
  const rid = unique('rev');
  await reverse({ txnId: rid, reverses: txnId, reason: 'refund' }).expect(200);
  for (let i = 0; i < 2; i++) {
    const replay = await reverse({ txnId: rid, reverses: txnId, reason: 'refund' });
    assert.equal(replay.status, 200);
    assert.deepEqual(replay.body, { ...REPLAYED, amount: 2_000 });
  }
  assert.equal((await binding.balanceOf(caller)).balance, 10_000);
  const second = unique('rev');
  const again = await reverse({ txnId: second, reverses: txnId, reason: 'refund twice' });
  assert.equal(refused(again, 422, 'already_reversed'), `${txnId} was already reversed by ${rid}`);
  assert.equal(again.body.reversed_by, rid);
  assert.equal((await settlement(second)).state, 'unknown');
  // The replay's key is its own id: the same reversal id naming another transaction is a conflict.
  const otherWork = unique('work');
  await settle({ txnId: otherWork, caller, owner, rate: 1, retail: 1 }).expect(200);
  refused(await reverse({ txnId: rid, reverses: otherWork, reason: 'refund' }), 422, 'terms_conflict');
  assert.equal((await settlement(otherWork)).reversed_by, null);
  assert.equal((await binding.balanceOf(caller)).balance, 9_999);
  assert.equal((await binding.balanceOf(owner)).balance, 1);
});

test('§6.9 a correction cannot be reversed (not_reversible); an unknown transaction is no_such_object; a reason is required', async () => {
  const account = await binding.funded(10_000, 'acct');
  const owner = await binding.account('owner');
  const txnId = unique('work');
  await settle({ txnId, caller: account, owner, rate: 1_000, retail: 1_000 }).expect(200);
  const rid = unique('rev');
  await reverse({ txnId: rid, reverses: txnId, reason: 'refund' }).expect(200);
  assert.match(refused(await reverse({ txnId: unique('rev'), reverses: rid, reason: 'undo the refund' }), 422, 'not_reversible'), new RegExp(`^${rid} is itself a correction \\(the reversal of ${txnId}\\)`));

  const adjustment = unique('adj');
  await adjust({ txnId: adjustment, account, delta: 500, reason: 'goodwill' }).expect(200);
  assert.match(refused(await reverse({ txnId: unique('rev'), reverses: adjustment, reason: 'no goodwill' }), 422, 'not_reversible'), new RegExp(`^${adjustment} is itself a correction \\(an adjustment\\)`));
  assert.equal((await settlement(adjustment)).reversed_by, null);

  const ghost = unique('ghost');
  const missing = unique('rev');
  assert.equal(refused(await reverse({ txnId: missing, reverses: ghost, reason: 'x' }), 404, 'no_such_object'), `there is no transaction ${ghost} to reverse`);
  assert.equal((await settlement(missing)).state, 'unknown');

  assert.equal(refused(await reverse({ txnId: unique('rev'), reverses: txnId }), 422, 'invalid_request'), 'invalid request: body.reason is required');
  // Full reversals only: there is no amount to give.
  const partial = await reverse({ txnId: unique('rev'), reverses: txnId, reason: 'half refund', amount: 500 });
  assert.equal(refused(partial, 422, 'invalid_request'), 'invalid request: body.amount is not a field of this operation');
  assert.equal((await binding.balanceOf(account)).balance, 10_500);
});

test('§6.9 reversing a credit takes the value back out, even below zero', async () => {
  const account = await binding.account();
  const owner = await binding.account('owner');
  const pay = unique('pay');
  await credit({ txnId: pay, account, amount: 1_000 }).expect(200);
  await settle({ txnId: unique('work'), caller: account, owner, rate: 600, retail: 600 }).expect(200);
  const rid = unique('chargeback');
  assert.deepEqual((await reverse({ txnId: rid, reverses: pay, reason: 'card chargeback' })).body, { ...APPLIED, amount: 1_000 });
  assert.equal((await binding.balanceOf(account)).balance, -600);
  assert.deepEqual((await settlement(rid)).legs, [
    { account: 'external:funding', delta: 1_000, kind: 'reverse-funding' },
    { account, delta: -1_000, kind: 'reverse-credit' },
  ]);
});

test('§6.10 adjust: either sign, against external:adjustments; zero refused; replay applied false; other delta refused', async () => {
  const account = await binding.funded(1_000, 'acct');
  const up = unique('adj');
  const down = unique('adj');
  assert.deepEqual((await adjust({ txnId: up, account, delta: 250, reason: 'goodwill', actor: 'ops' })).body, APPLIED);
  assert.deepEqual((await adjust({ txnId: down, account, delta: -2_000, reason: 'repair after bug 17' })).body, APPLIED);
  assert.deepEqual(await binding.balanceOf(account), { account, balance: -750, available: -750, reserved: 0, pending: 0 });
  const read = await settlement(down);
  assert.equal(read.account, account);
  assert.equal(read.amount, 2_000);
  assert.deepEqual(read.legs, [
    { account: 'external:adjustments', delta: 2_000, kind: 'adjustment-source' },
    { account, delta: -2_000, kind: 'adjustment' },
  ]);
  assert.deepEqual((await adjust({ txnId: up, account, delta: 250, reason: 'goodwill' })).body, REPLAYED);
  const conflict = await adjust({ txnId: up, account, delta: 260, reason: 'goodwill' });
  assert.deepEqual(conflict.body.existing, { account, delta: 250 });
  assert.equal(refused(conflict, 422, 'terms_conflict'), `transaction id ${up} was already used for an adjust with other terms: ${JSON.stringify(conflict.body.existing)}`);
  assert.equal(refused(await adjust({ txnId: unique('adj'), account, delta: 0, reason: 'nothing' }), 422, 'invalid_request'), 'invalid request: body.delta must not be 0');
  assert.equal(refused(await adjust({ txnId: unique('adj'), account, delta: 5 }), 422, 'invalid_request'), 'invalid request: body.reason is required');
  assert.equal(
    refused(await adjust({ txnId: unique('adj'), account: 'platform:fees', delta: -5, reason: 'skim' }), 422, 'invalid_request'),
    "platform:fees is this binding's own machinery and cannot be the account adjusted",
  );
  const ghost = unique('ghost');
  assert.equal(refused(await adjust({ txnId: unique('adj'), account: ghost, delta: 5, reason: 'x' }), 404, 'no_such_object'), `there is no account ${ghost}`);
  assert.equal((await binding.balanceOf(account)).balance, -750);
  const stored = await binding.db.knex('clearing_transactions').where({ txn_id: up }).first('reason', 'actor');
  assert.deepEqual(stored, { reason: 'goodwill', actor: 'ops' });
});

test('§6.4 read-settlement: an unknown id is 200 state unknown; every accepted kind reads settled with its record', async () => {
  const ghost = unique('never-sent');
  const unknown = await binding.http.get(`/internal/ledger/settlement/${ghost}`);
  assert.equal(unknown.status, 200);
  assert.deepEqual(unknown.body, {
    txn_id: ghost,
    state: 'unknown',
    amount: null,
    account: null,
    opened_at: null,
    settled_at: null,
    failure: null,
    legs: [],
    reversed_by: null,
  });
  const caller = await binding.funded(5_000, 'caller');
  const owner = await binding.account('owner');
  const work = unique('work');
  const before = Date.now();
  await settle({ txnId: work, caller, owner, rate: 90, retail: 100 }).expect(200);
  const read = await settlement(work);
  assert.deepEqual(Object.keys(read).sort(), ['account', 'amount', 'failure', 'legs', 'opened_at', 'reversed_by', 'settled_at', 'state', 'txn_id']);
  assert.equal(read.txn_id, work);
  assert.equal(read.state, 'settled');
  assert.equal(read.failure, null);
  assert.equal(read.settled_at, read.opened_at);
  const at = Date.parse(read.opened_at);
  assert.ok(at >= before - 1_000 && at <= Date.now() + 1_000, `opened_at ${read.opened_at} is not now`);
  assert.equal(new Date(at).toISOString(), read.opened_at);
  // An immediate binding answers settled or unknown and nothing else.
  const rid = unique('rev');
  const adj = unique('adj');
  await reverse({ txnId: rid, reverses: work, reason: 'x' }).expect(200);
  await adjust({ txnId: adj, account: owner, delta: 1, reason: 'x' }).expect(200);
  for (const id of [work, rid, adj]) assert.equal((await settlement(id)).state, 'settled');
});

test('§6.3 invariant 14: read-summary totals are net of corrections; a reversed charge stops counting as spent', async () => {
  const payer = await binding.account('payer');
  const owner = await binding.account('owner');
  const fund = unique('pay');
  const s1 = unique('work');
  const s2 = unique('work');
  const r1 = unique('rev');
  const a1 = unique('adj');
  const a2 = unique('adj');
  const c2 = unique('pay');
  const rc2 = unique('rev');
  await credit({ txnId: fund, account: payer, amount: 1_000_000 }).expect(200);
  await settle({ txnId: s1, caller: payer, owner, rate: 270_000, retail: 300_000, memo: 'first' }).expect(200);
  await settle({ txnId: s2, caller: payer, owner, rate: 100_000, retail: 100_000 }).expect(200);
  await reverse({ txnId: r1, reverses: s1, reason: 'refund s1' }).expect(200);
  await adjust({ txnId: a1, account: payer, delta: 50_000, reason: 'goodwill' }).expect(200);
  await adjust({ txnId: a2, account: payer, delta: -20_000, reason: 'repair' }).expect(200);
  await credit({ txnId: c2, account: payer, amount: 200_000, ref: 'card' }).expect(200);
  await reverse({ txnId: rc2, reverses: c2, reason: 'chargeback' }).expect(200);

  const summary = await binding.http.get(`/internal/ledger/summary/${payer}`);
  assert.equal(summary.status, 200);
  assert.equal(summary.body.account, payer);
  assert.equal(summary.body.balance, 930_000);
  assert.equal(summary.body.available, 930_000);
  assert.equal(summary.body.reserved, 0);
  assert.equal(summary.body.pending, 0);
  assert.deepEqual(summary.body.reservations, []);
  assert.deepEqual(summary.body.funding, ['credit']);
  assert.deepEqual(summary.body.totals, { credited: 1_000_000, earned: 0, spent: 100_000, adjusted: 30_000 });
  assert.equal('period' in summary.body, false);
  // Newest first.
  assert.deepEqual(
    summary.body.statement.map((e: { txn_id: string; delta: number; kind: string }) => [e.txn_id, e.delta, e.kind]),
    [
      [rc2, -200_000, 'reverse-credit'],
      [c2, 200_000, 'credit'],
      [a2, -20_000, 'adjustment'],
      [a1, 50_000, 'adjustment'],
      [r1, 300_000, 'reverse-charge'],
      [s2, -100_000, 'charge'],
      [s1, -300_000, 'charge'],
      [fund, 1_000_000, 'credit'],
    ],
  );
  const times = summary.body.statement.map((e: { ts: string }) => Date.parse(e.ts));
  assert.deepEqual([...times].sort((a, b) => b - a), times);

  const earner = await binding.http.get(`/internal/ledger/summary/${owner}`);
  assert.deepEqual(earner.body.totals, { credited: 0, earned: 100_000, spent: 0, adjusted: 0 });
  assert.equal(earner.body.balance, 100_000);
});

test('§6.3 the statement defaults to 30 entries and clamps an explicit limit to 500', async () => {
  const account = await binding.account();
  const prefix = unique('bulk');
  // 501 balanced credits written in one database transaction (the same rows the credit door writes).
  await binding.db.knex.transaction(async (trx) => {
    await trx.raw(
      `INSERT INTO clearing_transactions (txn_id, door, account, amount, terms)
       SELECT ?::text || '-' || g, 'credit', ?::text, g, jsonb_build_object('account', ?::text, 'amount', g, 'simulated', false)
       FROM generate_series(1, 501) AS g`,
      [prefix, account, account],
    );
    await trx.raw(
      `INSERT INTO clearing_postings (txn_id, account, delta, kind)
       SELECT ?::text || '-' || g, v.account, v.sign * g, v.kind
       FROM generate_series(1, 501) AS g
       CROSS JOIN (VALUES ('external:funding', -1, 'funding'), (?::text, 1, 'credit')) AS v (account, sign, kind)
       ORDER BY g, v.sign`,
      [prefix, account],
    );
  });
  const read = async (query: string) => {
    const res = await binding.http.get(`/internal/ledger/summary/${account}${query}`);
    assert.equal(res.status, 200);
    return res.body.statement as { txn_id: string; ts: string; delta: number }[];
  };
  const byDefault = await read('');
  assert.equal(byDefault.length, 30);
  const { ts, ...newest } = byDefault[0];
  assert.deepEqual(newest, { txn_id: `${prefix}-501`, delta: 501, kind: 'credit', door: 'credit', ref: null });
  assert.equal(typeof ts, 'string');
  assert.equal(byDefault[29].txn_id, `${prefix}-472`);
  const clamped = await read('?limit=100000');
  assert.equal(clamped.length, 500);
  assert.equal(clamped[499].txn_id, `${prefix}-2`);
  assert.equal((await read('?limit=500')).length, 500);
  const seven = await read('?limit=7');
  assert.deepEqual(
    seven.map((e) => e.delta),
    [501, 500, 499, 498, 497, 496, 495],
  );
  const summary = await binding.http.get(`/internal/ledger/summary/${account}?limit=1`);
  assert.equal(summary.body.balance, (501 * 502) / 2);
  assert.equal(summary.body.totals.credited, (501 * 502) / 2);
});

test('§8 invariant 8: the database refuses UPDATE, DELETE and TRUNCATE of the journal', async () => {
  const caller = await binding.funded(10_000, 'caller');
  const owner = await binding.account('owner');
  const txnId = unique('work');
  await settle({ txnId, caller, owner, rate: 1_000, retail: 1_000 }).expect(200);
  const hold = unique('hold');
  await binding.http.post('/internal/ledger/hold').send({ holdId: hold, account: caller, amount: 500, expiresAt: new Date(Date.now() + 3_600_000).toISOString() }).expect(200);
  const drawId = unique('draw');
  await binding.http.post('/internal/ledger/draw').send({ holdId: hold, txnId: drawId, caller, owner, lines: [{ meter: 'tokens', amount: 200 }] }).expect(200);
  const before = await settlement(txnId);

  await assert.rejects(binding.db.knex('clearing_postings').where({ txn_id: txnId }).update({ delta: 0 }), /the journal is append-only: UPDATE on clearing_postings is refused/);
  await assert.rejects(binding.db.knex('clearing_postings').where({ txn_id: txnId }).delete(), /the journal is append-only: DELETE on clearing_postings is refused/);
  await assert.rejects(binding.db.knex('clearing_transactions').where({ txn_id: txnId }).update({ amount: 1 }), /the journal is append-only: UPDATE on clearing_transactions is refused/);
  await assert.rejects(binding.db.knex('clearing_transactions').where({ txn_id: txnId }).delete(), /the journal is append-only: DELETE on clearing_transactions is refused/);
  await assert.rejects(binding.db.knex('clearing_draw_lines').where({ txn_id: drawId }).update({ amount: 0 }), /the journal is append-only: UPDATE on clearing_draw_lines is refused/);
  await assert.rejects(binding.db.knex('clearing_draw_lines').where({ txn_id: drawId }).delete(), /the journal is append-only: DELETE on clearing_draw_lines is refused/);
  for (const table of ['clearing_draw_lines', 'clearing_postings', 'clearing_transactions']) {
    // In a transaction that is always rolled back, so a broken trigger could not empty a shared database.
    const trx = await binding.db.knex.transaction();
    try {
      await assert.rejects(trx.raw(`TRUNCATE ${table} CASCADE`), new RegExp(`the journal is append-only: TRUNCATE on ${table} is refused`));
    } finally {
      await trx.rollback().catch(() => undefined);
    }
  }
  assert.deepEqual(await settlement(txnId), before);
  assert.equal((await binding.balanceOf(caller)).balance, 8_800);
});

test('§8 invariant 9: the database refuses at commit an entry whose postings do not sum to zero, and keeps nothing of it', async () => {
  const account = await binding.account();
  const txnId = unique('mint');
  await assert.rejects(
    binding.db.knex.transaction(async (trx) => {
      await trx('clearing_transactions').insert({ txn_id: txnId, door: 'credit', account, amount: 5_000, terms: { account, amount: 5_000 } });
      await trx('clearing_postings').insert({ txn_id: txnId, account, delta: 5_000, kind: 'credit' });
    }),
    new RegExp(`entry ${txnId} does not balance: its postings sum to 5000`),
  );
  assert.equal((await settlement(txnId)).state, 'unknown');
  assert.equal((await binding.balanceOf(account)).balance, 0);
  // One side of a movement cannot be lost either: two legs that do not match are refused the same way.
  await assert.rejects(
    binding.db.knex.transaction(async (trx) => {
      await trx('clearing_transactions').insert({ txn_id: txnId, door: 'credit', account, amount: 5_000, terms: { account, amount: 5_000 } });
      await trx('clearing_postings').insert([
        { txn_id: txnId, account: 'external:funding', delta: -4_999, kind: 'funding' },
        { txn_id: txnId, account, delta: 5_000, kind: 'credit' },
      ]);
    }),
    /does not balance: its postings sum to 1/,
  );
  assert.equal((await binding.balanceOf(account)).balance, 0);
  // A hold can never be drawn past its cap, whatever writes it.
  const hold = unique('hold');
  await binding.db.knex('clearing_holds').insert({ hold_id: hold, account, amount: 100, status: 'open', expires_at: new Date(Date.now() + 60_000) });
  await assert.rejects(binding.db.knex('clearing_holds').where({ hold_id: hold }).update({ drawn: 101 }), /check constraint/);
  await assert.rejects(binding.db.knex('clearing_holds').where({ hold_id: hold }).update({ drawn: -1 }), /check constraint/);
});

test('§8 invariant 6: value is conserved; every posting balances its entry and every holder balance is the sum of its postings', async () => {
  const knex = binding.db.knex;
  const total = await knex('clearing_postings').first(knex.raw('coalesce(sum(delta), 0)::text AS total'), knex.raw('count(*)::integer AS n'));
  assert.equal(total.total, '0');
  assert.ok(Number(total.n) > 1_000, `only ${total.n} postings: the check would prove nothing`);
  const unbalanced = await knex('clearing_postings').groupBy('txn_id').havingRaw('sum(delta) <> 0').select('txn_id');
  assert.deepEqual(unbalanced, []);
  const drifted = await knex.raw(
    `SELECT a.id, a.balance::text, coalesce(p.total, 0)::text AS postings
     FROM clearing_accounts a
     LEFT JOIN (SELECT account, sum(delta) AS total FROM clearing_postings GROUP BY account) p ON p.account = a.id
     WHERE a.kind = 'holder' AND a.balance <> coalesce(p.total, 0)`,
  );
  assert.deepEqual(drifted.rows, []);
  const holders = await knex('clearing_accounts').where({ kind: 'holder' }).first(knex.raw('count(*)::integer AS n'));
  assert.ok(Number(holders.n) > 20);
  // Every movement came from somewhere: only machinery accounts run negative by construction,
  // and the machinery balances read through the API are the sums of their postings.
  for (const machinery of ['external:funding', 'external:adjustments', 'platform:fees']) {
    const sum = await knex('clearing_postings').where({ account: machinery }).first(knex.raw('coalesce(sum(delta), 0)::bigint AS total'));
    assert.equal((await binding.balanceOf(machinery)).balance, Number(sum.total));
  }
});
