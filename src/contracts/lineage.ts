/**
 * Lineage: the chain of forks a paid call's royalties climb (gateway §2 "Split", §7 "Limits": a
 * fork must name a listed agent; chains are bounded and cannot loop).
 */
import { ContractError } from './errors.ts';
import type { Manifest } from './manifest.ts';

/** The most levels a chain may have, the called agent included. */
export const MAX_LINEAGE_LEVELS = 8;

/**
 * One level of a royalty chain. `account` is the agent's namespace (its author's account);
 * `royalty_ppm` is the share of this level's revenue paid to the next level, in parts per million
 * (0 at the top of the chain).
 */
export interface LineageLevel {
  agent: string;
  account: string;
  royalty_ppm: number;
}

/**
 * The royalty chain of `manifest`: level 0 is the agent itself, each next level the version its
 * `lineage.fork_of` names, up to an agent that is not a fork. `lookup(ref)` returns the listed
 * manifest of `ns/name@x.y.z`, or undefined when no such version is listed.
 * Throws ContractError `invalid_lineage` (field `lineage.fork_of`) when a fork names a version that
 * is not listed, when the chain comes back to a version already in it, or when it would have more
 * than {@link MAX_LINEAGE_LEVELS} levels.
 */
export function lineageChain(manifest: Manifest, lookup: (ref: string) => Manifest | undefined): LineageLevel[] {
  const chain: LineageLevel[] = [];
  let current: Manifest | undefined = manifest;
  while (current !== undefined) {
    const agent = `${current.id}@${current.version}`;
    const refuse = (sentence: string): never => {
      throw new ContractError('invalid_lineage', `lineage.fork_of: ${sentence}`, 'lineage.fork_of');
    };
    if (chain.some((level) => level.agent === agent)) refuse(`the chain of forks loops back to ${agent}`);
    if (chain.length === MAX_LINEAGE_LEVELS) refuse(`the chain of forks from ${chain[0].agent} is longer than ${MAX_LINEAGE_LEVELS} levels`);
    chain.push({ agent, account: current.id.split('/')[0], royalty_ppm: current.lineage?.royalty_ppm ?? 0 });
    if (current.lineage === null) break;
    const upstream = lookup(current.lineage.fork_of);
    if (upstream === undefined) refuse(`${agent} forks ${current.lineage.fork_of}, which is not a listed version`);
    current = upstream;
  }
  return chain;
}
