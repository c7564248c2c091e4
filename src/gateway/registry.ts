/**
 * The catalogue of listed agent versions (gateway §1 "Resolve", §5 `/v0/agents`). Every version
 * is a row of `gateway_agents`; this process keeps them in memory, with their compiled interface
 * validators, rebuilt from the database at start-up. Shipped directories (`examples/`, `agents/`)
 * are loaded into the database each start: a `holon.yaml` per agent, and for `dev` agents the
 * `agent.mjs` beside it.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import canonicalize from 'canonicalize';
import type { Knex } from 'knex';
import { parse as parseYaml } from 'yaml';
import { validateManifest, type LoadedManifest, type Manifest } from '../contracts/manifest.ts';
import { parseAgentRef, resolveVersion } from '../contracts/resolve.ts';
import semver from 'semver';

/** One listed version: the validated manifest and its checks, where its files are, and whether an author published it. */
export interface ListedAgent {
  /** The manifest as its author wrote it (the JSON form of `holon.yaml`). */
  document: Record<string, unknown>;
  loaded: LoadedManifest;
  /** The directory of `holon.yaml` for shipped agents; null for published ones. */
  dir: string | null;
  /** Published by an author (runs on the author's server), as opposed to shipped with the gateway. */
  published: boolean;
}

/** `ns/name@x.y.z` of a listed version. */
export const agentRef = (manifest: Manifest): string => `${manifest.id}@${manifest.version}`;

/** `document` with `runtime.endpoint` set to `endpoint` when it is an MCP agent's manifest and `endpoint` is given. */
function withEndpoint(document: Record<string, unknown>, endpoint: string | undefined): Record<string, unknown> {
  const runtime = document?.runtime as Record<string, unknown> | undefined;
  if (endpoint === undefined || runtime?.kind !== 'mcp') return document;
  return { ...document, runtime: { ...runtime, endpoint } };
}

/** The in-memory catalogue over `gateway_agents`. */
export class Registry {
  private readonly versions = new Map<string, Map<string, ListedAgent>>();
  /** Published versions no longer listed (yanked), by `ns/name@x.y.z`: forks of them still pay their royalties. */
  private readonly yanked = new Map<string, Manifest>();

  /** Every listed version of `id`, highest first. */
  versionsOf(id: string): string[] {
    return semver.rsort([...(this.versions.get(id)?.keys() ?? [])]);
  }

  /** The listed version `version` of `id`. */
  get(id: string, version: string): ListedAgent | undefined {
    return this.versions.get(id)?.get(version);
  }

  /**
   * The manifest of `ns/name@x.y.z`, for lineage lookups: a listed version, or a yanked published
   * one, so a fork listed before its upstream was yanked keeps paying its royalties (gateway §7
   * "Limits": royalties always settle).
   */
  manifestOf(ref: string): Manifest | undefined {
    const { id, range } = parseAgentRef(ref);
    return range === null ? undefined : (this.get(id, range)?.loaded.manifest ?? this.yanked.get(ref));
  }

  /**
   * `ns/name[@range]` → the highest listed version in range (gateway §1 "Resolve"), or null.
   * Throws ContractError `invalid_ref` on a malformed reference.
   */
  resolve(ref: string): ListedAgent | null {
    const { id } = parseAgentRef(ref);
    const version = resolveVersion(ref, this.versionsOf(id));
    return version === null ? null : this.get(id, version)!;
  }

  /**
   * Why `ref` resolves to nothing, for a 404 `no_such_agent`: no agent of that id, or the
   * versions that exist when the range matches none of them (gateway §1 "Resolve").
   */
  missing(ref: string): string {
    const { id, range } = parseAgentRef(ref);
    const versions = this.versionsOf(id);
    if (versions.length === 0) return `no listed agent matches ${ref}: GET /v0/agents lists the agents offered`;
    return `no listed version of ${id} matches ${range}: the versions listed are ${versions.join(', ')}`;
  }

  /** The highest listed version of every agent, in id order. */
  latest(): ListedAgent[] {
    return [...this.versions.keys()].sort().map((id) => this.get(id, this.versionsOf(id)[0])!);
  }

  /** The highest listed version of every agent implementing `capability`. */
  implementers(capability: string): ListedAgent[] {
    return this.latest().filter((agent) => agent.loaded.manifest.capabilities.includes(capability));
  }

  /** Lists `agent` in this process (a version just stored, e.g. published: gateway §7 "Publishing agents"). */
  list(agent: ListedAgent): void {
    const { id, version } = agent.loaded.manifest;
    if (!this.versions.has(id)) this.versions.set(id, new Map());
    this.versions.get(id)!.set(version, agent);
  }

  /** Stops listing `id@version` in this process (a yank), keeping its manifest for royalties; a version not listed is left as it is. */
  unlist(id: string, version: string): void {
    const versions = this.versions.get(id);
    const agent = versions?.get(version);
    if (!agent) return;
    this.yanked.set(agentRef(agent.loaded.manifest), agent.loaded.manifest);
    versions!.delete(version);
    if (versions!.size === 0) this.versions.delete(id);
  }

  /**
   * Loads every `<dir>/*\/holon.yaml` into the database (a version already stored with other
   * content is replaced: shipped agents change with the code) and leaves out ids in `exclude`.
   * `mcp_endpoints` maps a directory whose MCP agents a local host serves (`agents`, served by
   * `agents/host.mjs`) to that host's URL, which replaces their `runtime.endpoint`: the host's
   * port is configurable, the manifests name its default. Throws ContractError naming the file
   * when a manifest is invalid. A version already stored from the same directory with the same
   * content (JSON compared canonically, its `runtime.endpoint` included) is neither validated nor
   * written again (issue 21 §4: about 0.2 s of CPU at each start): it was valid when stored, and
   * `fromDatabase` validates every listed version anyway.
   */
  static async loadShipped(db: Knex, dirs: readonly string[], exclude: readonly string[], mcp_endpoints: ReadonlyMap<string, string> = new Map()): Promise<void> {
    const stored = new Map<string, string>();
    for (const row of await db('gateway_agents').where({ published: false, listed: true }).select('id', 'version', 'source', 'manifest')) {
      stored.set(`${row.source}\n${row.id}@${row.version}`, canonicalize(typeof row.manifest === 'string' ? JSON.parse(row.manifest) : row.manifest)!);
    }
    for (const dir of dirs) {
      let entries: string[];
      try {
        entries = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name).sort();
      } catch {
        continue;
      }
      for (const entry of entries) {
        const agentDir = path.resolve(dir, entry);
        let text: string;
        try {
          text = await readFile(path.join(agentDir, 'holon.yaml'), 'utf8');
        } catch {
          continue;
        }
        let document: Record<string, unknown>;
        let id: string;
        let version: string;
        let unchanged: boolean;
        try {
          document = withEndpoint(parseYaml(text, { schema: 'core', uniqueKeys: true }), mcp_endpoints.get(dir));
          unchanged = stored.get(`${agentDir}\n${document.id}@${document.version}`) === canonicalize(document);
          ({ id, version } = unchanged ? (document as { id: string; version: string }) : validateManifest(document).manifest);
        } catch (error) {
          throw new Error(`${path.join(dir, entry, 'holon.yaml')}: ${(error as Error).message}`);
        }
        if (exclude.includes(id)) {
          await db('gateway_agents').where({ id, source: agentDir }).delete();
          continue;
        }
        if (unchanged) continue;
        const row = { id, version, manifest: JSON.stringify(document), source: agentDir, published: false, listed: true };
        await db('gateway_agents').insert(row).onConflict(['id', 'version']).merge();
      }
    }
  }

  /**
   * Builds the catalogue from `gateway_agents`: listed versions, and yanked published ones for
   * royalties only. Throws when a stored manifest is no longer valid.
   */
  static async fromDatabase(db: Knex): Promise<Registry> {
    const registry = new Registry();
    for (const row of await db('gateway_agents').where({ listed: true }).orWhere({ published: true }).orderBy(['id', 'version'])) {
      const document = typeof row.manifest === 'string' ? JSON.parse(row.manifest) : row.manifest;
      const loaded = validateManifest(document);
      if (row.listed) registry.list({ document, loaded, dir: row.published ? null : row.source, published: row.published });
      else registry.yanked.set(agentRef(loaded.manifest), loaded.manifest);
    }
    return registry;
  }
}
