/**
 * Admission: may this call happen under this mandate? (gateway §1 step 2 "Admit", §7 "Limits")
 */
import type { Mandate } from './mandate.ts';
import type { Manifest } from './manifest.ts';
import { formatMoney, type Micros } from './money.ts';
import { agentMatches, capabilityMatches } from './patterns.ts';
import type { WorstCase } from './pricing.ts';

/** `allow`: run it. `approve`: hold it for the issuer's approval. `deny`: refuse it (HTTP 403). */
export type Decision = 'allow' | 'approve' | 'deny';

/**
 * Why, one code per rule, in the order the rules are checked (the first rule that applies wins):
 * 1. `expired`: now is at or after `expires_at`.
 * 2. `denied_agent` / `denied_capability`: the agent, or one of its capabilities, is in `deny`.
 * 3. `not_allowed`: nothing in `allow` matches (see mandate `allow`).
 * 4. `published_not_allowed`: a call by capability reached a published agent without `allow.published`.
 * 5. `requires_open_source`: `require.open_source` and the agent is `proprietary`.
 * 6. `runtime_not_allowed`: `require.runtimes` does not list the agent's `runtime.kind`.
 * 7. `remote_not_allowed`: `data.remote` is false and the agent runs on a remote server.
 * 8. `delegation_depth`: the agent declares `calls` and `delegation.max_depth` is 0.
 * 9. `no_fx_rate` / `below_fixed_price`: the call cannot be priced (from {@link WorstCase}).
 * 10. `over_budget`: the worst case exceeds what remains of the budget (equal fits; open point 6).
 * 11. `approval_listed` / `approval_above`: the agent is in `approval`'s lists, or the worst case is
 *     strictly above `approval.above` (equal does not need approval; open point 6). Decision
 *     `approve`, or `deny` inside a delegated run, where nobody can approve.
 * 12. `allowed`.
 */
export type AdmissionCode =
  | 'expired'
  | 'denied_agent'
  | 'denied_capability'
  | 'not_allowed'
  | 'published_not_allowed'
  | 'requires_open_source'
  | 'runtime_not_allowed'
  | 'remote_not_allowed'
  | 'delegation_depth'
  | 'no_fx_rate'
  | 'below_fixed_price'
  | 'over_budget'
  | 'approval_listed'
  | 'approval_above'
  | 'allowed';

/** The answer of {@link checkCall}: a decision, its code, and a sentence naming the figures. */
export type Admission =
  | { decision: 'allow'; code: 'allowed'; reason: string }
  | { decision: 'approve'; code: 'approval_listed' | 'approval_above'; reason: string }
  | { decision: 'deny'; code: DenialCode; reason: string };

/** The codes of a `deny`: each is the code of the call's 403 answer and of its receipt's `error`. */
export type DenialCode = Exclude<AdmissionCode, 'allowed'>;

/** What admission needs to know about the call besides the two documents. */
export interface CallContext {
  /** The time of the call, milliseconds since the epoch. */
  now_ms: number;
  /** What remains of the mandate's budget: total − spent − reserved, micro-units of `budget.currency`. */
  remaining_micros: Micros;
  /** The capability the call asked for when it was made by capability, else null (a call by name). */
  capability: string | null;
  /** Whether the agent is published by an author (runs on the author's server), not shipped with the gateway. */
  published: boolean;
  /** Whether the call is made inside a delegated run (under a sub-mandate). */
  delegated: boolean;
}

/** Runtime kinds whose code runs on a server the gateway does not control (gateway §6). */
const REMOTE_RUNTIMES = new Set(['mcp', 'webhook', 'a2a']);

/**
 * Admits or refuses a call of `manifest` under `mandate` with the `worstCase` computed by
 * `pricing.worstCase` (in the mandate's currency, after the caller's `max_cost`). Pure: the
 * clock and the remaining budget come in `context`. Rules and their order: {@link AdmissionCode}.
 * Never throws on valid documents.
 */
export function checkCall(mandate: Mandate, manifest: Manifest, worstCase: WorstCase, context: CallContext): Admission {
  const agent = `${manifest.id}@${manifest.version}`;
  const deny = (code: DenialCode, reason: string): Admission => ({ decision: 'deny', code, reason });
  const money = (micros: Micros): string => `${formatMoney(micros)} ${mandate.budget.currency}`;

  if (mandate.expires_at_ms !== null && context.now_ms >= mandate.expires_at_ms) {
    return deny('expired', `mandate ${mandate.id} expired at ${new Date(mandate.expires_at_ms).toISOString()}`);
  }
  const deniedBy = mandate.deny.agents.find((pattern) => agentMatches(pattern, manifest.id, manifest.version));
  if (deniedBy !== undefined) return deny('denied_agent', `${agent} matches deny.agents "${deniedBy}"`);
  for (const capability of manifest.capabilities) {
    const pattern = mandate.deny.capabilities.find((p) => capabilityMatches(p, capability));
    if (pattern !== undefined) return deny('denied_capability', `${agent} declares ${capability}, which matches deny.capabilities "${pattern}"`);
  }
  if (!isAllowed(mandate, manifest, context.capability)) {
    const asked = context.capability === null ? 'by name' : `for capability ${context.capability}`;
    return deny('not_allowed', `${agent}, called ${asked}, matches nothing in the allow lists of mandate ${mandate.id}`);
  }
  if (context.capability !== null && context.published && !mandate.allow.published) {
    return deny('published_not_allowed', `${agent} is a published agent and mandate ${mandate.id} does not set allow.published: a call by capability cannot reach it`);
  }
  if (mandate.require.open_source && manifest.license === 'proprietary') {
    return deny('requires_open_source', `${agent} is proprietary and the mandate requires open source`);
  }
  if (mandate.require.runtimes !== null && !mandate.require.runtimes.includes(manifest.runtime.kind)) {
    return deny('runtime_not_allowed', `${agent} runs on ${manifest.runtime.kind}; the mandate requires one of ${mandate.require.runtimes.join(', ')}`);
  }
  if (!mandate.data.remote && REMOTE_RUNTIMES.has(manifest.runtime.kind)) {
    return deny('remote_not_allowed', `${agent} runs on a remote ${manifest.runtime.kind} server and the mandate keeps data on the gateway (data.remote: false)`);
  }
  if (manifest.calls.length > 0 && mandate.delegation.max_depth === 0) {
    return deny('delegation_depth', `${agent} delegates (it declares calls) and the mandate's delegation.max_depth is 0`);
  }
  if (!worstCase.ok) return deny(worstCase.code, worstCase.reason);
  if (worstCase.worst_case_micros > context.remaining_micros) {
    return deny('over_budget', `worst case ${money(worstCase.worst_case_micros)} exceeds the remaining budget ${money(context.remaining_micros)} of mandate ${mandate.id}; its issuer can grant a larger budget (GET /v0/mandates/{id} shows what is spent and reserved)`);
  }
  const approval = approvalNeeded(mandate, manifest, worstCase.worst_case_micros, money);
  if (approval !== null) {
    if (context.delegated) {
      return deny(approval.code, `${approval.reason}, and nobody can approve inside a delegated run`);
    }
    return { decision: 'approve', ...approval };
  }
  return { decision: 'allow', code: 'allowed', reason: `${agent} is allowed by mandate ${mandate.id}, worst case ${money(worstCase.worst_case_micros)}` };
}

/** Whether `allow` matches: by agent pattern, or by capability (the asked one for a capability call, any declared one for a call by name). */
function isAllowed(mandate: Mandate, manifest: Manifest, asked: string | null): boolean {
  if (mandate.allow.agents.some((pattern) => agentMatches(pattern, manifest.id, manifest.version))) return true;
  const candidates = asked === null ? manifest.capabilities : manifest.capabilities.filter((c) => c === asked);
  return candidates.some((capability) => mandate.allow.capabilities.some((pattern) => capabilityMatches(pattern, capability)));
}

/** The approval rule that applies, if any: the lists first, then the amount threshold. */
function approvalNeeded(
  mandate: Mandate,
  manifest: Manifest,
  worst_case_micros: Micros,
  money: (micros: Micros) => string,
): { code: 'approval_listed' | 'approval_above'; reason: string } | null {
  const agent = `${manifest.id}@${manifest.version}`;
  const byAgent = mandate.approval.agents.find((pattern) => agentMatches(pattern, manifest.id, manifest.version));
  if (byAgent !== undefined) return { code: 'approval_listed', reason: `${agent} matches approval.agents "${byAgent}"` };
  for (const capability of manifest.capabilities) {
    const pattern = mandate.approval.capabilities.find((p) => capabilityMatches(p, capability));
    if (pattern !== undefined) return { code: 'approval_listed', reason: `${agent} declares ${capability}, which matches approval.capabilities "${pattern}"` };
  }
  const above = mandate.approval.above_micros;
  if (above !== null && worst_case_micros > above) {
    return { code: 'approval_above', reason: `worst case ${money(worst_case_micros)} is above the approval threshold ${money(above)}` };
  }
  return null;
}
