/**
 * Accounts, keys, mandates and approvals of the hosted gateway (gateway §7 "Accounts",
 * "Principals", "Approvals and attended clients"): sign-up with its credit through the clearing
 * seam, handle rules, keys stored as SHA-256, revocation, hosted mandates, admin credit, and the
 * three decisions on an approval.
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { HttpClearingPort } from '../../src/gateway/clearing.ts';
import { EXAMPLE_AGENTS, FIXTURE_AGENTS } from '../helpers/gateway.ts';
import { ADMIN_KEY, bearer, carefulMandate, uniqueAccount, useTestHosted, type TestAccount } from '../helpers/hosted.ts';
import { setUp } from '../helpers/hooks.ts';

const hosted = useTestHosted({ agent_dirs: [FIXTURE_AGENTS, EXAMPLE_AGENTS] });
let clearing: HttpClearingPort;

/** The authors of the agents this gateway ships (the test agents and the examples): no hosted account is theirs. */
const SHIPPED_AUTHORS = ['acme', 'gt', 'gtbase', 'gtfork', 'gtfork2', 'gtinc', 'gto', 'gtusd', 'holon-labs', 'lena'];

setUp(() => {
  clearing = new HttpClearingPort(hosted.running.clearing_url);
});

describe('sign-up', () => {
  test('gives 5.00 EUR credited from external:demo-credit under signup:<handle>, a sandbox mandate and two keys', async () => {
    const account = await hosted.signup();
    const me = await hosted.http.get('/v0/me').set(bearer(account.human)).expect(200);
    assert.equal(me.body.balance.balance, '5.00');
    assert.deepEqual(me.body.mandates, [`${account.handle}/sandbox`]);
    assert.deepEqual(me.body.keys.map((k: { kind: string; ask_in_client: boolean }) => [k.kind, k.ask_in_client]), [['human', false], ['agent', true]]);
    // The credit was recorded under signup:<handle>: the same transaction id again applies nothing.
    const replay = await clearing.credit(`signup:${account.handle}`, account.handle, 5_000_000, 'replay', true);
    assert.equal((replay as { applied: boolean }).applied, false);
    const agentView = await hosted.http.get('/v0/me').set(bearer(account.agent)).expect(200);
    assert.deepEqual(agentView.body.budget, { currency: 'EUR', total: '5.00', spent: '0.00', reserved: '0.00', remaining: '5.00' });
  });

  test('stores keys as SHA-256 only', async () => {
    const account = await hosted.signup();
    const rows = await hosted.running.db.knex('hosted_keys').where({ account: account.handle }).orderBy('kind', 'desc');
    assert.deepEqual(rows.map((r) => r.sha256), [account.human, account.agent].map((k) => createHash('sha256').update(k).digest('hex')));
    assert.ok(!JSON.stringify(rows).includes(account.human.slice(16)));
  });

  test('lowercases the handle and refuses malformed, reserved and taken handles and taken emails, creating nothing', async () => {
    const handle = uniqueAccount('Up');
    const created = await hosted.http.post('/v0/signup').send({ handle, email: `${handle}@example.test` }).expect(201);
    assert.equal(created.body.handle, handle.toLowerCase());
    const refusals: Array<[Record<string, string>, number, string]> = [
      [{ handle: 'a', email: 'a@example.test' }, 422, 'invalid_request'],
      [{ handle: 'x'.repeat(40), email: 'b@example.test' }, 422, 'invalid_request'],
      [{ handle: 'bad--dash', email: 'c@example.test' }, 422, 'invalid_request'],
      [{ handle: 'gt', email: 'd@example.test' }, 422, 'handle_reserved'],
      [{ handle: 'holon', email: 'e@example.test' }, 422, 'handle_reserved'],
      [{ handle: 'Holon-Labs', email: 'f@example.test' }, 422, 'handle_reserved'],
      [{ handle: handle.toUpperCase(), email: 'g@example.test' }, 409, 'handle_taken'],
      [{ handle: uniqueAccount(), email: `${handle}@EXAMPLE.test` }, 409, 'email_taken'],
      [{ handle: uniqueAccount(), email: 'not-an-email' }, 422, 'invalid_request'],
    ];
    for (const [body, status, code] of refusals) {
      const response = await hosted.http.post('/v0/signup').send(body);
      assert.deepEqual([response.status, response.body.code], [status, code], JSON.stringify(body));
    }
    assert.equal((await hosted.running.db.knex('hosted_accounts').whereIn('email', ['a@example.test', 'd@example.test', 'g@example.test']).count('* as n'))[0].n, 0);
  });
});

describe('keys', () => {
  let account: TestAccount;
  before(async () => {
    account = await hosted.signup();
  });

  test('a revoked key answers 401 invalid_key at once; another account cannot revoke it (404)', async () => {
    const created = await hosted.http.post('/v0/keys').set(bearer(account.human)).send({ mandate: account.mandate }).expect(201);
    assert.equal(created.body.ask_in_client, false);
    await hosted.http.get('/v0/me').set(bearer(created.body.key)).expect(200);
    const other = await hosted.signup();
    assert.equal((await hosted.http.delete(`/v0/keys/${created.body.prefix}`).set(bearer(other.human))).status, 404);
    await hosted.http.delete(`/v0/keys/${created.body.prefix}`).set(bearer(account.human)).expect(200);
    const refused = await hosted.http.get('/v0/me').set(bearer(created.body.key));
    assert.deepEqual([refused.status, refused.body.code], [401, 'invalid_key']);
  });

  test('a key with a wrong secret but a real prefix is refused', async () => {
    const forged = account.human.slice(0, 14) + 'A'.repeat(account.human.length - 14);
    assert.equal((await hosted.http.get('/v0/me').set(bearer(forged))).status, 401);
  });

  test('an agent key for another account\'s mandate is refused 404', async () => {
    const other = await hosted.signup();
    const response = await hosted.http.post('/v0/keys').set(bearer(account.human)).send({ mandate: other.mandate });
    assert.deepEqual([response.status, response.body.code], [404, 'no_such_mandate']);
  });
});

describe('hosted mandates', () => {
  test('the id goes into the caller\'s namespace, the issuer is forced, EUR with the platform\'s fx', async () => {
    const account = await hosted.signup();
    const created = await hosted.http
      .post('/v0/mandates')
      .set(bearer(account.human))
      .send({ id: 'books', issuer: 'someone-else', grantee: `${account.handle}/bot`, allow: { agents: ['*'] }, budget: { total: '2.00' } })
      .expect(201);
    assert.equal(created.body.mandate.id, `${account.handle}/books`);
    assert.equal(created.body.mandate.issuer, account.handle);
    assert.deepEqual(created.body.mandate.budget, { total: '2.00', currency: 'EUR', fx: hosted.settings.fx });
    const refusals: Array<[Record<string, unknown>, number, string]> = [
      [{ id: 'fx', grantee: `${account.handle}/bot`, budget: { total: '1.00', fx: { USD: '0.01' } } }, 422, 'invalid_mandate'],
      [{ id: 'usd', grantee: `${account.handle}/bot`, budget: { total: '1.00', currency: 'USD' } }, 422, 'invalid_mandate'],
      [{ id: 'other/x', grantee: `${account.handle}/bot`, budget: { total: '1.00' } }, 422, 'invalid_mandate'],
      [{ id: `${account.handle}/x/y`, grantee: `${account.handle}/bot`, budget: { total: '1.00' } }, 422, 'invalid_mandate'],
      [{ id: 'g', grantee: 'other/bot', budget: { total: '1.00' } }, 422, 'invalid_mandate'],
      [{ id: 'books', grantee: `${account.handle}/bot`, allow: { agents: ['*'] }, budget: { total: '1.00' } }, 409, 'mandate_exists'],
    ];
    for (const [body, status, code] of refusals) {
      const response = await hosted.http.post('/v0/mandates').set(bearer(account.human)).send(body);
      assert.deepEqual([response.status, response.body.code], [status, code], JSON.stringify(body));
    }
  });
});

describe('admin credit', () => {
  test('credits through the seam under admin-credit:<id>; refuses 0, too much and unknown accounts', async () => {
    const account = await hosted.signup();
    const credited = await hosted.http.post('/v0/admin/credit').set(bearer(ADMIN_KEY)).send({ account: account.handle, amount: '2.50' }).expect(200);
    assert.equal(credited.body.balance, '7.50');
    const replay = await clearing.credit(`admin-credit:${credited.body.id}`, account.handle, 2_500_000, 'replay', true);
    assert.equal((replay as { applied: boolean }).applied, false);
    for (const [body, status] of [[{ account: account.handle, amount: '0' }, 422], [{ account: account.handle, amount: '1000.01' }, 422], [{ account: 'nobody-here', amount: '1.00' }, 404]] as const) {
      assert.equal((await hosted.http.post('/v0/admin/credit').set(bearer(ADMIN_KEY)).send(body)).status, status);
    }
  });

  test('an amount with a sign, an exponent, more decimals or more digits is refused 422 naming the bound, and credits nothing', async () => {
    const account = await hosted.signup();
    const credits = () => hosted.running.db.knex('hosted_admin_credits').where({ account: account.handle }).count('* as n').first();
    const before = await credits();
    for (const amount of ['-1.00', '-0', '999999999999', '1000.01', '0', '0.00', '1e3', '1.0000001', '+1', ' 1', '1000000000000000000000']) {
      const response = await hosted.http.post('/v0/admin/credit').set(bearer(ADMIN_KEY)).send({ account: account.handle, amount });
      assert.deepEqual([response.status, response.body], [422, {
        code: 'invalid_request',
        error: `invalid request: amount must be a decimal string more than 0 and at most 1000.00 with at most 6 decimals, such as "2.50"; ${JSON.stringify(amount)} is not`,
      }], amount);
    }
    // Longer than any amount can be: refused by the document's bound before the gateway reads it.
    const long = await hosted.http.post('/v0/admin/credit').set(bearer(ADMIN_KEY)).send({ account: account.handle, amount: '9'.repeat(33) });
    assert.deepEqual([long.status, long.body], [422, { code: 'invalid_request', error: 'invalid request: body.amount must NOT have more than 32 characters' }]);
    assert.deepEqual(await credits(), before);
    const me = await hosted.http.get('/v0/me').set(bearer(account.human)).expect(200);
    assert.equal(me.body.balance.balance, '5.00');
    // The bound itself is accepted.
    const most = await hosted.http.post('/v0/admin/credit').set(bearer(ADMIN_KEY)).send({ account: account.handle, amount: '1000.00' }).expect(200);
    assert.equal(most.body.balance, '1005.00');
  });
});

describe('GET /v0/accounts pages', () => {
  const page = (query: string, key = ADMIN_KEY) => hosted.http.get(`/v0/accounts${query}`).set(bearer(key));

  test('after a billed call to a shipped agent, the admin sees its author holon-labs with the exact balance; the caller does not', async () => {
    const account = await hosted.signup();
    // 5,000 words: 50 units of 0.001 EUR, the agent's 0.05 maximum; holon-labs keeps 90%.
    const text = Array.from({ length: 5000 }, (_, i) => `w${i % 7}`).join(' ');
    const called = await hosted.http.post('/v0/calls').set(bearer(account.agent)).send({ mandate: account.mandate, agent: 'holon-labs/word-stats', input: { text } }).expect(200);
    assert.deepEqual([called.body.receipt.cost.total, called.body.receipt.billed], ['0.05', true]);
    await hosted.running.outbox.drain();
    const { body } = await page('?limit=500').expect(200);
    assert.deepEqual(body.accounts.find((a: { account: string }) => a.account === 'holon-labs'), { account: 'holon-labs', balance: '0.045', available: '0.045', reserved: '0.00' });
    assert.ok(!body.accounts.some((a: { account: string }) => a.account.startsWith('external:') || a.account.startsWith('platform:')), 'the binding\'s machinery is not listed');
    const own = (await page('?limit=500', account.human).expect(200)).body;
    assert.deepEqual(own.accounts, [{ account: account.handle, balance: '4.95', available: '4.95', reserved: '0.00' }]);
  });

  test('the admin walks every signed-up account, every shipped author and holon in name order, limit at a time, each once', async () => {
    for (let i = 0; i < 3; i++) await hosted.signup();
    const handles = (await hosted.running.db.knex('hosted_accounts').pluck('handle')) as string[];
    const walked: string[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 100; pages++) {
      const { body }: { body: { accounts: Array<{ account: string }>; next_cursor: string | null } } = await page(`?limit=2${cursor === null ? '' : `&cursor=${cursor}`}`).expect(200);
      assert.ok(body.accounts.length <= 2, `a page of ${body.accounts.length}`);
      walked.push(...body.accounts.map((a: { account: string }) => a.account));
      cursor = body.next_cursor;
      if (cursor === null) break;
      assert.equal(cursor, walked.at(-1));
    }
    assert.equal(cursor, null);
    assert.ok(walked.length > 2 * 3, `${walked.length} accounts over more than three pages`);
    assert.deepEqual(walked, [...handles, ...SHIPPED_AUTHORS, 'holon'].sort());
  });

  test('without limit a page holds up to 100; a human sees its own account only', async () => {
    const all = (await page('').expect(200)).body;
    assert.equal(all.accounts.length, Math.min(100, Number((await hosted.running.db.knex('hosted_accounts').count('* as n'))[0].n) + SHIPPED_AUTHORS.length + 1));
    const account = await hosted.signup();
    const own = (await page('?limit=5', account.human).expect(200)).body;
    assert.deepEqual([own.accounts.map((a: { account: string }) => a.account), own.next_cursor], [[account.handle], null]);
    assert.deepEqual((await page(`?cursor=${account.handle}`, account.human).expect(200)).body.accounts, []);
  });

  test('a limit outside 1 to 500 or a malformed cursor is refused 422', async () => {
    for (const query of ['?limit=0', '?limit=501', '?limit=two', '?limit=1.5', '?cursor=', '?cursor=A%20B', `?cursor=${'a'.repeat(65)}`, '?cursor=%00']) {
      const refused = await page(query);
      assert.deepEqual([refused.status, refused.body.code], [422, 'invalid_request'], query);
    }
  });
});

describe('approvals', () => {
  let account: TestAccount;
  let mandate: string;
  let agentKey: string;
  const held = async () => {
    const response = await hosted.http.post('/v0/calls').set(bearer(agentKey)).send({ mandate, agent: 'gt/run', input: { do: 'ok' } });
    assert.equal(response.status, 202);
    return response.body.approval.id as string;
  };
  before(async () => {
    account = await hosted.signup();
    mandate = await carefulMandate(hosted, account);
    agentKey = (await hosted.http.post('/v0/keys').set(bearer(account.human)).send({ mandate }).expect(201)).body.key;
  });

  test('{} approves and runs; the agent key may read it but never decide', async () => {
    const id = await held();
    assert.equal((await hosted.http.get(`/v0/approvals/${id}`).set(bearer(agentKey)).expect(200)).body.approval.status, 'pending');
    assert.equal((await hosted.http.post(`/v0/approvals/${id}`).set(bearer(agentKey)).send({})).status, 403);
    const ran = await hosted.http.post(`/v0/approvals/${id}`).set(bearer(account.human)).send({}).expect(200);
    assert.equal(ran.body.receipt.status, 'succeeded');
    const read = (await hosted.http.get(`/v0/approvals/${id}`).set(bearer(agentKey)).expect(200)).body;
    assert.equal(read.approval.status, 'approved');
    assert.deepEqual(read.outcome, { receipt: ran.body.receipt.id, status: 'succeeded', billed: true, error: null });
  });

  test('GET /v0/approvals/{id}?wait_s waits for the decision, then answers with the approved call\'s answer', async () => {
    const id = await held();
    const waiting = hosted.http.get(`/v0/approvals/${id}?wait_s=60`).set(bearer(agentKey)).then((response) => response);
    // The waiter is registered once the approval was read as pending; a decision before that is answered at once anyway.
    const ran = await hosted.http.post(`/v0/approvals/${id}`).set(bearer(account.human)).send({}).expect(200);
    const answered = await waiting;
    assert.equal(answered.status, 200);
    assert.equal(answered.body.approval.status, 'approved');
    assert.deepEqual(answered.body.result, ran.body);
    const tooLong = await hosted.http.get(`/v0/approvals/${id}?wait_s=61`).set(bearer(agentKey));
    assert.deepEqual([tooLong.status, tooLong.body.code], [422, 'invalid_request']);
  });

  test('wait_s on someone else\'s approval is 404, as without it', async () => {
    const id = await held();
    const other = await hosted.signup();
    const refused = await hosted.http.get(`/v0/approvals/${id}?wait_s=5`).set(bearer(other.human));
    assert.deepEqual([refused.status, refused.body.code], [404, 'no_such_approval']);
  });

  test('{"run": false} grants; the agent re-submits with approval and it runs once under the held receipt', async () => {
    const id = await held();
    const granted = await hosted.http.post(`/v0/approvals/${id}`).set(bearer(account.human)).send({ run: false }).expect(200);
    assert.equal(granted.body.approval.status, 'approved');
    const receipt = granted.body.approval.receipt;
    const ran = await hosted.http.post('/v0/calls').set(bearer(agentKey)).send({ mandate, agent: 'gt/run', input: { do: 'ok' }, approval: id }).expect(200);
    assert.deepEqual([ran.body.receipt.id, ran.body.receipt.status, ran.body.receipt.approval], [receipt, 'succeeded', id]);
    const again = await hosted.http.post('/v0/calls').set(bearer(agentKey)).send({ mandate, agent: 'gt/run', input: { do: 'ok' }, approval: id });
    assert.deepEqual([again.status, again.body.code], [409, 'approval_not_granted']);
  });

  test('{"decision": "reject"} rejects; nothing runs', async () => {
    const id = await held();
    const rejected = await hosted.http.post(`/v0/approvals/${id}`).set(bearer(account.human)).send({ decision: 'reject' }).expect(200);
    assert.equal(rejected.body.approval.status, 'rejected');
    const again = await hosted.http.post(`/v0/approvals/${id}`).set(bearer(account.human)).send({});
    assert.deepEqual([again.status, again.body.code], [409, 'approval_decided']);
  });
});

describe('call_events', () => {
  test('every finished run lands once, append-only: agent, status, error, latency, its own cost billed, delegated', async () => {
    const account = await hosted.signup();
    const tree = await hosted.http.post('/v0/calls').set(bearer(account.agent)).send({ mandate: account.mandate, agent: 'gto/pass', input: { calls: [{ agent: 'gt/run' }], do: 'ok' } }).expect(200);
    const failed = await hosted.http.post('/v0/calls').set(bearer(account.agent)).send({ mandate: account.mandate, agent: 'gt/run', input: { do: 'unbilled_error' } }).expect(502);
    const ids = [tree.body.receipt.id, tree.body.receipt.calls[0].id, failed.body.receipt.id];
    const events = await hosted.running.db.knex('call_events').whereIn('receipt', ids).orderBy('id').select('receipt', 'agent', 'status', 'error', 'cost_micros', 'delegated', 'latency_ms');
    assert.deepEqual(
      events.map(({ latency_ms: _latency, ...event }) => ({ ...event, cost_micros: Number(event.cost_micros) })),
      [
        { receipt: ids[1], agent: 'gt/run@1.0.0', status: 'succeeded', error: null, cost_micros: 100_000, delegated: true },
        { receipt: ids[0], agent: 'gto/pass@1.0.0', status: 'succeeded', error: null, cost_micros: 100_000, delegated: false },
        { receipt: ids[2], agent: 'gt/run@1.0.0', status: 'failed', error: 'unbilled_failure', cost_micros: 0, delegated: false },
      ],
    );
    await assert.rejects(hosted.running.db.knex('call_events').where({ receipt: ids[0] }).update({ cost_micros: 0 }), /append-only/);
  });
});
