/**
 * The amount and balance bounds of the reference binding (issue 8 item 1.6): no account can be
 * carried past ±MAX_BALANCE_MICROS, machinery accounts included, so no figure the binding answers
 * leaves the exact integer range; a write that would pass the bound is refused 422
 * `invalid_request` naming it, and changes nothing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_AMOUNT_MICROS, MAX_BALANCE_MICROS } from '../../src/contracts/money.ts';
import { inOneHour, openFreshDatabase, refused, testBinding, unique, useTestBinding, type TestBinding } from '../helpers/clearing.ts';

const binding = useTestBinding();

/** The sentence of a balance-bound refusal. */
function beyond(account: string, delta: number, from: number): string {
  return `a posting of ${delta} on ${account} would take its balance from ${from} to ${from + delta}, beyond the bound of ±${MAX_BALANCE_MICROS} micro-units that every account keeps (issue 8 item 1.6); nothing was changed`;
}

/** read-balance, read-summary and open-hold of `account` all answer 200 (none is poisoned). */
async function stillAnswers(b: TestBinding, account: string): Promise<void> {
  assert.equal((await b.http.get(`/internal/ledger/balance/${encodeURIComponent(account)}`)).status, 200);
  assert.equal((await b.http.get(`/internal/ledger/summary/${encodeURIComponent(account)}`)).status, 200);
}

test('issue 8 1.6: two credits of 2^53 − 1 are refused 422 invalid_request, change nothing, and poison nothing', async () => {
  const account = await binding.account();
  for (const txnId of [unique('huge'), unique('huge')]) {
    const res = await binding.http.post('/internal/ledger/purchase').send({ txnId, account, amount: Number.MAX_SAFE_INTEGER });
    refused(res, 422, 'invalid_request');
    assert.equal((await binding.http.get(`/internal/ledger/settlement/${txnId}`)).body.state, 'unknown');
  }
  assert.deepEqual(await binding.balanceOf(account), { account, balance: 0, available: 0, reserved: 0, pending: 0 });
  await stillAnswers(binding, account);
  await stillAnswers(binding, 'external:funding');
  await binding.http.post('/internal/ledger/purchase').send({ txnId: unique('fund'), account, amount: 5_000 }).expect(200);
  const hold = await binding.http.post('/internal/ledger/hold').send({ holdId: unique('h'), account, amount: 5_000, expiresAt: inOneHour() });
  assert.equal(hold.status, 200);
  assert.equal(hold.body.available, 0);
});

test('issue 8 1.6: max-size settles carry a holder to −3 × amount; the next is refused naming the bound; both sides unchanged', async () => {
  const caller = await binding.account('caller');
  const owner = await binding.account('owner');
  const settle = (txnId: string) =>
    binding.http.post('/internal/ledger/charge').send({ txnId, caller, owner, rate: MAX_AMOUNT_MICROS, retail: MAX_AMOUNT_MICROS });
  for (let i = 0; i < 3; i++) assert.equal((await settle(unique('big'))).status, 200);
  const txnId = unique('big');
  assert.equal(refused(await settle(txnId), 422, 'invalid_request'), beyond(caller, -MAX_AMOUNT_MICROS, -3 * MAX_AMOUNT_MICROS));
  assert.equal((await binding.balanceOf(caller)).balance, -3 * MAX_AMOUNT_MICROS);
  assert.equal((await binding.balanceOf(owner)).balance, 3 * MAX_AMOUNT_MICROS);
  assert.equal((await binding.http.get(`/internal/ledger/settlement/${txnId}`)).body.state, 'unknown');
  await stillAnswers(binding, caller);
  await stillAnswers(binding, owner);
  // A posting back toward zero always passes.
  await binding.http.post('/internal/ledger/charge').send({ txnId: unique('back'), caller: owner, owner: caller, rate: 1, retail: 1 }).expect(200);
  assert.equal((await binding.balanceOf(caller)).balance, -3 * MAX_AMOUNT_MICROS + 1);
});

test('issue 8 1.6: a machinery account is bounded exactly across its stripes; refusals change nothing; reversing passes', async () => {
  const fresh = await openFreshDatabase();
  try {
    const b = testBinding(fresh.db);
    const accounts = [await b.account('a'), await b.account('b'), await b.account('c')];
    // Three credits of the largest amount fill external:funding to −(3 × 10^15 − 3), spread over its stripes.
    for (const account of accounts) await b.http.post('/internal/ledger/purchase').send({ txnId: unique('fill'), account, amount: MAX_AMOUNT_MICROS }).expect(200);
    const room = MAX_BALANCE_MICROS - 3 * MAX_AMOUNT_MICROS;
    assert.equal(room, 3);
    const last = await b.account('d');
    const refusedCredit = await b.http.post('/internal/ledger/purchase').send({ txnId: unique('over'), account: last, amount: room + 1 });
    assert.equal(refused(refusedCredit, 422, 'invalid_request'), beyond('external:funding', -(room + 1), -3 * MAX_AMOUNT_MICROS));
    assert.equal((await b.balanceOf(last)).balance, 0);
    assert.equal((await b.balanceOf('external:funding')).balance, -3 * MAX_AMOUNT_MICROS);
    const exact = unique('exact');
    await b.http.post('/internal/ledger/purchase').send({ txnId: exact, account: last, amount: room }).expect(200);
    assert.equal((await b.balanceOf('external:funding')).balance, -MAX_BALANCE_MICROS);
    await stillAnswers(b, 'external:funding');
    // Reversing a credit moves external:funding back toward zero, so it passes at the bound.
    await b.http.post('/internal/ledger/reverse').send({ txnId: unique('undo'), reverses: exact, reason: 'test' }).expect(200);
    assert.equal((await b.balanceOf('external:funding')).balance, -3 * MAX_AMOUNT_MICROS);
  } finally {
    await fresh.dispose();
  }
});
