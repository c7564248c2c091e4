/**
 * The agent and capability patterns of a mandate's `allow`, `deny` and `approval` lists: whether
 * a pattern matches an agent, and whether one pattern covers another (for attenuation).
 *
 * Agent patterns: `*`, `ns/*`, `ns/name`, `ns/name@range`. Capability patterns: `*`, `a.b.*`
 * (everything under `a.b.`, not `a.b` itself), `a.b`. Patterns are schema-checked when the
 * mandate is validated; a malformed one here throws ContractError `invalid_ref`.
 */
import semver from 'semver';
import { parseAgentRef } from './resolve.ts';

type AgentPattern = { kind: 'all' } | { kind: 'namespace'; ns: string } | { kind: 'agent'; id: string; range: string | null };

function parseAgentPattern(pattern: string): AgentPattern {
  if (pattern === '*') return { kind: 'all' };
  if (pattern.endsWith('/*')) return { kind: 'namespace', ns: pattern.slice(0, -2) };
  return { kind: 'agent', ...parseAgentRef(pattern) };
}

/** Whether agent `id` at `version` matches `pattern` (a range excludes prereleases unless it names one). */
export function agentMatches(pattern: string, id: string, version: string): boolean {
  const parsed = parseAgentPattern(pattern);
  switch (parsed.kind) {
    case 'all':
      return true;
    case 'namespace':
      return id.startsWith(`${parsed.ns}/`);
    case 'agent':
      return parsed.id === id && (parsed.range === null || semver.satisfies(version, parsed.range));
  }
}

/** Whether `capability` matches `pattern`. */
export function capabilityMatches(pattern: string, capability: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('.*')) return capability.startsWith(pattern.slice(0, -1));
  return pattern === capability;
}

/**
 * Whether every agent `inner` matches is also matched by `outer`: `*` covers all; `ns/*` covers
 * its namespace's patterns; `ns/name` covers itself with any range; `ns/name@r` covers
 * `ns/name@s` when `s` is a subset of `r`.
 */
export function agentPatternCovers(outer: string, inner: string): boolean {
  const o = parseAgentPattern(outer);
  const i = parseAgentPattern(inner);
  if (o.kind === 'all') return true;
  if (i.kind === 'all') return false;
  if (o.kind === 'namespace') return (i.kind === 'namespace' ? i.ns : i.id.split('/')[0]) === o.ns;
  if (i.kind !== 'agent' || i.id !== o.id) return false;
  if (o.range === null) return true;
  return i.range !== null && semver.subset(i.range, o.range);
}

/** Whether every capability `inner` matches is also matched by `outer`. */
export function capabilityPatternCovers(outer: string, inner: string): boolean {
  if (outer === '*') return true;
  if (inner === '*') return false;
  if (outer.endsWith('.*')) return inner.startsWith(outer.slice(0, -1));
  return outer === inner;
}
