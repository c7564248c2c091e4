/**
 * Delegation (gateway §3): the sub-mandate derived for an agent that declares `calls`, and the
 * slot a downstream call must fit. Amounts are integer micro-units of the mandate's currency.
 */
import type { Manifest } from '../contracts/manifest.ts';
import type { DeclaredCall } from '../contracts/manifest.ts';
import { formatMoney, toPayerCurrency, type Micros } from '../contracts/money.ts';
import { agentMatches } from '../contracts/patterns.ts';
import { rateInto } from '../contracts/pricing.ts';
import type { StoredMandate } from './mandates.ts';

/**
 * The derived sub-mandate's document, exactly as gateway §3's table says: issuer → grantee is the
 * parent's grantee → the agent being run; `allow` is the agent's declared `calls`; `require`,
 * `data`, `deny`, `approval`, `fx` (and `expires_at`) inherited unchanged; `delegation.max_depth`
 * the parent's − 1; `budget.total` is `budget_micros` (see {@link subBudget}).
 */
export function deriveSubMandate(parent: StoredMandate, agent: Manifest, receipt: string, budget_micros: Micros): Record<string, any> {
  const doc = parent.document;
  const { mandate } = parent;
  return {
    id: `${parent.id}.${receipt}`,
    issuer: mandate.grantee,
    grantee: `${agent.id}@${agent.version}`,
    allow: {
      agents: agent.calls.flatMap((call) => (call.agent === null ? [] : [call.agent])),
      capabilities: agent.calls.flatMap((call) => (call.capability === null ? [] : [call.capability])),
      published: mandate.allow.published,
    },
    ...(doc.deny === undefined ? {} : { deny: doc.deny }),
    ...(doc.require === undefined ? {} : { require: doc.require }),
    ...(doc.data === undefined ? {} : { data: doc.data }),
    ...(doc.approval === undefined ? {} : { approval: doc.approval }),
    ...(doc.expires_at === undefined ? {} : { expires_at: doc.expires_at }),
    budget: { total: formatMoney(budget_micros), currency: mandate.budget.currency, ...(doc.budget.fx === undefined ? {} : { fx: doc.budget.fx }) },
    delegation: { max_depth: mandate.delegation.max_depth - 1 },
  };
}

/**
 * The sub-mandate's budget, in the mandate's currency (DESIGN open point 8): under
 * `passthrough`, `downstream.cap` converted rounded up (exactly what the orchestrator's worst
 * case reserved for it); under `included`, the orchestrator's own worst price, since it pays its
 * calls out of what it earns. When the caller's `max_cost` is lower than the listed worst case,
 * delegated calls get what the cap leaves after the agent's own worst price (gateway §2).
 */
export function subBudget(mandate: StoredMandate, agent: Manifest, listed_micros: Micros, worst_case_micros: Micros): Micros {
  const rate = rateInto(agent.price.currency, mandate.mandate.budget)!;
  const cap_micros = agent.downstream?.mode === 'passthrough' ? toPayerCurrency(agent.downstream.cap_micros, rate) : 0;
  const own_micros = listed_micros - cap_micros;
  if (agent.downstream?.mode !== 'passthrough') return own_micros;
  return Math.max(0, Math.min(cap_micros, worst_case_micros - own_micros));
}

/**
 * The declared `calls` entry a downstream call fits, and its `max_cost` in the mandate's currency:
 * a call by name matches an entry's `agent` pattern; a call by capability, an entry with that
 * capability. Null when no entry matches.
 */
export function slotFor(
  orchestrator: Manifest,
  mandate: StoredMandate,
  target: { id: string; version: string; capability: string | null },
): { call: DeclaredCall; max_cost_micros: Micros } | null {
  const call = orchestrator.calls.find((entry) =>
    target.capability !== null ? entry.capability === target.capability : entry.agent !== null && agentMatches(entry.agent, target.id, target.version),
  );
  if (!call) return null;
  const rate = rateInto(orchestrator.price.currency, mandate.mandate.budget)!;
  return { call, max_cost_micros: toPayerCurrency(call.max_cost_micros, rate) };
}
