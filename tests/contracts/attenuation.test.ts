import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkAttenuation } from '../../src/contracts/attenuation.ts';
import { validateMandate, type Mandate } from '../../src/contracts/mandate.ts';

const PARENT_DOC = {
  id: 'alice/q4',
  issuer: 'alice',
  grantee: 'alice/assistant',
  allow: { agents: ['holon-labs/*', 'acme/extract@^1'], capabilities: ['extraction.*'] },
  deny: { agents: ['evil/*'], capabilities: ['email.send'] },
  require: { open_source: true, runtimes: ['dev', 'mcp'] },
  data: { remote: false },
  approval: { above: '1.00', agents: ['acme/extract'], capabilities: ['payment.*'] },
  budget: { total: '10.00', currency: 'EUR', fx: { USD: '0.92' } },
  delegation: { max_depth: 2 },
  expires_at: '2026-12-31T00:00:00Z',
};
const parent = validateMandate(PARENT_DOC);

/** The sub-mandate gateway §3 derives (issuer = parent's grantee, depth − 1), with fields of the document replaced by `over`. */
function child(over: Record<string, unknown> = {}): Mandate {
  return validateMandate({
    ...PARENT_DOC,
    id: 'alice/q4.r4',
    issuer: 'alice/assistant',
    grantee: 'holon-labs/invoice-pipeline@0.4.0',
    allow: { agents: ['holon-labs/csv-profile@^1', 'acme/extract@~1.2'], capabilities: ['extraction.table'] },
    budget: { total: '0.10', currency: 'EUR', fx: { USD: '0.92' } },
    delegation: { max_depth: 1 },
    ...over,
  });
}

const fieldOf = (over: Record<string, unknown>) => checkAttenuation(parent, child(over))?.field ?? null;

describe('checkAttenuation (gateway §3): a sub-mandate never widens its parent', () => {
  it('accepts the derived sub-mandate, and the parent minus one level as is', () => {
    assert.equal(checkAttenuation(parent, child()), null);
    assert.equal(fieldOf({ allow: PARENT_DOC.allow, budget: PARENT_DOC.budget }), null);
  });
  it('1. issuer must be the parent grantee', () => {
    assert.deepEqual(checkAttenuation(parent, child({ issuer: 'alice/other' })), {
      field: 'issuer',
      reason: "the child is issued by alice/other, not by the parent's grantee alice/assistant",
    });
  });
  it('2. expires_at: never after the parent; none under a parent that expires is wider', () => {
    assert.equal(fieldOf({ expires_at: '2027-01-01T00:00:00Z' }), 'expires_at');
    assert.equal(fieldOf({ expires_at: undefined }), 'expires_at');
    assert.equal(fieldOf({ expires_at: '2026-12-01T00:00:00Z' }), null);
  });
  it('3-5. budget: same currency, same fx, total at most the parent', () => {
    assert.equal(fieldOf({ budget: { total: '0.10', currency: 'USD', fx: { EUR: '1.08' } } }), 'budget.currency');
    assert.equal(fieldOf({ budget: { total: '0.10', currency: 'EUR', fx: { USD: '0.91' } } }), 'budget.fx.USD');
    assert.equal(fieldOf({ budget: { total: '0.10', currency: 'EUR', fx: { USD: '0.92', GBP: '1.15' } } }), 'budget.fx.GBP');
    assert.deepEqual(checkAttenuation(parent, child({ budget: { total: '10.000001', currency: 'EUR', fx: { USD: '0.92' } } })), {
      field: 'budget.total',
      reason: "the child's total 10.000001 EUR exceeds the parent's 10.00 EUR",
    });
  });
  it('6. allow.agents: each covered by a parent pattern (ranges by subset)', () => {
    assert.equal(fieldOf({ allow: { agents: ['acme/extract@^2'] } }), 'allow.agents');
    assert.equal(fieldOf({ allow: { agents: ['acme/extract'] } }), 'allow.agents');
    assert.equal(fieldOf({ allow: { agents: ['*'] } }), 'allow.agents');
    assert.equal(fieldOf({ allow: { agents: ['holon-labs/anything@1.0.0'] } }), null);
  });
  it('7. allow.capabilities: each covered by a parent pattern; an agent id is not covered by a capability', () => {
    assert.deepEqual(checkAttenuation(parent, child({ allow: { capabilities: ['invoice.extract'] } })), {
      field: 'allow.capabilities',
      reason: 'the child allows "invoice.extract", which no parent allow.capabilities pattern covers',
    });
    assert.equal(fieldOf({ allow: { capabilities: ['extraction.*'] } }), null);
    assert.equal(fieldOf({ allow: { agents: ['other/table-extractor'] } }), 'allow.agents');
  });
  it('8. allow.published cannot be turned on', () => {
    assert.equal(fieldOf({ allow: { published: true } }), 'allow.published');
  });
  it('9-10. deny: every parent pattern kept, or covered by a broader one', () => {
    assert.equal(fieldOf({ deny: { agents: [], capabilities: ['email.send'] } }), 'deny.agents');
    assert.equal(fieldOf({ deny: { agents: ['evil/*'], capabilities: [] } }), 'deny.capabilities');
    assert.equal(fieldOf({ deny: { agents: ['*'], capabilities: ['email.*'] } }), null);
  });
  it('11-12. require: open_source kept, runtimes a subset', () => {
    assert.equal(fieldOf({ require: { open_source: false, runtimes: ['dev'] } }), 'require.open_source');
    assert.equal(fieldOf({ require: { open_source: true } }), 'require.runtimes');
    assert.equal(fieldOf({ require: { open_source: true, runtimes: ['dev', 'webhook'] } }), 'require.runtimes');
    assert.equal(fieldOf({ require: { open_source: true, runtimes: ['mcp'] } }), null);
  });
  it('13. data.remote stays false', () => {
    assert.equal(fieldOf({ data: { remote: true } }), 'data.remote');
  });
  it('14-16. approval: threshold kept or lowered, lists kept', () => {
    assert.equal(fieldOf({ approval: { ...PARENT_DOC.approval, above: '1.000001' } }), 'approval.above');
    assert.equal(fieldOf({ approval: { agents: ['acme/extract'], capabilities: ['payment.*'] } }), 'approval.above');
    assert.equal(fieldOf({ approval: { ...PARENT_DOC.approval, above: '0.50' } }), null);
    assert.equal(fieldOf({ approval: { ...PARENT_DOC.approval, agents: ['acme/extract@^1'] } }), 'approval.agents');
    assert.equal(fieldOf({ approval: { ...PARENT_DOC.approval, capabilities: ['payment.card'] } }), 'approval.capabilities');
  });
  it('17. delegation.max_depth at most parent − 1; a parent at 0 has no valid child', () => {
    assert.deepEqual(checkAttenuation(parent, child({ delegation: { max_depth: 2 } })), {
      field: 'delegation.max_depth',
      reason: "the child's max_depth 2 is more than the parent's 2 − 1",
    });
    const flat = validateMandate({ ...PARENT_DOC, delegation: { max_depth: 0 } });
    assert.equal(checkAttenuation(flat, child({ delegation: { max_depth: 0 } }))?.field, 'delegation.max_depth');
  });
});
