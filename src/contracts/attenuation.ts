/**
 * Attenuation: a sub-mandate may narrow its parent, never widen it (gateway §3 "Delegation").
 */
import type { Mandate } from './mandate.ts';
import { formatMoney, type Micros } from './money.ts';
import { agentPatternCovers, capabilityPatternCovers } from './patterns.ts';

/** The first way a child mandate widens its parent: the field and a sentence naming the values. */
export interface Widening {
  field: string;
  reason: string;
}

/**
 * Null when `child` is no wider than `parent`, else the first widening found, checking in this order:
 * 1. `issuer`: the child is issued by the parent's grantee.
 * 2. `expires_at`: the child expires no later than the parent (a parent with no expiry allows any).
 * 3. `budget.currency`: the same currency.
 * 4. `budget.fx`: exactly the parent's rates (inherited unchanged: a child cannot pick its rate).
 * 5. `budget.total`: at most the parent's total.
 * 6. `allow.agents`, 7. `allow.capabilities`: each child pattern is covered by a parent pattern of
 *    the same list. An agent id is not covered by a capability pattern: this module cannot see
 *    the agent's capabilities, so a parent must allow what its delegates call, by name or by class.
 * 8. `allow.published`: not true under a parent where it is false.
 * 9. `deny.agents`, 10. `deny.capabilities`: each parent pattern is covered by a child pattern.
 * 11. `require.open_source`: kept when the parent sets it.
 * 12. `require.runtimes`: a subset of the parent's list (null, any runtime, only under null).
 * 13. `data.remote`: kept false when the parent sets false.
 * 14. `approval.above`: set, and at most the parent's, when the parent sets it.
 * 15. `approval.agents`, 16. `approval.capabilities`: each parent pattern is covered by a child pattern.
 * 17. `delegation.max_depth`: at most the parent's − 1 (so a parent at 0 has no valid child).
 * Never throws on valid mandates.
 */
export function checkAttenuation(parent: Mandate, child: Mandate): Widening | null {
  const widening = (field: string, reason: string): Widening => ({ field, reason });
  const money = (micros: Micros): string => `${formatMoney(micros)} ${parent.budget.currency}`;

  if (child.issuer !== parent.grantee) {
    return widening('issuer', `the child is issued by ${child.issuer}, not by the parent's grantee ${parent.grantee}`);
  }
  if (parent.expires_at_ms !== null && (child.expires_at_ms === null || child.expires_at_ms > parent.expires_at_ms)) {
    const until = child.expires_at_ms === null ? 'never expires' : `expires at ${new Date(child.expires_at_ms).toISOString()}`;
    return widening('expires_at', `the child ${until}, after the parent (${new Date(parent.expires_at_ms).toISOString()})`);
  }
  if (child.budget.currency !== parent.budget.currency) {
    return widening('budget.currency', `the child budgets in ${child.budget.currency}, the parent in ${parent.budget.currency}`);
  }
  const currencies = new Set([...Object.keys(parent.budget.fx), ...Object.keys(child.budget.fx)]);
  for (const currency of currencies) {
    if (parent.budget.fx[currency] !== child.budget.fx[currency]) {
      return widening(`budget.fx.${currency}`, `the child's ${currency} rate differs from the parent's: fx is inherited unchanged`);
    }
  }
  if (child.budget.total_micros > parent.budget.total_micros) {
    return widening('budget.total', `the child's total ${money(child.budget.total_micros)} exceeds the parent's ${money(parent.budget.total_micros)}`);
  }
  const uncoveredAgent = firstUncovered(parent.allow.agents, child.allow.agents, agentPatternCovers);
  if (uncoveredAgent !== undefined) return widening('allow.agents', `the child allows "${uncoveredAgent}", which no parent allow.agents pattern covers`);
  const uncoveredCapability = firstUncovered(parent.allow.capabilities, child.allow.capabilities, capabilityPatternCovers);
  if (uncoveredCapability !== undefined) {
    return widening('allow.capabilities', `the child allows "${uncoveredCapability}", which no parent allow.capabilities pattern covers`);
  }
  if (child.allow.published && !parent.allow.published) return widening('allow.published', 'the child reaches published agents by capability and the parent does not');

  const droppedDeny = firstUncovered(child.deny.agents, parent.deny.agents, agentPatternCovers);
  if (droppedDeny !== undefined) return widening('deny.agents', `the child no longer denies "${droppedDeny}"`);
  const droppedDenyCapability = firstUncovered(child.deny.capabilities, parent.deny.capabilities, capabilityPatternCovers);
  if (droppedDenyCapability !== undefined) return widening('deny.capabilities', `the child no longer denies "${droppedDenyCapability}"`);

  if (parent.require.open_source && !child.require.open_source) return widening('require.open_source', 'the child no longer requires open source');
  const parentRuntimes = parent.require.runtimes;
  if (parentRuntimes !== null) {
    const extra = child.require.runtimes === null ? 'any runtime' : child.require.runtimes.find((kind) => !parentRuntimes.includes(kind));
    if (extra !== undefined) return widening('require.runtimes', `the child allows ${extra}, outside the parent's ${parentRuntimes.join(', ')}`);
  }
  if (!parent.data.remote && child.data.remote) return widening('data.remote', 'the child lets inputs reach remote servers and the parent does not');

  const parentAbove = parent.approval.above_micros;
  if (parentAbove !== null && (child.approval.above_micros === null || child.approval.above_micros > parentAbove)) {
    const childAbove = child.approval.above_micros === null ? 'no threshold' : `a threshold of ${money(child.approval.above_micros)}`;
    return widening('approval.above', `the child has ${childAbove}, above the parent's ${money(parentAbove)}`);
  }
  const droppedApproval = firstUncovered(child.approval.agents, parent.approval.agents, agentPatternCovers);
  if (droppedApproval !== undefined) return widening('approval.agents', `the child no longer requires approval for "${droppedApproval}"`);
  const droppedApprovalCapability = firstUncovered(child.approval.capabilities, parent.approval.capabilities, capabilityPatternCovers);
  if (droppedApprovalCapability !== undefined) return widening('approval.capabilities', `the child no longer requires approval for "${droppedApprovalCapability}"`);

  if (child.delegation.max_depth > parent.delegation.max_depth - 1) {
    return widening('delegation.max_depth', `the child's max_depth ${child.delegation.max_depth} is more than the parent's ${parent.delegation.max_depth} − 1`);
  }
  return null;
}

/** The first of `patterns` that no pattern of `covering` covers, or undefined. */
function firstUncovered(covering: readonly string[], patterns: readonly string[], covers: (outer: string, inner: string) => boolean): string | undefined {
  return patterns.find((inner) => !covering.some((outer) => covers(outer, inner)));
}
