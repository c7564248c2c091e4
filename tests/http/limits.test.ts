/**
 * Bad input at the edges of both servers (issue 8 §1.6, §1.7, §2): every documented bound is
 * refused with 422 `invalid_request` naming it, another charset with 415, a NUL or a lone
 * surrogate anywhere in a request is refused (never rewritten), amounts stay within
 * MAX_AMOUNT_MICROS, and nothing refused changes a balance. None of these answers 500.
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_AMOUNT_MICROS } from '../../src/contracts/money.ts';
import { MAX_JSON_DEPTH, urlFault } from '../../src/http/wellformed.ts';
import { refused, unique, useTestBinding } from '../helpers/clearing.ts';
import { useTestGateway, type TestMandate } from '../helpers/gateway.ts';

/** superagent serializes a Buffer sent under a JSON media type as JSON; this sends its bytes as they are. */
const bytesAsTheyAre = (body: unknown) => body as string;

/** `{"a":{"a":...{"a":1}}}` nested `levels` deep, as JSON text. */
const nested = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

/** 512 characters that take 4 bytes each in UTF-8 and do not compress: the longest id, at its heaviest. */
const heaviestId = (seed = 1) => Array.from({ length: 512 }, (_, i) => String.fromCodePoint(0x20000 + (((i + seed) * 2654435761) % 42000))).join('');

test('§1.7 urlFault: a plain ASCII target passes; escapes and raw bytes are decoded and checked (Node hands the target over as latin1)', () => {
  assert.equal(urlFault('/internal/ledger/balance/acct-1?limit=5&x=a+b'), null);
  assert.equal(urlFault('/internal/ledger/balance/caf%C3%A9'), null);
  assert.equal(urlFault('/internal/ledger/balance/caf\u00c3\u00a9'), null, 'raw UTF-8 bytes of é');
  assert.equal(urlFault('/a/%zz'), 'the request target has a malformed percent escape at position 3');
  assert.equal(urlFault('/a/100%'), 'the request target has a malformed percent escape at position 6');
  assert.equal(urlFault('/a/\u00ff'), 'the request target is not UTF-8 once percent-decoded (an encoded surrogate or an invalid byte sequence)');
  assert.equal(urlFault('/a/%ED%A0%80'), 'the request target is not UTF-8 once percent-decoded (an encoded surrogate or an invalid byte sequence)');
  assert.equal(urlFault('/a/b%00'), 'the request target contains a NUL character');
  assert.equal(urlFault('/a/b\u0000'), 'the request target contains a NUL character');
  assert.equal(urlFault('/a/b\u0001'), null, 'a control character other than NUL is well-formed');
});

describe('the binding', () => {
  const binding = useTestBinding();

  test('§1.7 a lone surrogate in a transaction id is refused, so two ids are never stored as one', async () => {
    const account = await binding.account();
    for (const escaped of ['\\ud800', '\\udbff']) {
      const res = await binding.http
        .post('/internal/ledger/purchase')
        .set('content-type', 'application/json')
        .send(`{"txnId":"pay-${escaped}","account":"${account}","amount":5}`);
      assert.equal(refused(res, 422, 'invalid_request'), 'invalid request: body.txnId contains a lone surrogate (not well-formed Unicode)');
    }
    const pair = await binding.http.post('/internal/ledger/purchase').send({ txnId: unique('pay-😀'), account, amount: 5 });
    assert.equal(pair.status, 200, 'a well-formed surrogate pair is an ordinary character');
    assert.equal((await binding.balanceOf(account)).balance, 5);
  });

  test('§1.7 a NUL or a lone surrogate anywhere in a request is refused 422, in body strings, keys, path and query', async () => {
    const account = await binding.account();
    const cases: Array<[Promise<import('supertest').Response>, string]> = [
      [binding.http.post('/internal/ledger/purchase').send({ txnId: 'x\u0000y', account, amount: 5 }), 'invalid request: body.txnId contains a NUL character'],
      [binding.http.post('/internal/ledger/purchase').send({ txnId: unique('t'), account, amount: 5, ref: 'a\u0000' }), 'invalid request: body.ref contains a NUL character'],
      [
        binding.http.post('/internal/ledger/purchase').set('content-type', 'application/json').send(`{"txnId":"t","account":"${account}","amount":5,"\\udc00":1}`),
        'invalid request: a key of body contains a lone surrogate (not well-formed Unicode)',
      ],
      [binding.http.post('/internal/reference/accounts').send({ account: 'a\u0000' }), 'invalid request: body.account contains a NUL character'],
      [binding.http.get('/internal/ledger/balance/a%00b'), 'invalid request: the request target contains a NUL character'],
      [
        binding.http.get('/internal/ledger/balance/%ED%A0%80'),
        'invalid request: the request target is not UTF-8 once percent-decoded (an encoded surrogate or an invalid byte sequence)',
      ],
      [binding.http.get(`/internal/ledger/summary/${account}?limit=1%00`), 'invalid request: the request target contains a NUL character'],
      [binding.http.get(`/internal/ledger/summary/${account}?x=%FF`), 'invalid request: the request target is not UTF-8 once percent-decoded (an encoded surrogate or an invalid byte sequence)'],
      [
        binding.http
          .post('/internal/ledger/purchase')
          .set('content-type', 'application/json')
          .serialize(bytesAsTheyAre)
          .send(Buffer.concat([Buffer.from('{"txnId":"bad'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from(`","account":"${account}","amount":5}`)])),
        'invalid request: the body is not UTF-8 (an encoded surrogate or an invalid byte sequence)',
      ],
    ];
    for (const [request, message] of cases) assert.equal(refused(await request, 422, 'invalid_request'), message);
    assert.equal((await binding.balanceOf(account)).balance, 0);
  });

  test('§1.6 an amount above MAX_AMOUNT_MICROS is refused, so no account can be poisoned past the safe range', async () => {
    const account = await binding.account();
    for (let i = 0; i < 2; i++) {
      const res = await binding.http.post('/internal/ledger/purchase').send({ txnId: unique('huge'), account, amount: Number.MAX_SAFE_INTEGER });
      assert.equal(refused(res, 422, 'invalid_request'), 'invalid request: body.amount must be <= 999999999999999');
    }
    const adjust = await binding.http.post('/internal/ledger/adjust').send({ txnId: unique('adj'), account, delta: -(MAX_AMOUNT_MICROS + 1), reason: 'r' });
    assert.equal(refused(adjust, 422, 'invalid_request'), 'invalid request: body.delta must be >= -999999999999999');
    assert.equal((await binding.http.post('/internal/ledger/purchase').send({ txnId: unique('max'), account, amount: MAX_AMOUNT_MICROS })).status, 200);
    assert.equal((await binding.balanceOf(account)).balance, MAX_AMOUNT_MICROS);
    assert.equal((await binding.http.get('/internal/ledger/balance/external%3Afunding')).status, 200);
    assert.equal((await binding.http.get(`/internal/ledger/summary/${account}`)).status, 200);
  });

  test('§2 ids longer than 512 characters are refused naming the bound; 512 heavy characters are stored', async () => {
    const account = await binding.account();
    const long = await binding.http.post('/internal/ledger/purchase').send({ txnId: 'x'.repeat(3000), account, amount: 5 });
    assert.equal(refused(long, 422, 'invalid_request'), 'invalid request: body.txnId must NOT have more than 512 characters');
    const path = await binding.http.get(`/internal/ledger/settlement/${'y'.repeat(513)}`);
    assert.equal(refused(path, 422, 'invalid_request'), 'invalid request: path.txnId must NOT have more than 512 characters');
    const memo = await binding.http.post('/internal/ledger/purchase').send({ txnId: unique('memo'), account, amount: 5, ref: 'r'.repeat(1001) });
    assert.equal(refused(memo, 422, 'invalid_request'), 'invalid request: body.ref must NOT have more than 1000 characters');
    const heavy = await binding.http.post('/internal/ledger/purchase').send({ txnId: heaviestId(), account, amount: 5 });
    assert.equal(heavy.status, 200, JSON.stringify(heavy.body));
    const heavyAccount = await binding.http.post('/internal/reference/accounts').send({ account: heaviestId(7) });
    assert.equal(heavyAccount.status, 200, JSON.stringify(heavyAccount.body));
    assert.equal((await binding.balanceOf(account)).balance, 5);
  });

  test('§2 a draw has at most 1000 lines, asking for at most MAX_AMOUNT_MICROS in total', async () => {
    const caller = await binding.funded(10_000);
    const owner = await binding.account('owner');
    const holdId = unique('hold');
    assert.equal((await binding.http.post('/internal/ledger/hold').send({ holdId, account: caller, amount: 5_000, expiresAt: '2099-01-01T00:00:00Z' })).status, 200);
    const draw = (lines: unknown[]) => binding.http.post('/internal/ledger/draw').send({ holdId, txnId: unique('draw'), caller, owner, lines });
    const many = await draw(Array.from({ length: 6000 }, () => ({ meter: 'm', amount: 0 })));
    assert.equal(refused(many, 422, 'invalid_request'), 'invalid request: body.lines must NOT have more than 1000 items');
    const sum = await draw([{ meter: 'm', amount: MAX_AMOUNT_MICROS }, { meter: 'm', amount: 1 }]);
    assert.equal(refused(sum, 422, 'invalid_request'), `invalid request: body.lines ask for ${MAX_AMOUNT_MICROS + 1} in total; a draw asks for at most ${MAX_AMOUNT_MICROS}, the largest amount`);
    assert.deepEqual(await binding.balanceOf(caller), { account: caller, balance: 10_000, available: 5_000, reserved: 5_000, pending: 0 });
    const full = await draw(Array.from({ length: 1000 }, () => ({ meter: 'm', amount: 1 })));
    assert.equal(full.status, 200, JSON.stringify(full.body).slice(0, 300));
    assert.equal(full.body.billed, 1000);
  });

  test('§2 a body in another charset is refused 415, not read as UTF-8; a body nested too deep 422', async () => {
    const account = await binding.account();
    const utf16 = await binding.http
      .post('/internal/ledger/purchase')
      .set('content-type', 'application/json; charset=utf-16')
      .serialize(bytesAsTheyAre)
      .send(Buffer.from(JSON.stringify({ txnId: unique('u16'), account, amount: 5 }), 'utf16le'));
    assert.equal(refused(utf16, 415, 'invalid_request'), 'the body is sent in charset utf-16; only UTF-8 is accepted');
    const deep = await binding.http.post('/internal/ledger/purchase').set('content-type', 'application/json').send(`{"txnId":"d","account":"${account}","amount":5,"ref":${nested(10_000)}}`);
    assert.equal(refused(deep, 422, 'invalid_request'), `invalid request: body.ref.a${'.a'.repeat(MAX_JSON_DEPTH - 2)} is nested deeper than ${MAX_JSON_DEPTH} levels, the most accepted`);
    assert.equal((await binding.balanceOf(account)).balance, 0);
  });
});

describe('the gateway', () => {
  const gateway = useTestGateway();
  let mandate: TestMandate;
  before(async () => {
    mandate = await gateway.mandate();
  });

  test('§2 call input nested 10,000 levels deep is refused 422 naming the bound, not a stack overflow', async () => {
    const before = await gateway.balance(mandate.payer);
    const body = `{"mandate":"${mandate.id}","agent":"acme/table-extract","input":${nested(10_000)}}`;
    const res = await gateway.http.post('/v0/calls').set('content-type', 'application/json').send(body);
    assert.equal(refused(res, 422, 'invalid_request'), `invalid request: body.input${'.a'.repeat(MAX_JSON_DEPTH - 1)} is nested deeper than ${MAX_JSON_DEPTH} levels, the most accepted`);
    const fits = await gateway.http
      .post('/v0/calls')
      .set('content-type', 'application/json')
      .send(`{"mandate":"${mandate.id}","agent":"acme/table-extract","input":{"text":"a;b","deep":${nested(MAX_JSON_DEPTH - 3)}}}`);
    assert.equal(fits.status, 422, 'the deepest accepted input reaches the agent check');
    assert.equal(fits.body.code, 'rejected_input');
    assert.equal(await gateway.balance(mandate.payer), before);
  });

  test('§1.7 a NUL or a lone surrogate in a call, a path or a query is refused 422 before anything runs', async () => {
    const before = await gateway.balance(mandate.payer);
    const receipts = (await gateway.http.get('/v0/receipts').expect(200)).body.receipts.length;
    const cases: Array<[Promise<import('supertest').Response>, string]> = [
      [gateway.call({ mandate: `${mandate.id}\u0000`, agent: 'acme/table-extract', input: { text: 'a;b' } }), 'invalid request: body.mandate contains a NUL character'],
      [gateway.call({ mandate: mandate.id, agent: 'acme/table-extract', input: { text: 'a;b\u0000' } }), 'invalid request: body.input.text contains a NUL character'],
      [
        gateway.http.post('/v0/calls').set('content-type', 'application/json').send(`{"mandate":"${mandate.id}","agent":"acme/table-extract","input":{"text":"a;b","\\ud800x":1}}`),
        'invalid request: a key of body.input contains a lone surrogate (not well-formed Unicode)',
      ],
      [gateway.http.get('/v0/receipts/r%00'), 'invalid request: the request target contains a NUL character'],
      [gateway.http.get('/v0/mandates/a%00/b'), 'invalid request: the request target contains a NUL character'],
      [gateway.http.get('/v0/agents?mandate=a%00'), 'invalid request: the request target contains a NUL character'],
      [gateway.http.get('/v0/receipts?mandate=%ED%B0%80'), 'invalid request: the request target is not UTF-8 once percent-decoded (an encoded surrogate or an invalid byte sequence)'],
      [gateway.http.post('/v0/approvals/a%00').send({}), 'invalid request: the request target contains a NUL character'],
    ];
    for (const [request, message] of cases) assert.equal(refused(await request, 422, 'invalid_request'), message);
    assert.equal((await gateway.http.get('/v0/receipts').expect(200)).body.receipts.length, receipts, 'no receipt for a request refused at the door');
    assert.equal(await gateway.balance(mandate.payer), before);
  });

  test('§2 ids beyond 512 characters and a body in another charset are refused, naming the bound', async () => {
    const long = await gateway.call({ mandate: mandate.id, capability: 'x'.repeat(513), input: {} });
    assert.equal(refused(long, 422, 'invalid_request'), 'invalid request: body.capability must NOT have more than 512 characters');
    const path = await gateway.http.get(`/v0/receipts/${'r'.repeat(5000)}`);
    assert.equal(refused(path, 422, 'invalid_request'), 'invalid request: path.id must NOT have more than 512 characters');
    const utf16 = await gateway.http
      .post('/v0/calls')
      .set('content-type', 'application/json; charset=UTF-16')
      .serialize(bytesAsTheyAre)
      .send(Buffer.from(JSON.stringify({ mandate: mandate.id, agent: 'acme/table-extract', input: { text: 'a;b' } }), 'utf16le'));
    assert.equal(refused(utf16, 415, 'invalid_request'), 'the body is sent in charset utf-16; only UTF-8 is accepted');
  });

  test('§1.6 a max_cost above the largest amount is refused 422 with a receipt naming the bound', async () => {
    const res = await gateway.call({ mandate: mandate.id, agent: 'acme/table-extract', input: { text: 'a;b' }, max_cost: '1000000000' });
    assert.equal(refused(res, 422, 'invalid_request'), 'max_cost: "1000000000" is more than 999999999.999999, the largest amount accepted');
    assert.equal(res.body.receipt.billed, false);
  });

  test('§1.6 a max_cost with a sign or an exponent is refused 422 with a receipt naming the bound', async () => {
    for (const max_cost of ['-1.00', '-0', '1e3']) {
      const res = await gateway.call({ mandate: mandate.id, agent: 'acme/table-extract', input: { text: 'a;b' }, max_cost });
      assert.equal(refused(res, 422, 'invalid_request'), `max_cost: ${JSON.stringify(max_cost)} is not a decimal string from 0 to 999999999.999999 such as "0.10"`, max_cost);
      assert.equal(res.body.receipt.billed, false);
    }
  });

  test('§2 the gateway\'s 500 names the gateway, never the binding', async () => {
    // A database that went away under the gateway: an unexpected failure of the gateway itself.
    await gateway.running.db.knex.destroy();
    const res = await gateway.http.get('/v0/receipts');
    assert.equal(res.status, 500);
    assert.deepEqual(res.body, { error: 'an unexpected failure inside the gateway; the details are in its log', code: 'internal_error' });
  });
});
