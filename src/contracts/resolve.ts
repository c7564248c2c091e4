/**
 * Agent references and version resolution (gateway §1 "Resolve").
 */
import semver from 'semver';
import { ContractError } from './errors.ts';
import { AGENT_ID } from './schemas.ts';

/** A parsed `ns/name[@range]`: the agent id and the semver range, or null for "any version". */
export interface AgentRef {
  id: string;
  range: string | null;
}

/**
 * Parses `ns/name` or `ns/name@range` (`holon-labs/csv-profile@^1`, `acme/extract@1.2.0`).
 * Throws ContractError `invalid_ref` when the id is malformed or the range is not a semver range.
 */
export function parseAgentRef(ref: string): AgentRef {
  const at = ref.indexOf('@');
  const id = at === -1 ? ref : ref.slice(0, at);
  const range = at === -1 ? null : ref.slice(at + 1);
  if (!AGENT_ID.test(id)) {
    throw new ContractError('invalid_ref', `${JSON.stringify(ref)}: the agent id must be ns/name in lowercase letters, digits and hyphens`);
  }
  if (range !== null && (range.trim() === '' || semver.validRange(range) === null)) {
    throw new ContractError('invalid_ref', `${JSON.stringify(ref)}: ${JSON.stringify(range)} is not a semver range`);
  }
  return { id, range };
}

/**
 * The highest of `listed` versions (the agent's listed, non-yanked versions) that satisfies the
 * reference's range, or null when none does. No range means any version. Prereleases are picked
 * only by a range that names one, as in npm (manifest `version`).
 * Throws ContractError `invalid_ref` on a malformed reference.
 */
export function resolveVersion(ref: string, listed: readonly string[]): string | null {
  return semver.maxSatisfying([...listed], parseAgentRef(ref).range ?? '*');
}
