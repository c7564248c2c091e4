/**
 * How the gateway reaches an agent version (gateway §6 "Runtimes", "Authentication"; §7 "Network
 * safety"): a shipped agent through the gateway's own runtimes and no credential; a published one,
 * when the composition gives {@link PublishedAccess} (the hosted gateway), through runtimes on its
 * guarded fetch and with its author's endpoint credential. Chosen by where a listed version came
 * from (`ListedAgent.published`), never by its URL.
 */
import type { Knex } from 'knex';
import type { Fetch } from '../runtimes/http.ts';
import type { Runtimes } from '../runtimes/index.ts';
import type { GatewayDeps } from './lifecycle.ts';

/** How the gateway reaches published agents (the hosted gateway). */
export interface PublishedAccess {
  /** The fetch of every request to a published agent's endpoint. */
  fetch: Fetch;
  /** The author's endpoint credential of agent `ns/name`, or null. */
  credential(db: Knex, agent: string): Promise<string | null>;
}

/** How an agent version is reached: its runtime (the guarded client for a published one) and its endpoint credential. */
export type AgentAccess = Pick<GatewayDeps, 'runtimeFor' | 'credentialFor'>;

/**
 * The {@link AgentAccess} of a gateway: `runtimes` for every version, unless `published` is
 * given and the version was published, which then runs on `published.runtimes` (made on
 * `published.access.fetch`) with `published.access`'s credential.
 */
export function agentAccess(db: Knex, runtimes: Runtimes, published: { access: PublishedAccess; runtimes: Runtimes } | null): AgentAccess {
  return {
    runtimeFor: (agent) => (agent.published && published ? published.runtimes : runtimes).runtimeFor(agent.loaded.manifest.runtime.kind),
    credentialFor: async (agent) => (agent.published && published ? published.access.credential(db, agent.loaded.manifest.id) : null),
  };
}
