/**
 * The reference binding under parallel requests (clearing-contract §8 invariants 3, 4, 12; §9;
 * §16 question 11): caps, idempotency keys and available hold when the same thing arrives many
 * times at once. On Postgres the requests really run in parallel (a pool of connections, row
 * locks); on PGlite they serialize. The assertions are the same on both.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type supertest from 'supertest';
import { inOneHour, unique, useTestBinding } from '../helpers/clearing.ts';

const binding = useTestBinding();

/** `count` copies of a request, all in flight at once. */
function parallel(count: number, request: (i: number) => supertest.Test): Promise<supertest.Response[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => request(i).then((res) => res)));
}

/** How many responses have each `status code`, e.g. { '200': 10, '422 insufficient_funds': 20 }. */
function tally(responses: supertest.Response[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const res of responses) {
    const key = res.status === 200 ? `200 applied:${res.body.applied}` : `${res.status} ${res.body.code}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

test('invariant 4: 50 parallel draws on one hold never exceed its cap; asked for more, they bill it exactly', async () => {
  const caller = await binding.funded(100_000, 'caller');
  const owner = await binding.account('owner');
  const holdId = unique('eng');
  await binding.http.post('/internal/ledger/hold').send({ holdId, account: caller, amount: 1_000, expiresAt: inOneHour() }).expect(200);
  const responses = await parallel(50, () =>
    binding.http.post('/internal/ledger/draw').send({ holdId, txnId: unique('win'), caller, owner, lines: [{ meter: 'tokens', amount: 30 }] }),
  );
  assert.deepEqual(tally(responses), { '200 applied:true': 50 });
  const billed = responses.map((r) => r.body.billed as number);
  assert.equal(billed.reduce((a, b) => a + b, 0), 1_000);
  // 1000 = 33 × 30 + 10: whatever the order, 33 full windows, one cut short, 16 refused whole.
  assert.deepEqual(
    { full: billed.filter((b) => b === 30).length, cut: billed.filter((b) => b === 10).length, none: billed.filter((b) => b === 0).length },
    { full: 33, cut: 1, none: 16 },
  );
  assert.equal(responses.filter((r) => r.body.exhausted).length, 17);
  const hold = (await binding.http.get(`/internal/ledger/reservation/${holdId}`)).body;
  assert.equal(hold.drawn, 1_000);
  assert.equal(hold.draws.length, 50);
  assert.deepEqual(await binding.balanceOf(caller), { account: caller, balance: 99_000, available: 99_000, reserved: 0, pending: 0 });
  assert.equal((await binding.balanceOf(owner)).balance, 1_000);
});

test('§9 20 parallel replays of one settle apply exactly once', async () => {
  const caller = await binding.funded(10_000, 'caller');
  const owner = await binding.account('owner');
  const txnId = unique('work');
  const responses = await parallel(20, () => binding.http.post('/internal/ledger/charge').send({ txnId, caller, owner, rate: 900, retail: 1_000 }));
  assert.deepEqual(tally(responses), { '200 applied:true': 1, '200 applied:false': 19 });
  assert.equal((await binding.balanceOf(caller)).balance, 9_000);
  assert.equal((await binding.balanceOf(owner)).balance, 900);
  const legs = (await binding.http.get(`/internal/ledger/settlement/${txnId}`)).body.legs;
  assert.equal(legs.length, 3);
});

test('§9 20 parallel replays of one credit and of one draw apply exactly once', async () => {
  const account = await binding.account();
  const owner = await binding.account('owner');
  const pay = unique('pay');
  const credits = await parallel(20, () => binding.http.post('/internal/ledger/purchase').send({ txnId: pay, account, amount: 5_000 }));
  assert.deepEqual(tally(credits), { '200 applied:true': 1, '200 applied:false': 19 });
  assert.equal((await binding.balanceOf(account)).balance, 5_000);

  const holdId = unique('eng');
  await binding.http.post('/internal/ledger/hold').send({ holdId, account, amount: 1_000, expiresAt: inOneHour() }).expect(200);
  const txnId = unique('win');
  const draws = await parallel(20, () =>
    binding.http.post('/internal/ledger/draw').send({ holdId, txnId, caller: account, owner, lines: [{ meter: 'm', amount: 700 }, { meter: 'n', amount: 700 }] }),
  );
  assert.deepEqual(tally(draws), { '200 applied:true': 1, '200 applied:false': 19 });
  for (const res of draws) {
    assert.equal(res.body.billed, 1_000);
    assert.equal(res.body.refused, 400);
    assert.deepEqual(
      res.body.lines.map((l: { amount: number; capped: boolean }) => [l.amount, l.capped]),
      [
        [700, false],
        [300, true],
      ],
    );
  }
  assert.equal((await binding.balanceOf(account)).balance, 4_000);
  assert.equal((await binding.http.get(`/internal/ledger/reservation/${holdId}`)).body.drawn, 1_000);
});

test('§6.11 30 parallel holds of 100 on 1000 available: exactly 10 succeed, 20 are insufficient_funds', async () => {
  const account = await binding.funded(1_000);
  const responses = await parallel(30, () => binding.http.post('/internal/ledger/hold').send({ holdId: unique('eng'), account, amount: 100, expiresAt: inOneHour() }));
  assert.deepEqual(tally(responses), { '200 applied:true': 10, '422 insufficient_funds': 20 });
  for (const res of responses.filter((r) => r.status === 422)) {
    assert.deepEqual([res.body.asked, res.body.available, res.body.balance, res.body.reserved], [100, 0, 1_000, 1_000]);
  }
  assert.deepEqual(await binding.balanceOf(account), { account, balance: 1_000, available: 0, reserved: 1_000, pending: 0 });
});

test('§6.11 §6.14 the same hold opened and released 20 times at once: committed once, released once', async () => {
  const account = await binding.funded(1_000);
  const owner = await binding.account('owner');
  const holdId = unique('eng');
  const expiresAt = inOneHour();
  const opens = await parallel(20, () => binding.http.post('/internal/ledger/hold').send({ holdId, account, amount: 600, expiresAt }));
  assert.deepEqual(tally(opens), { '200 applied:true': 1, '200 applied:false': 19 });
  assert.equal((await binding.balanceOf(account)).reserved, 600);
  await binding.http.post('/internal/ledger/draw').send({ holdId, txnId: unique('win'), caller: account, owner, lines: [{ meter: 'm', amount: 250 }] }).expect(200);
  const releases = await parallel(20, () => binding.http.post('/internal/ledger/release').send({ holdId }));
  assert.deepEqual(tally(releases), { '200 applied:true': 1, '200 applied:false': 19 });
  assert.deepEqual(
    releases.map((r) => r.body.released as number).sort((a, b) => b - a),
    [350, ...Array(19).fill(0)],
  );
  assert.deepEqual(await binding.balanceOf(account), { account, balance: 750, available: 750, reserved: 0, pending: 0 });
});

test('§6.9 parallel reversals of one transaction under different ids: exactly one applies, the rest name it', async () => {
  const caller = await binding.funded(10_000, 'caller');
  const owner = await binding.account('owner');
  const txnId = unique('work');
  await binding.http.post('/internal/ledger/charge').send({ txnId, caller, owner, rate: 2_000, retail: 2_500 }).expect(200);
  const ids = Array.from({ length: 10 }, () => unique('rev'));
  const responses = await parallel(10, (i) => binding.http.post('/internal/ledger/reverse').send({ txnId: ids[i], reverses: txnId, reason: 'refund' }));
  assert.deepEqual(tally(responses), { '200 applied:true': 1, '422 already_reversed': 9 });
  const winner = ids[responses.findIndex((r) => r.status === 200)];
  for (const res of responses.filter((r) => r.status === 422)) {
    assert.equal(res.body.error, `${txnId} was already reversed by ${winner}`);
    assert.equal(res.body.reversed_by, winner);
  }
  assert.equal((await binding.http.get(`/internal/ledger/settlement/${txnId}`)).body.reversed_by, winner);
  assert.equal((await binding.balanceOf(caller)).balance, 10_000);
  assert.equal((await binding.balanceOf(owner)).balance, 0);
});

test('§9 20 parallel replays of one reversal: one applies, 19 answer applied false with the same amount', async () => {
  const caller = await binding.funded(10_000, 'caller');
  const owner = await binding.account('owner');
  const txnId = unique('work');
  await binding.http.post('/internal/ledger/charge').send({ txnId, caller, owner, rate: 1_500, retail: 1_500 }).expect(200);
  const rid = unique('rev');
  const responses = await parallel(20, () => binding.http.post('/internal/ledger/reverse').send({ txnId: rid, reverses: txnId, reason: 'refund' }));
  assert.deepEqual(tally(responses), { '200 applied:true': 1, '200 applied:false': 19 });
  for (const res of responses) assert.equal(res.body.amount, 1_500);
  assert.equal((await binding.balanceOf(caller)).balance, 10_000);
  assert.equal((await binding.balanceOf(owner)).balance, 0);
});

test('§6.9 parallel reversals of one draw give the cap back once', async () => {
  const caller = await binding.funded(10_000, 'caller');
  const owner = await binding.account('owner');
  const holdId = unique('eng');
  await binding.http.post('/internal/ledger/hold').send({ holdId, account: caller, amount: 1_000, expiresAt: inOneHour() }).expect(200);
  const drawId = unique('win');
  await binding.http.post('/internal/ledger/draw').send({ holdId, txnId: drawId, caller, owner, lines: [{ meter: 'm', amount: 400 }] }).expect(200);
  const responses = await parallel(10, () => binding.http.post('/internal/ledger/reverse').send({ txnId: unique('rev'), reverses: drawId, reason: 'refund' }));
  assert.deepEqual(tally(responses), { '200 applied:true': 1, '422 already_reversed': 9 });
  const hold = (await binding.http.get(`/internal/ledger/reservation/${holdId}`)).body;
  assert.equal(hold.drawn, 0);
  assert.deepEqual(await binding.balanceOf(caller), { account: caller, balance: 10_000, available: 9_000, reserved: 1_000, pending: 0 });
});

test('§9 one id first used at two doors at once (no account in common): one applies, the other is terms_conflict', async () => {
  for (let round = 0; round < 5; round++) {
    const funded = await binding.account('funded');
    const caller = await binding.account('caller');
    const owner = await binding.account('owner');
    const txnId = unique('race');
    const [asCredit, asSettle] = await Promise.all([
      binding.http.post('/internal/ledger/purchase').send({ txnId, account: funded, amount: 100 }),
      binding.http.post('/internal/ledger/charge').send({ txnId, caller, owner, rate: 100, retail: 100 }),
    ]);
    assert.deepEqual(tally([asCredit, asSettle]), { '200 applied:true': 1, '422 terms_conflict': 1 });
    const door = (await binding.http.get(`/internal/ledger/settlement/${txnId}`)).body.account === funded ? 'credit' : 'settle';
    assert.equal((door === 'credit' ? asCredit : asSettle).status, 200);
    const sum = (await binding.balanceOf(funded)).balance + (await binding.balanceOf(caller)).balance + (await binding.balanceOf(owner)).balance;
    assert.equal(sum, door === 'credit' ? 100 : 0);
  }
});

test('§6.12 10 parallel replays of one raise apply once: the cap does not walk upward', async () => {
  const account = await binding.funded(10_000);
  const holdId = unique('eng');
  await binding.http.post('/internal/ledger/hold').send({ holdId, account, amount: 400, expiresAt: inOneHour() }).expect(200);
  const responses = await parallel(10, () => binding.http.post('/internal/ledger/resize').send({ holdId, amount: 900 }));
  assert.deepEqual(tally(responses), { '200 applied:true': 1, '200 applied:false': 9 });
  assert.deepEqual(responses.map((r) => r.body.delta as number).sort((a, b) => b - a), [500, ...Array(9).fill(0)]);
  assert.equal((await binding.http.get(`/internal/ledger/reservation/${holdId}`)).body.amount, 900);
  assert.deepEqual(await binding.balanceOf(account), { account, balance: 10_000, available: 9_100, reserved: 900, pending: 0 });
});

test('invariant 12: one holdId opened, and one draw id used, on two accounts at once: one applies, the other is terms_conflict', async () => {
  for (let round = 0; round < 3; round++) {
    const first = await binding.funded(1_000, 'first');
    const second = await binding.funded(1_000, 'second');
    const owner = await binding.account('owner');
    const holdId = unique('eng');
    const opens = await Promise.all(
      [first, second].map((account) => binding.http.post('/internal/ledger/hold').send({ holdId, account, amount: 300, expiresAt: inOneHour() })),
    );
    assert.deepEqual(tally(opens), { '200 applied:true': 1, '422 terms_conflict': 1 });
    const holder = opens.find((r) => r.status === 200)!.body.reservation.account;
    assert.equal((await binding.balanceOf(first)).reserved + (await binding.balanceOf(second)).reserved, 300);

    const holdA = unique('eng');
    const holdB = unique('eng');
    await binding.http.post('/internal/ledger/hold').send({ holdId: holdA, account: first, amount: 100, expiresAt: inOneHour() }).expect(200);
    await binding.http.post('/internal/ledger/hold').send({ holdId: holdB, account: second, amount: 100, expiresAt: inOneHour() }).expect(200);
    const txnId = unique('win');
    const draws = await Promise.all([
      binding.http.post('/internal/ledger/draw').send({ holdId: holdA, txnId, caller: first, owner, lines: [{ meter: 'm', amount: 40 }] }),
      binding.http.post('/internal/ledger/draw').send({ holdId: holdB, txnId, caller: second, owner, lines: [{ meter: 'm', amount: 40 }] }),
    ]);
    assert.deepEqual(tally(draws), { '200 applied:true': 1, '422 terms_conflict': 1 });
    const drawn = (await binding.http.get(`/internal/ledger/reservation/${holdA}`)).body.drawn + (await binding.http.get(`/internal/ledger/reservation/${holdB}`)).body.drawn;
    assert.equal(drawn, 40);
    assert.equal((await binding.balanceOf(owner)).balance, 40);
    assert.ok([first, second].includes(holder));
  }
});

test('parallel settlements in opposite directions between two accounts neither deadlock nor lose a posting', async () => {
  const a = await binding.funded(100_000, 'a');
  const b = await binding.funded(100_000, 'b');
  const responses = await parallel(40, (i) =>
    binding.http
      .post('/internal/ledger/charge')
      .send(i % 2 === 0 ? { txnId: unique('ab'), caller: a, owner: b, rate: 90, retail: 100 } : { txnId: unique('ba'), caller: b, owner: a, rate: 45, retail: 50 }),
  );
  assert.deepEqual(tally(responses), { '200 applied:true': 40 });
  // a: 20 × (−100) + 20 × 45; b: 20 × 90 + 20 × (−50).
  assert.equal((await binding.balanceOf(a)).balance, 100_000 - 2_000 + 900);
  assert.equal((await binding.balanceOf(b)).balance, 100_000 + 1_800 - 1_000);
});

test('parallel draws, a resize and a release on one hold keep invariants 4 and 5', async () => {
  const caller = await binding.funded(100_000, 'caller');
  const owner = await binding.account('owner');
  const holdId = unique('eng');
  await binding.http.post('/internal/ledger/hold').send({ holdId, account: caller, amount: 2_000, expiresAt: inOneHour() }).expect(200);
  const requests: supertest.Test[] = [];
  for (let i = 0; i < 30; i++) {
    requests.push(binding.http.post('/internal/ledger/draw').send({ holdId, txnId: unique('win'), caller, owner, lines: [{ meter: 'm', amount: 100 }] }));
    if (i === 10) requests.push(binding.http.post('/internal/ledger/resize').send({ holdId, amount: 1_500 }));
    if (i === 25) requests.push(binding.http.post('/internal/ledger/release').send({ holdId }));
  }
  const responses = await Promise.all(requests);
  const hold = (await binding.http.get(`/internal/ledger/reservation/${holdId}`)).body;
  const draws = responses.filter((r) => r.body.billed !== undefined);
  const billed = draws.reduce((sum, r) => sum + (r.body.billed as number), 0);
  assert.equal(hold.status, 'released');
  assert.equal(hold.drawn, billed);
  assert.ok(hold.drawn <= hold.amount, `drawn ${hold.drawn} exceeds cap ${hold.amount}`);
  // A resize below what was drawn by then is refused, never applied.
  const resized = responses[11];
  if (resized.status === 200) assert.equal(hold.amount, 1_500);
  else {
    assert.equal(resized.body.code, 'invalid_request');
    assert.equal(hold.amount, 2_000);
  }
  // Every draw after the release was refused closed; none billed past it.
  for (const res of responses) assert.ok(res.status === 200 || ['closed', 'invalid_request'].includes(res.body.code), JSON.stringify(res.body));
  const release = responses.find((r) => r.body.released !== undefined)!;
  assert.equal(release.body.released, release.body.reservation.amount - release.body.reservation.drawn);
  assert.deepEqual(await binding.balanceOf(caller), { account: caller, balance: 100_000 - billed, available: 100_000 - billed, reserved: 0, pending: 0 });
});
