/**
 * Reservations in the reference binding (clearing-contract §6.5, §6.6, §6.9, §6.11 to §6.15,
 * §8 invariants 1 to 5, 11, 12, 13): open-hold, resize-hold, draw, release-hold, expiry, the
 * two reads, and available = balance − reserved − pending on every read.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { expireHolds } from '../../src/clearing/ledger.ts';
import { inOneHour, refused, unique, useTestBinding } from '../helpers/clearing.ts';

const binding = useTestBinding();

interface Reservation {
  hold_id: string;
  account: string;
  amount: number;
  drawn: number;
  status: 'open' | 'released';
  ref: string | null;
  memo: string | null;
  opened_at: string;
  expires_at: string;
  released_at: string | null;
  release_reason: string | null;
}

/**
 * An account's figures, read through read-balance and list-reservations, each checked against
 * invariant 2: available = balance − Σ(open: amount − drawn) − pending, and reserved = that Σ.
 */
async function figures(account: string) {
  const balance = await binding.http.get(`/internal/ledger/balance/${account}`);
  assert.equal(balance.status, 200, JSON.stringify(balance.body));
  const list = await binding.http.get(`/internal/ledger/reservations/${account}`);
  assert.equal(list.status, 200, JSON.stringify(list.body));
  const open = (list.body.reservations as Reservation[]).filter((r) => r.status === 'open');
  const committed = open.reduce((sum, r) => sum + (r.amount - r.drawn), 0);
  for (const read of [balance.body, list.body]) {
    assert.equal(read.reserved, committed, 'reserved is what open holds still commit');
    assert.equal(read.available, read.balance - read.reserved - (read.pending ?? 0), 'invariant 2');
  }
  assert.deepEqual(
    { balance: list.body.balance, available: list.body.available, reserved: list.body.reserved },
    { balance: balance.body.balance, available: balance.body.available, reserved: balance.body.reserved },
  );
  return { balance: balance.body.balance as number, available: balance.body.available as number, reserved: balance.body.reserved as number, reservations: list.body.reservations as Reservation[] };
}

const hold = (body: Record<string, unknown>) => binding.http.post('/internal/ledger/hold').send({ expiresAt: inOneHour(), ...body });
const resize = (body: Record<string, unknown>) => binding.http.post('/internal/ledger/resize').send(body);
const draw = (body: Record<string, unknown>) => binding.http.post('/internal/ledger/draw').send(body);
const release = (body: Record<string, unknown>) => binding.http.post('/internal/ledger/release').send(body);
const reverse = (body: Record<string, unknown>) => binding.http.post('/internal/ledger/reverse').send(body);

async function reservation(holdId: string) {
  const res = await binding.http.get(`/internal/ledger/reservation/${holdId}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

async function postingsCount(account: string): Promise<number> {
  const row = await binding.db.knex('clearing_postings').where({ account }).first(binding.db.knex.raw('count(*)::integer AS n'));
  return Number(row.n);
}

/** A draw line as stored when the request gave only meter and amount. */
const plain = (meter: string, amount: number, capped: boolean) => ({
  meter,
  amount,
  unit: null,
  count: null,
  per: null,
  per_unit: null,
  pass_through: false,
  upstream_receipt: null,
  capped,
});

test('§6.11 invariant 1: opening a hold moves no value; balance unchanged, available falls by the cap', async () => {
  const account = await binding.funded(1_000_000);
  const holdId = unique('eng');
  const postingsBefore = await postingsCount(account);
  const expiresAt = new Date(Date.now() + 7_200_000).toISOString();
  const before = Date.now();
  const res = await hold({ holdId, account, amount: 300_000, expiresAt, ref: 'sow 12', memo: 'summarize' });
  assert.equal(res.status, 200);
  const { opened_at, ...rest } = res.body.reservation;
  assert.deepEqual(
    { ...res.body, reservation: rest },
    {
      ok: true,
      applied: true,
      available: 700_000,
      reservation: {
        hold_id: holdId,
        account,
        amount: 300_000,
        drawn: 0,
        status: 'open',
        ref: 'sow 12',
        memo: 'summarize',
        expires_at: expiresAt,
        released_at: null,
        release_reason: null,
      },
    },
  );
  assert.ok(Date.parse(opened_at) >= before - 1_000 && Date.parse(opened_at) <= Date.now() + 1_000);
  const now = await figures(account);
  assert.deepEqual({ balance: now.balance, available: now.available, reserved: now.reserved }, { balance: 1_000_000, available: 700_000, reserved: 300_000 });
  assert.equal(await postingsCount(account), postingsBefore);
  assert.deepEqual(now.reservations, [res.body.reservation]);
});

test('§6.11 a hold available does not cover is refused 422 insufficient_funds with asked, available, balance, reserved', async () => {
  const account = await binding.funded(1_000);
  await hold({ holdId: unique('eng'), account, amount: 600 }).expect(200);
  const holdId = unique('eng');
  const res = await hold({ holdId, account, amount: 500 });
  assert.equal(refused(res, 422, 'insufficient_funds'), `a hold of 500 does not fit: 400 available on ${account} (balance 1000, reserved 600)`);
  assert.equal(res.body.asked, 500);
  assert.equal(res.body.available, 400);
  assert.equal(res.body.balance, 1_000);
  assert.equal(res.body.reserved, 600);
  refused(await binding.http.get(`/internal/ledger/reservation/${holdId}`), 404, 'no_such_object');
  // Exactly what is available fits; one more unit does not.
  assert.equal((await hold({ holdId, account, amount: 400 })).body.available, 0);
  const one = await hold({ holdId: unique('eng'), account, amount: 1 });
  assert.equal(refused(one, 422, 'insufficient_funds'), `a hold of 1 does not fit: 0 available on ${account} (balance 1000, reserved 1000)`);
  const now = await figures(account);
  assert.equal(now.reserved, 1_000);
  assert.equal(now.available, 0);
});

test('§6.11 invariant 12: a reused holdId with other terms is refused naming them; the same terms answer applied false', async () => {
  const account = await binding.funded(10_000);
  const other = await binding.funded(10_000);
  const holdId = unique('eng');
  const first = await hold({ holdId, account, amount: 3_000 });
  assert.equal(first.body.applied, true);
  const amount = await hold({ holdId, account, amount: 4_000 });
  assert.equal(refused(amount, 422, 'terms_conflict'), `reservation ${holdId} already exists for ${account} with amount 3000`);
  assert.deepEqual(amount.body.existing, { account, amount: 3_000 });
  const elsewhere = await hold({ holdId, account: other, amount: 3_000 });
  assert.equal(refused(elsewhere, 422, 'terms_conflict'), `reservation ${holdId} already exists for ${account} with amount 3000`);
  // A retried formation with the same terms: the existing reservation, nothing new committed.
  const again = await hold({ holdId, account, amount: 3_000 });
  assert.equal(again.status, 200);
  assert.deepEqual(again.body, { ok: true, applied: false, reservation: first.body.reservation, available: 7_000 });
  assert.equal((await figures(account)).reserved, 3_000);
  assert.equal((await figures(other)).reserved, 0);
});

test('§6.11 open-hold refusals: past or unparseable expiresAt, non-positive amount, unknown account, machinery', async () => {
  const account = await binding.funded(10_000);
  const past = new Date(Date.now() - 1_000).toISOString();
  assert.equal(refused(await hold({ holdId: unique('eng'), account, amount: 5, expiresAt: past }), 422, 'invalid_request'), `expiresAt ${past} is not in the future; a hold needs an open window`);
  assert.equal(
    refused(await hold({ holdId: unique('eng'), account, amount: 5, expiresAt: '2026-02-30T25:00:00Z' }), 422, 'invalid_request'),
    'invalid request: body.expiresAt must match format "date-time"',
  );
  assert.equal(refused(await hold({ holdId: unique('eng'), account, amount: 0 }), 422, 'invalid_request'), 'invalid request: body.amount must be >= 1');
  assert.equal(refused(await hold({ holdId: unique('eng'), account, amount: -5 }), 422, 'invalid_request'), 'invalid request: body.amount must be >= 1');
  assert.equal(refused(await hold({ holdId: unique('eng'), account, amount: 2.5 }), 422, 'invalid_request'), 'invalid request: body.amount must be integer');
  const ghost = unique('ghost');
  assert.equal(refused(await hold({ holdId: unique('eng'), account: ghost, amount: 5 }), 404, 'no_such_object'), `there is no account ${ghost}`);
  assert.equal(
    refused(await hold({ holdId: unique('eng'), account: 'external:funding', amount: 5 }), 422, 'invalid_request'),
    "external:funding is this binding's own machinery and cannot be the holder of a reservation",
  );
  assert.equal((await figures(account)).reserved, 0);
});

test('§6.12 resize: a raise must fit; replaying it does not walk the cap upward; a reduction releases at once', async () => {
  const account = await binding.funded(1_000);
  const holdId = unique('eng');
  const opened = await hold({ holdId, account, amount: 400 });
  const raise = await resize({ holdId, amount: 900, reason: 'approved amendment 1' });
  assert.equal(raise.status, 200);
  assert.equal(raise.body.applied, true);
  assert.equal(raise.body.delta, 500);
  assert.equal(raise.body.available, 100);
  assert.deepEqual(raise.body.reservation, { ...opened.body.reservation, amount: 900 });
  for (let i = 0; i < 3; i++) {
    const replay = await resize({ holdId, amount: 900, reason: 'approved amendment 1' });
    assert.deepEqual(replay.body, { ok: true, applied: false, reservation: raise.body.reservation, available: 100, delta: 0 });
  }
  assert.equal((await figures(account)).reserved, 900);
  const tooMuch = await resize({ holdId, amount: 1_200 });
  assert.equal(refused(tooMuch, 422, 'insufficient_funds'), `a raise of reservation ${holdId} of 300 does not fit: 100 available on ${account} (balance 1000, reserved 900)`);
  assert.equal(tooMuch.body.asked, 300);
  // A raise of exactly what is available fits.
  assert.equal((await resize({ holdId, amount: 1_000 })).body.available, 0);
  const reduce = await resize({ holdId, amount: 250 });
  assert.equal(reduce.body.applied, true);
  assert.equal(reduce.body.delta, -750);
  assert.equal(reduce.body.available, 750);
  const now = await figures(account);
  assert.deepEqual({ balance: now.balance, available: now.available, reserved: now.reserved }, { balance: 1_000, available: 750, reserved: 250 });
});

test('§6.12 invariant 5: a cap never falls below what was drawn; a released hold is closed to resizing', async () => {
  const account = await binding.funded(10_000);
  const owner = await binding.account('owner');
  const holdId = unique('eng');
  await hold({ holdId, account, amount: 1_000 }).expect(200);
  await draw({ holdId, txnId: unique('win'), caller: account, owner, lines: [{ meter: 'tokens', amount: 600 }] }).expect(200);
  assert.equal(refused(await resize({ holdId, amount: 599 }), 422, 'invalid_request'), `reservation ${holdId} has 600 drawn; its cap cannot fall to 599`);
  const exact = await resize({ holdId, amount: 600 });
  assert.equal(exact.body.applied, true);
  assert.equal(exact.body.delta, -400);
  assert.equal(exact.body.reservation.drawn, 600);
  let now = await figures(account);
  assert.deepEqual({ balance: now.balance, available: now.available, reserved: now.reserved }, { balance: 9_400, available: 9_400, reserved: 0 });
  // A new window alone is a change; the same window again is not.
  const window = new Date(Date.now() + 86_400_000).toISOString();
  const moved = await resize({ holdId, amount: 600, expiresAt: window });
  assert.equal(moved.body.applied, true);
  assert.equal(moved.body.delta, 0);
  assert.equal(moved.body.reservation.expires_at, window);
  assert.equal((await resize({ holdId, amount: 600, expiresAt: window })).body.applied, false);
  const past = new Date(Date.now() - 60_000).toISOString();
  assert.equal(refused(await resize({ holdId, amount: 600, expiresAt: past }), 422, 'invalid_request'), `expiresAt ${past} is not in the future; a hold needs an open window`);

  await release({ holdId, reason: 'engagement done' }).expect(200);
  assert.equal(refused(await resize({ holdId, amount: 2_000 }), 422, 'closed'), `reservation ${holdId} was released (engagement done); open a new hold instead`);
  now = await figures(account);
  assert.equal(now.reserved, 0);
  const ghost = unique('ghost');
  assert.equal(refused(await resize({ holdId: ghost, amount: 5 }), 404, 'no_such_object'), `there is no reservation ${ghost}`);
});

test('§6.13 draw: lines clamp in order; the last is cut short and capped, later ones kept at zero and capped', async () => {
  const caller = await binding.funded(1_000_000, 'caller');
  const owner = await binding.account('owner');
  const holdId = unique('eng');
  await hold({ holdId, account: caller, amount: 1_000 }).expect(200);
  const txnId = unique('win');
  const lines = [
    { meter: 'input_tokens', amount: 400 },
    { meter: 'output_tokens', amount: 500 },
    { meter: 'search', amount: 300 },
    { meter: 'storage', amount: 200 },
  ];
  const res = await draw({ holdId, txnId, caller, owner, lines, ref: 'window 1' });
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, {
    ok: true,
    applied: true,
    state: 'settled',
    billed: 1_000,
    refused: 400,
    remaining: 0,
    exhausted: true,
    lines: [plain('input_tokens', 400, false), plain('output_tokens', 500, false), plain('search', 100, true), plain('storage', 0, true)],
  });
  // One settlement, rate = retail = billed: no platform margin on metered work.
  const settlement = (await binding.http.get(`/internal/ledger/settlement/${txnId}`)).body;
  assert.equal(settlement.state, 'settled');
  assert.equal(settlement.account, caller);
  assert.equal(settlement.amount, 1_000);
  assert.deepEqual(settlement.legs, [
    { account: caller, delta: -1_000, kind: 'charge' },
    { account: owner, delta: 1_000, kind: 'earn' },
  ]);
  const now = await figures(caller);
  assert.deepEqual({ balance: now.balance, available: now.available, reserved: now.reserved }, { balance: 999_000, available: 999_000, reserved: 0 });
  assert.equal((await figures(owner)).balance, 1_000);
  // An exhausted hold bills nothing more, and says so line by line.
  const more = await draw({ holdId, txnId: unique('win'), caller, owner, lines: [{ meter: 'input_tokens', amount: 50 }] });
  assert.deepEqual(more.body, { ok: true, applied: true, state: 'settled', billed: 0, refused: 50, remaining: 0, exhausted: true, lines: [plain('input_tokens', 0, true)] });
  assert.equal((await figures(caller)).balance, 999_000);
});

test('§6.13 invariant 4: successive draws are measured over the whole hold; remaining and exhausted are exact', async () => {
  const caller = await binding.funded(10_000, 'caller');
  const owner = await binding.account('owner');
  const holdId = unique('eng');
  await hold({ holdId, account: caller, amount: 1_000 }).expect(200);
  const first = await draw({ holdId, txnId: unique('win'), caller, owner, lines: [{ meter: 'm', amount: 300 }] });
  assert.deepEqual([first.body.billed, first.body.refused, first.body.remaining, first.body.exhausted], [300, 0, 700, false]);
  const second = await draw({ holdId, txnId: unique('win'), caller, owner, lines: [{ meter: 'm', amount: 700 }, { meter: 'n', amount: 0 }] });
  assert.deepEqual([second.body.billed, second.body.refused, second.body.remaining, second.body.exhausted], [700, 0, 0, true]);
  assert.deepEqual(second.body.lines, [plain('m', 700, false), plain('n', 0, false)]);
  const read = await reservation(holdId);
  assert.equal(read.amount, 1_000);
  assert.equal(read.drawn, 1_000);
});

test('§6.6 §6.13 counted lines: amount = floor(count × per_unit / per), per written out as 1; a mismatch is refused', async () => {
  const caller = await binding.funded(1_000_000, 'caller');
  const owner = await binding.account('owner');
  const holdId = unique('eng');
  await hold({ holdId, account: caller, amount: 100_000 }).expect(200);
  const txnId = unique('win');
  const lines = [
    { meter: 'requests', unit: 'request', count: 1_234, per_unit: 3, amount: 3_702 },
    { meter: 'tokens', unit: 'token', count: 1_500, per: 1_000, per_unit: 2_000, amount: 3_000 },
    { meter: 'seconds', unit: 'second', count: 7, per: 3, per_unit: 10, amount: 23 },
    { meter: 'upstream', amount: 5_000, pass_through: true, upstream_receipt: 'rcpt_up_991' },
  ];
  const res = await draw({ holdId, txnId, caller, owner, lines });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.billed, 11_725);
  assert.deepEqual(res.body.lines, [
    { meter: 'requests', amount: 3_702, unit: 'request', count: 1_234, per: 1, per_unit: 3, pass_through: false, upstream_receipt: null, capped: false },
    { meter: 'tokens', amount: 3_000, unit: 'token', count: 1_500, per: 1_000, per_unit: 2_000, pass_through: false, upstream_receipt: null, capped: false },
    { meter: 'seconds', amount: 23, unit: 'second', count: 7, per: 3, per_unit: 10, pass_through: false, upstream_receipt: null, capped: false },
    { meter: 'upstream', amount: 5_000, unit: null, count: null, per: null, per_unit: null, pass_through: true, upstream_receipt: 'rcpt_up_991', capped: false },
  ]);
  // The record supports the buyer's recomputation.
  const read = await reservation(holdId);
  for (const record of read.draws.filter((d: { count: number | null }) => d.count !== null)) {
    assert.equal(record.amount, Math.floor((record.count * record.per_unit) / record.per));
  }
  const mismatch = await draw({ holdId, txnId: unique('win'), caller, owner, lines: [{ meter: 'seconds', count: 7, per: 3, per_unit: 10, amount: 24 }] });
  assert.equal(refused(mismatch, 422, 'invalid_request'), 'lines[0].amount 24 is not floor(count 7 × per_unit 10 / per 3) = 23');
  const half = await draw({ holdId, txnId: unique('win'), caller, owner, lines: [{ meter: 'm', amount: 1 }, { meter: 'seconds', count: 7, amount: 7 }] });
  assert.equal(refused(half, 422, 'invalid_request'), 'lines[1] gives count without per_unit; both are needed to recompute its amount');
  const noReceipt = await draw({ holdId, txnId: unique('win'), caller, owner, lines: [{ meter: 'm', amount: 1 }, { meter: 'upstream', amount: 10, pass_through: true }] });
  assert.equal(refused(noReceipt, 422, 'invalid_request'), 'lines[1] is a pass-through line and must name its upstream_receipt');
  assert.equal((await reservation(holdId)).drawn, 11_725);
});

test('§6.13 draw refusals: caller not the holder, unknown hold, unknown or machinery owner; nothing billed', async () => {
  const caller = await binding.funded(10_000, 'caller');
  const stranger = await binding.funded(10_000, 'stranger');
  const owner = await binding.account('owner');
  const holdId = unique('eng');
  await hold({ holdId, account: caller, amount: 1_000 }).expect(200);
  const txnId = unique('win');
  const line = [{ meter: 'm', amount: 10 }];
  assert.equal(refused(await draw({ holdId, txnId, caller: stranger, owner, lines: line }), 422, 'invalid_request'), `reservation ${holdId} belongs to ${caller}, not to the caller ${stranger}`);
  const ghostHold = unique('ghost');
  assert.equal(refused(await draw({ holdId: ghostHold, txnId, caller, owner, lines: line }), 404, 'no_such_object'), `there is no reservation ${ghostHold}`);
  const ghost = unique('ghost');
  assert.equal(refused(await draw({ holdId, txnId, caller, owner: ghost, lines: line }), 404, 'no_such_object'), `there is no account ${ghost}`);
  assert.equal(refused(await draw({ holdId, txnId, caller, owner: 'platform:fees', lines: line }), 422, 'invalid_request'), "platform:fees is this binding's own machinery and cannot be the owner");
  assert.equal((await binding.http.get(`/internal/ledger/settlement/${txnId}`)).body.state, 'unknown');
  assert.equal((await reservation(holdId)).drawn, 0);
  assert.equal((await figures(stranger)).balance, 10_000);
  assert.equal((await figures(caller)).balance, 10_000);
});

test('§6.13 §9 a replayed draw posts nothing and returns the same billed figure and lines, applied false', async () => {
  const caller = await binding.funded(10_000, 'caller');
  const owner = await binding.account('owner');
  const holdId = unique('eng');
  await hold({ holdId, account: caller, amount: 1_000 }).expect(200);
  const txnId = unique('win');
  const body = { holdId, txnId, caller, owner, lines: [{ meter: 'm', amount: 700 }, { meter: 'n', amount: 500 }] };
  const first = await draw(body);
  assert.deepEqual([first.body.billed, first.body.refused, first.body.remaining], [1_000, 200, 0]);
  await resize({ holdId, amount: 1_500 }).expect(200);
  const replay = await draw(body);
  assert.equal(replay.status, 200);
  // The stored outcome, not a re-clamp against the raised cap; remaining is the hold's now.
  assert.deepEqual(replay.body, { ...first.body, applied: false, remaining: 500, exhausted: false });
  assert.equal((await figures(caller)).balance, 9_000);
  assert.equal((await figures(owner)).balance, 1_000);
  assert.equal((await reservation(holdId)).drawn, 1_000);
  const conflict = await draw({ ...body, lines: [{ meter: 'm', amount: 700 }] });
  assert.match(refused(conflict, 422, 'terms_conflict'), new RegExp(`^transaction id ${txnId} was already used for a draw with other terms: `));
  // Released afterwards: the replay is still answered; a new draw is refused closed.
  await release({ holdId }).expect(200);
  assert.deepEqual((await draw(body)).body, { ...first.body, applied: false, remaining: 500, exhausted: false });
  const closed = await draw({ ...body, txnId: unique('win') });
  assert.equal(refused(closed, 422, 'closed'), `reservation ${holdId} was released (released by the caller); it admits no further draws`);
  assert.equal((await figures(caller)).balance, 9_000);
});

test('§6.14 invariant 3: release returns only the undrawn part, once; a second release is applied false, released 0', async () => {
  const account = await binding.funded(5_000, 'caller');
  const owner = await binding.account('owner');
  const before = await figures(account);
  const holdId = unique('eng');
  await hold({ holdId, account, amount: 2_000 }).expect(200);
  await draw({ holdId, txnId: unique('win'), caller: account, owner, lines: [{ meter: 'm', amount: 600 }] }).expect(200);
  assert.equal((await figures(account)).available, 3_000);
  const postings = await postingsCount(account);
  const res = await release({ holdId, reason: 'engagement complete' });
  assert.equal(res.status, 200);
  assert.equal(res.body.ok, true);
  assert.equal(res.body.applied, true);
  assert.equal(res.body.released, 1_400);
  assert.equal(res.body.reservation.status, 'released');
  assert.equal(res.body.reservation.release_reason, 'engagement complete');
  assert.equal(res.body.reservation.drawn, 600);
  assert.equal(res.body.reservation.amount, 2_000);
  assert.ok(Date.parse(res.body.reservation.released_at) > 0);
  // Available is restored exactly: all of it but what was drawn.
  let now = await figures(account);
  assert.deepEqual({ balance: now.balance, available: now.available, reserved: now.reserved }, { balance: before.balance - 600, available: before.available - 600, reserved: 0 });
  for (let i = 0; i < 2; i++) {
    const again = await release({ holdId, reason: 'engagement complete' });
    assert.deepEqual(again.body, { ok: true, applied: false, released: 0, reservation: res.body.reservation });
  }
  now = await figures(account);
  assert.equal(now.available, before.available - 600);
  // Nothing is posted either way.
  assert.equal(await postingsCount(account), postings);
  const ghost = unique('ghost');
  assert.equal(refused(await release({ holdId: ghost }), 404, 'no_such_object'), `there is no reservation ${ghost}`);
});

test('§6.15 a hold past its window is released without anyone asking: reads exclude it, draws are refused closed', async () => {
  const account = await binding.funded(10_000, 'caller');
  const drawer = await binding.funded(10_000, 'drawer');
  const swept = await binding.funded(10_000, 'swept');
  const listed = await binding.funded(10_000, 'listed');
  const detailed = await binding.funded(10_000, 'detailed');
  const summarized = await binding.funded(10_000, 'summarized');
  const owner = await binding.account('owner');
  const shortId = unique('short');
  const longId = unique('long');
  const drawerId = unique('drawer');
  const sweptId = unique('swept');
  const expiresAt = new Date(Date.now() + 1_500).toISOString();
  await hold({ holdId: shortId, account, amount: 3_000, expiresAt }).expect(200);
  await hold({ holdId: longId, account, amount: 2_000 }).expect(200);
  await hold({ holdId: drawerId, account: drawer, amount: 1_000, expiresAt }).expect(200);
  await hold({ holdId: sweptId, account: swept, amount: 2_000, expiresAt }).expect(200);
  const listedId = unique('listed');
  const detailedId = unique('detailed');
  await hold({ holdId: listedId, account: listed, amount: 1_000, expiresAt }).expect(200);
  await hold({ holdId: detailedId, account: detailed, amount: 1_000, expiresAt }).expect(200);
  await hold({ holdId: unique('summarized'), account: summarized, amount: 1_000, expiresAt }).expect(200);
  const drawId = unique('win');
  await draw({ holdId: shortId, txnId: drawId, caller: account, owner, lines: [{ meter: 'm', amount: 1_000 }] }).expect(200);
  const open = await figures(account);
  assert.deepEqual({ balance: open.balance, reserved: open.reserved, available: open.available }, { balance: 9_000, reserved: 4_000, available: 5_000 });

  await sleep(Math.max(0, Date.parse(expiresAt) - Date.now()) + 200);
  // Nothing has released them yet: what follows is each mechanism's own doing.
  const stored = await binding.db.knex('clearing_holds').whereIn('hold_id', [shortId, drawerId, sweptId]).select('status');
  assert.deepEqual(stored.map((r) => r.status), ['open', 'open', 'open']);

  // Lazily, on a read (and repeatably, invariant 13).
  const closed = await figures(account);
  assert.deepEqual({ balance: closed.balance, reserved: closed.reserved, available: closed.available }, { balance: 9_000, reserved: 2_000, available: 7_000 });
  assert.deepEqual(await figures(account), closed);
  const record = closed.reservations.find((r) => r.hold_id === shortId)!;
  assert.equal(record.status, 'released');
  assert.equal(record.release_reason, 'expired');
  assert.equal(record.released_at, expiresAt);
  assert.equal(record.drawn, 1_000);
  assert.equal(closed.reservations.find((r) => r.hold_id === longId)!.status, 'open');

  // Each of the other reads applies expiry itself before it answers (§6.5).
  const list = await binding.http.get(`/internal/ledger/reservations/${listed}`);
  assert.deepEqual([list.body.reserved, list.body.available, list.body.reservations[0].status], [0, 10_000, 'released']);
  const detail = await binding.http.get(`/internal/ledger/reservation/${detailedId}`);
  assert.deepEqual([detail.body.status, detail.body.release_reason], ['released', 'expired']);
  const summary = await binding.http.get(`/internal/ledger/summary/${summarized}`);
  assert.deepEqual([summary.body.reserved, summary.body.available, summary.body.reservations], [0, 10_000, []]);

  // Lazily, on a write: the first thing to touch this hold after its window is a draw.
  const late = await draw({ holdId: drawerId, txnId: unique('win'), caller: drawer, owner, lines: [{ meter: 'm', amount: 1 }] });
  assert.equal(refused(late, 422, 'closed'), `reservation ${drawerId} was released (expired); it admits no further draws`);
  assert.equal((await figures(drawer)).available, 10_000);

  // By the sweep, for the account nobody reads.
  assert.equal((await binding.db.knex('clearing_holds').where({ hold_id: sweptId }).first('status')).status, 'open');
  assert.ok((await expireHolds(binding.db.knex)) >= 1);
  assert.deepEqual(await binding.db.knex('clearing_holds').where({ hold_id: sweptId }).first('status', 'release_reason'), { status: 'released', release_reason: 'expired' });
  assert.equal(await expireHolds(binding.db.knex, swept), 0);
  assert.equal((await figures(swept)).available, 10_000);

  refused(await draw({ holdId: shortId, txnId: unique('win'), caller: account, owner, lines: [{ meter: 'm', amount: 1 }] }), 422, 'closed');
  refused(await resize({ holdId: shortId, amount: 5_000 }), 422, 'closed');
  assert.deepEqual((await release({ holdId: shortId })).body, { ok: true, applied: false, released: 0, reservation: record });
  // Reversing a draw of a hold that expired gives the value back, not the cap.
  await reverse({ txnId: unique('rev'), reverses: drawId, reason: 'refund' }).expect(200);
  const after = await figures(account);
  assert.deepEqual({ balance: after.balance, reserved: after.reserved, available: after.available }, { balance: 10_000, reserved: 2_000, available: 8_000 });
  assert.equal((await reservation(shortId)).drawn, 1_000);
});

test('§6.9 reversing a draw gives the cap back once while the hold is open', async () => {
  const caller = await binding.funded(10_000, 'caller');
  const owner = await binding.account('owner');
  const holdId = unique('eng');
  await hold({ holdId, account: caller, amount: 1_000 }).expect(200);
  const drawId = unique('win');
  await draw({ holdId, txnId: drawId, caller, owner, lines: [{ meter: 'm', amount: 600 }] }).expect(200);
  const rid = unique('rev');
  assert.deepEqual((await reverse({ txnId: rid, reverses: drawId, reason: 'bad window' })).body, { ok: true, applied: true, state: 'settled', amount: 600 });
  let read = await reservation(holdId);
  assert.equal(read.amount, 1_000);
  assert.equal(read.drawn, 0);
  let now = await figures(caller);
  assert.deepEqual({ balance: now.balance, reserved: now.reserved, available: now.available }, { balance: 10_000, reserved: 1_000, available: 9_000 });
  assert.equal((await figures(owner)).balance, 0);
  // Once: a replay and a second reversal give nothing more.
  assert.deepEqual((await reverse({ txnId: rid, reverses: drawId, reason: 'bad window' })).body, { ok: true, applied: false, state: 'settled', amount: 600 });
  refused(await reverse({ txnId: unique('rev'), reverses: drawId, reason: 'again' }), 422, 'already_reversed');
  read = await reservation(holdId);
  assert.equal(read.drawn, 0);
  // The draw stays on the record, and the whole cap can bill the replacement window.
  assert.deepEqual(read.draws.map((d: { txn_id: string; amount: number }) => [d.txn_id, d.amount]), [[drawId, 600]]);
  const replacement = await draw({ holdId, txnId: unique('win'), caller, owner, lines: [{ meter: 'm', amount: 1_200 }] });
  assert.deepEqual([replacement.body.billed, replacement.body.refused, replacement.body.remaining], [1_000, 200, 0]);
  now = await figures(caller);
  assert.deepEqual({ balance: now.balance, reserved: now.reserved, available: now.available }, { balance: 9_000, reserved: 0, available: 9_000 });
});

test('§6.9 reversing a draw of a released hold makes the payer whole and gives the hold nothing back', async () => {
  const caller = await binding.funded(10_000, 'caller');
  const owner = await binding.account('owner');
  const holdId = unique('eng');
  await hold({ holdId, account: caller, amount: 1_000 }).expect(200);
  const drawId = unique('win');
  await draw({ holdId, txnId: drawId, caller, owner, lines: [{ meter: 'm', amount: 600 }] }).expect(200);
  assert.equal((await release({ holdId })).body.released, 400);
  await reverse({ txnId: unique('rev'), reverses: drawId, reason: 'refund' }).expect(200);
  const read = await reservation(holdId);
  assert.deepEqual([read.status, read.amount, read.drawn], ['released', 1_000, 600]);
  const now = await figures(caller);
  assert.deepEqual({ balance: now.balance, reserved: now.reserved, available: now.available }, { balance: 10_000, reserved: 0, available: 10_000 });
  refused(await draw({ holdId, txnId: unique('win'), caller, owner, lines: [{ meter: 'm', amount: 1 }] }), 422, 'closed');
});

test('§6.5 §6.6 the reads: records oldest first with every field; draws oldest first; summary lists open holds only', async () => {
  const caller = await binding.funded(10_000, 'caller');
  const owner = await binding.account('owner');
  const a = unique('eng-a');
  const b = unique('eng-b');
  await hold({ holdId: a, account: caller, amount: 1_000, ref: 'sow a' }).expect(200);
  await hold({ holdId: b, account: caller, amount: 500 }).expect(200);
  const d1 = unique('win');
  const d2 = unique('win');
  await draw({ holdId: a, txnId: d1, caller, owner, lines: [{ meter: 'm', amount: 100 }, { meter: 'n', amount: 50 }] }).expect(200);
  await draw({ holdId: a, txnId: d2, caller, owner, lines: [{ meter: 'm', amount: 25 }] }).expect(200);
  await release({ holdId: b }).expect(200);

  const list = await binding.http.get(`/internal/ledger/reservations/${caller}`);
  assert.equal(list.status, 200);
  assert.deepEqual(Object.keys(list.body).sort(), ['account', 'available', 'balance', 'pending', 'reservations', 'reserved']);
  assert.deepEqual(list.body.reservations.map((r: Reservation) => [r.hold_id, r.status, r.amount, r.drawn]), [
    [a, 'open', 1_000, 175],
    [b, 'released', 500, 0],
  ]);
  for (const record of list.body.reservations) {
    assert.deepEqual(Object.keys(record).sort(), ['account', 'amount', 'drawn', 'expires_at', 'hold_id', 'memo', 'opened_at', 'ref', 'release_reason', 'released_at', 'status']);
  }
  const detail = await reservation(a);
  const { draws, ...record } = detail;
  assert.deepEqual(record, list.body.reservations[0]);
  assert.deepEqual(
    draws.map((d: Record<string, unknown>) => [d.hold_id, d.txn_id, d.meter, d.amount, d.capped]),
    [
      [a, d1, 'm', 100, false],
      [a, d1, 'n', 50, false],
      [a, d2, 'm', 25, false],
    ],
  );
  for (const d of draws) {
    assert.deepEqual(Object.keys(d).sort(), ['amount', 'capped', 'count', 'hold_id', 'meter', 'pass_through', 'per', 'per_unit', 'ts', 'txn_id', 'unit', 'upstream_receipt']);
  }
  assert.ok(Date.parse(draws[0].ts) <= Date.parse(draws[2].ts));
  const summary = await binding.http.get(`/internal/ledger/summary/${caller}`);
  assert.deepEqual(summary.body.reservations, [list.body.reservations[0]]);
  assert.equal(summary.body.reserved, 825);
  assert.equal(summary.body.available, 10_000 - 175 - 825);
});

test('§8 invariant 11: available may go negative when settlements outrun a hold; a new hold is then refused', async () => {
  const caller = await binding.funded(1_000, 'caller');
  const owner = await binding.account('owner');
  await hold({ holdId: unique('eng'), account: caller, amount: 800 }).expect(200);
  await binding.http.post('/internal/ledger/charge').send({ txnId: unique('work'), caller, owner, rate: 500, retail: 500 }).expect(200);
  const now = await figures(caller);
  assert.deepEqual({ balance: now.balance, reserved: now.reserved, available: now.available }, { balance: 500, reserved: 800, available: -300 });
  const res = await hold({ holdId: unique('eng'), account: caller, amount: 1 });
  assert.equal(refused(res, 422, 'insufficient_funds'), `a hold of 1 does not fit: -300 available on ${caller} (balance 500, reserved 800)`);
});

test('§6.12 invariant 11: with available negative, a reduction and a new window still apply; a raise is refused', async () => {
  const caller = await binding.funded(1_000, 'caller');
  const owner = await binding.account('owner');
  const holdId = unique('eng');
  await hold({ holdId, account: caller, amount: 800 }).expect(200);
  await binding.http.post('/internal/ledger/charge').send({ txnId: unique('work'), caller, owner, rate: 500, retail: 500 }).expect(200);
  const reduce = await resize({ holdId, amount: 700 });
  assert.equal(reduce.status, 200, JSON.stringify(reduce.body));
  assert.deepEqual([reduce.body.applied, reduce.body.delta, reduce.body.available], [true, -100, -200]);
  const window = new Date(Date.now() + 86_400_000).toISOString();
  const moved = await resize({ holdId, amount: 700, expiresAt: window });
  assert.equal(moved.status, 200, JSON.stringify(moved.body));
  assert.deepEqual([moved.body.applied, moved.body.delta, moved.body.available, moved.body.reservation.expires_at], [true, 0, -200, window]);
  const raise = await resize({ holdId, amount: 701 });
  assert.equal(refused(raise, 422, 'insufficient_funds'), `a raise of reservation ${holdId} of 1 does not fit: -200 available on ${caller} (balance 500, reserved 700)`);
  const now = await figures(caller);
  assert.deepEqual({ balance: now.balance, reserved: now.reserved, available: now.available }, { balance: 500, reserved: 700, available: -200 });
});
