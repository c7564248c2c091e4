import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkCall, type CallContext } from '../../src/contracts/check-call.ts';
import { validateMandate, type Mandate } from '../../src/contracts/mandate.ts';
import { type Manifest } from '../../src/contracts/manifest.ts';
import { worstCase, type WorstCase } from '../../src/contracts/pricing.ts';
import { testManifest } from '../helpers/contracts.ts';

/** acme/extract@1.2.0, per_unit 0.01 EUR up to 3.00, MCP, MIT; `over` replaces top-level fields. */
function manifest(over: Record<string, unknown> = {}): Manifest {
  return testManifest({ price: { model: 'per_unit', amount: '0.01', unit: 'page', max: '3.00', currency: 'EUR' }, ...over });
}

/** alice/q4: allows acme/* and extraction.*, 10.00 EUR; `over` replaces top-level fields. */
function mandate(over: Record<string, unknown> = {}): Mandate {
  return validateMandate({
    id: 'alice/q4',
    issuer: 'alice',
    grantee: 'alice/assistant',
    allow: { agents: ['acme/*'], capabilities: ['extraction.*'] },
    budget: { total: '10.00', currency: 'EUR' },
    ...over,
  });
}

const NOW = Date.UTC(2026, 10, 1);
const CONTEXT: CallContext = { now_ms: NOW, remaining_micros: 10_000_000, capability: null, published: false, delegated: false };

/** checkCall with the worst case computed from the manifest (and an optional max_cost). */
function admit(m: Mandate, a: Manifest, context: Partial<CallContext> = {}, max_cost_micros: number | null = null) {
  return checkCall(m, a, worstCase(a, m.budget, max_cost_micros), { ...CONTEXT, ...context });
}

describe('checkCall (gateway §1 "Admit"): one rule at a time, in order', () => {
  it('allows, naming the worst case', () => {
    assert.deepEqual(admit(mandate(), manifest()), { decision: 'allow', code: 'allowed', reason: 'acme/extract@1.2.0 is allowed by mandate alice/q4, worst case 3.00 EUR' });
  });
  it('1. expired: denied at the expiry instant, allowed a millisecond before', () => {
    const m = mandate({ expires_at: new Date(NOW).toISOString() });
    assert.equal(admit(m, manifest()).code, 'expired');
    assert.equal(admit(m, manifest(), { now_ms: NOW - 1 }).code, 'allowed');
  });
  it('2. deny beats allow, by agent and by capability', () => {
    assert.deepEqual(admit(mandate({ deny: { agents: ['acme/extract@^1'] } }), manifest()), {
      decision: 'deny',
      code: 'denied_agent',
      reason: 'acme/extract@1.2.0 matches deny.agents "acme/extract@^1"',
    });
    assert.equal(admit(mandate({ deny: { agents: ['acme/extract@^2'] } }), manifest()).code, 'allowed');
    assert.equal(admit(mandate({ deny: { capabilities: ['extraction.*'] } }), manifest()).code, 'denied_capability');
  });
  it('3. not allowed: nothing matches; a capability call is allowed by the asked capability only', () => {
    const byCapability = mandate({ allow: { capabilities: ['extraction.table'] } });
    const twoHats = manifest({ id: 'bob/x', capabilities: ['extraction.table', 'email.send'] });
    assert.equal(admit(byCapability, twoHats).code, 'allowed');
    assert.equal(admit(byCapability, twoHats, { capability: 'extraction.table' }).code, 'allowed');
    assert.deepEqual(admit(byCapability, twoHats, { capability: 'email.send' }), {
      decision: 'deny',
      code: 'not_allowed',
      reason: 'bob/x@1.2.0, called for capability email.send, matches nothing in the allow lists of mandate alice/q4',
    });
    assert.equal(admit(mandate({ allow: { agents: ['acme/extract@^2'] } }), manifest()).code, 'not_allowed');
  });
  it('4. a capability call reaches a published agent only with allow.published; a call by name is unaffected', () => {
    assert.equal(admit(mandate(), manifest(), { capability: 'extraction.table', published: true }).code, 'published_not_allowed');
    assert.equal(admit(mandate(), manifest(), { capability: null, published: true }).code, 'allowed');
    const open = mandate({ allow: { agents: ['acme/*'], capabilities: ['extraction.*'], published: true } });
    assert.equal(admit(open, manifest(), { capability: 'extraction.table', published: true }).code, 'allowed');
  });
  it('5. require.open_source denies a proprietary agent', () => {
    assert.equal(admit(mandate({ require: { open_source: true } }), manifest({ license: 'proprietary' })).code, 'requires_open_source');
    assert.equal(admit(mandate({ require: { open_source: true } }), manifest()).code, 'allowed');
  });
  it('6. require.runtimes denies other runtimes', () => {
    assert.equal(admit(mandate({ require: { runtimes: ['dev'] } }), manifest()).code, 'runtime_not_allowed');
  });
  it('7. data.remote: false denies agents on remote servers, not dev ones', () => {
    assert.equal(admit(mandate({ data: { remote: false } }), manifest()).code, 'remote_not_allowed');
    assert.equal(admit(mandate({ data: { remote: false } }), manifest({ runtime: { kind: 'dev' } })).code, 'allowed');
  });
  it('8. an agent that declares calls cannot run under max_depth 0', () => {
    const orchestrator = manifest({ calls: [{ capability: 'extraction.table', max_cost: '0.05' }], downstream: { mode: 'passthrough', cap: '0.05' } });
    assert.equal(admit(mandate({ delegation: { max_depth: 0 } }), orchestrator).code, 'delegation_depth');
    assert.equal(admit(mandate({ delegation: { max_depth: 0 } }), manifest()).code, 'allowed');
  });
  it('9. a call that cannot be priced is denied with the pricing reason', () => {
    const perRun = manifest({ price: { model: 'per_run', amount: '0.10', currency: 'EUR' } });
    assert.equal(admit(mandate(), perRun, {}, 50_000).code, 'below_fixed_price');
    assert.equal(admit(mandate(), manifest({ price: { model: 'free', currency: 'USD' } })).code, 'no_fx_rate');
  });
  it('10. over budget: denied, not sent for approval', () => {
    const m = mandate({ approval: { above: '1.00' } });
    assert.deepEqual(admit(m, manifest(), { remaining_micros: 2_000_000 }), {
      decision: 'deny',
      code: 'over_budget',
      reason: 'worst case 3.00 EUR exceeds the remaining budget 2.00 EUR of mandate alice/q4; its issuer can grant a larger budget (GET /v0/mandates/{id} shows what is spent and reserved)',
    });
  });
  it('11. approval: listed agents and capabilities, or a worst case above the threshold', () => {
    assert.equal(admit(mandate({ approval: { agents: ['acme/extract'] } }), manifest()).decision, 'approve');
    assert.equal(admit(mandate({ approval: { capabilities: ['extraction.table'] } }), manifest()).code, 'approval_listed');
    assert.deepEqual(admit(mandate({ approval: { above: '1.00' } }), manifest()), {
      decision: 'approve',
      code: 'approval_above',
      reason: 'worst case 3.00 EUR is above the approval threshold 1.00 EUR',
    });
  });
  it('11. inside a delegated run an approval becomes a deny', () => {
    assert.deepEqual(admit(mandate({ approval: { above: '1.00' } }), manifest(), { delegated: true }), {
      decision: 'deny',
      code: 'approval_above',
      reason: 'worst case 3.00 EUR is above the approval threshold 1.00 EUR, and nobody can approve inside a delegated run',
    });
  });
  it('max_cost: a per-unit agent listed at "up to 3.00" is called for a 0.20 job without asking the human', () => {
    const m = mandate({ approval: { above: '1.00' } });
    assert.equal(admit(m, manifest()).decision, 'approve');
    assert.equal(admit(m, manifest(), {}, 200_000).decision, 'allow');
  });
});

describe('open point 6: boundaries', () => {
  const exactly = (micros: number): WorstCase => ({ ok: true, listed_micros: micros, worst_case_micros: micros, agent_cap: null });
  it('a worst case exactly equal to the remaining budget fits; one micro-unit more does not', () => {
    assert.equal(checkCall(mandate(), manifest(), exactly(2_000_000), { ...CONTEXT, remaining_micros: 2_000_000 }).code, 'allowed');
    assert.equal(checkCall(mandate(), manifest(), exactly(2_000_001), { ...CONTEXT, remaining_micros: 2_000_000 }).code, 'over_budget');
  });
  it('a worst case exactly at the approval threshold needs no approval; one micro-unit above does', () => {
    const m = mandate({ approval: { above: '1.00' } });
    assert.equal(checkCall(m, manifest(), exactly(1_000_000), CONTEXT).decision, 'allow');
    assert.equal(checkCall(m, manifest(), exactly(1_000_001), CONTEXT).decision, 'approve');
  });
});
