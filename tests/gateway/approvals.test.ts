/**
 * Pending approvals are read one way (`pendingApprovals` of `src/gateway/approvals.ts`, issue 25
 * §4): the scope and the limit are in the query, and every door reads through it: the hosted
 * `GET /v0/approvals` (a principal's mandates), the MCP `list_approvals` (the session's
 * mandate), the dev `GET /v0/approvals` (every approval). One tenant never sees another's, and
 * a limit returns the newest that many.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { APPROVAL_PAGE, pendingApprovals, readApproval } from '../../src/gateway/approvals.ts';
import { FIXTURE_AGENTS } from '../helpers/gateway.ts';
import { ADMIN_KEY, startTestHosted, type TestAccount, type TestHosted } from '../helpers/hosted.ts';

let hosted: TestHosted;
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** A tenant with a mandate that holds every call above 0.05 EUR for approval, and an agent key under it. */
interface Tenant {
  account: TestAccount;
  mandate: string;
  agent_key: string;
  /** The ids of its held calls' approvals, oldest first. */
  held: string[];
}

const tenants: Tenant[] = [];

/** Signs a tenant up and holds `count` calls of it for approval. */
async function tenantWithHeldCalls(count: number): Promise<Tenant> {
  const account = await hosted.signup();
  await hosted.http.post('/v0/mandates').set(bearer(account.human)).send({ id: 'careful', grantee: `${account.handle}/bot`, allow: { agents: ['*'] }, approval: { above: '0.05' }, budget: { total: '3.00' } }).expect(201);
  const mandate = `${account.handle}/careful`;
  const agent_key = (await hosted.http.post('/v0/keys').set(bearer(account.human)).send({ mandate }).expect(201)).body.key as string;
  const held: string[] = [];
  for (let n = 0; n < count; n += 1) {
    const response = await hosted.http.post('/v0/calls').set(bearer(agent_key)).send({ mandate, agent: 'gt/run', input: { do: 'ok' } });
    assert.equal(response.status, 202);
    held.push(response.body.approval.id);
  }
  return { account, mandate, agent_key, held };
}

before(async () => {
  hosted = await startTestHosted({ agent_dirs: [FIXTURE_AGENTS] });
  tenants.push(await tenantWithHeldCalls(3), await tenantWithHeldCalls(2));
});
after(async () => hosted?.close());

const ids = (approvals: Array<{ id: string }>) => approvals.map((approval) => approval.id);
const newestFirst = (held: string[]) => [...held].reverse();

test('pendingApprovals answers exactly the scope\'s approvals, newest first, and never more than the limit', async () => {
  const db = hosted.running.db.knex;
  const [a, b] = tenants;
  assert.deepEqual(ids(await pendingApprovals(db, { roots: [a.mandate] }, APPROVAL_PAGE.default)), newestFirst(a.held));
  assert.deepEqual(ids(await pendingApprovals(db, { roots: [b.mandate] }, APPROVAL_PAGE.default)), newestFirst(b.held));
  assert.deepEqual(ids(await pendingApprovals(db, { roots: [a.mandate] }, 2)), newestFirst(a.held).slice(0, 2));
  assert.deepEqual(ids(await pendingApprovals(db, { roots: [] }, APPROVAL_PAGE.default)), []);
  // The dev gateway's scope is every approval: both tenants', newest first.
  const all = ids(await pendingApprovals(db, 'all', APPROVAL_PAGE.default));
  assert.deepEqual(all.filter((id) => [...a.held, ...b.held].includes(id)), [...newestFirst(b.held), ...newestFirst(a.held)]);
  assert.equal((await pendingApprovals(db, 'all', 1)).length, 1);
  // One approval read in scope, and out of it as absent.
  assert.equal((await readApproval(db, a.held[0], { roots: [a.mandate] }))?.id, a.held[0]);
  assert.equal(await readApproval(db, a.held[0], { roots: [b.mandate] }), null);
});

test('hosted GET /v0/approvals lists only the caller\'s approvals, exactly, with its limit', async () => {
  const [a, b] = tenants;
  for (const tenant of [a, b]) {
    for (const key of [tenant.account.human, tenant.agent_key]) {
      assert.deepEqual(ids((await hosted.http.get('/v0/approvals').set(bearer(key)).expect(200)).body.approvals), newestFirst(tenant.held));
    }
  }
  assert.deepEqual(ids((await hosted.http.get('/v0/approvals?limit=1').set(bearer(a.account.human)).expect(200)).body.approvals), [a.held[2]]);
  // A key of another account sees nothing of these, nor the admin key (403), and the limit's bounds hold.
  const other = await hosted.signup();
  assert.deepEqual((await hosted.http.get('/v0/approvals').set(bearer(other.human)).expect(200)).body.approvals, []);
  assert.equal((await hosted.http.get('/v0/approvals').set(bearer(ADMIN_KEY))).status, 403);
  for (const limit of ['0', '501', 'x']) {
    const refused = await hosted.http.get(`/v0/approvals?limit=${limit}`).set(bearer(a.account.human));
    assert.deepEqual([refused.status, refused.body.code], [422, 'invalid_request'], limit);
  }
  // One tenant's approval read or decided by another is 404, as if absent.
  const read = await hosted.http.get(`/v0/approvals/${a.held[0]}`).set(bearer(b.account.human));
  assert.deepEqual([read.status, read.body.code], [404, 'no_such_approval']);
  const decided = await hosted.http.post(`/v0/approvals/${a.held[0]}`).set(bearer(b.account.human)).send({ decision: 'reject' });
  assert.deepEqual([decided.status, decided.body.code], [404, 'no_such_approval']);
  assert.equal((await hosted.http.get(`/v0/approvals/${a.held[0]}`).set(bearer(a.account.human)).expect(200)).body.approval.status, 'pending');
});

test('the MCP list_approvals lists only the session mandate\'s approvals, with its limit', async () => {
  const [a, b] = tenants;
  const clients: Client[] = [];
  try {
    for (const tenant of [a, b]) {
      const client = new Client({ name: 'approvals-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${hosted.running.url}/mcp`), { requestInit: { headers: bearer(tenant.agent_key) } }));
      clients.push(client);
      const listed = (await client.callTool({ name: 'list_approvals', arguments: {} })).structuredContent as { approvals: Array<{ id: string }> };
      assert.deepEqual(ids(listed.approvals), newestFirst(tenant.held));
      const one = (await client.callTool({ name: 'list_approvals', arguments: { limit: 1 } })).structuredContent as { approvals: Array<{ id: string }> };
      assert.deepEqual(ids(one.approvals), [tenant.held.at(-1)]);
    }
  } finally {
    for (const client of clients) await client.close();
  }
});
