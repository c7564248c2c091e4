/**
 * Publishing (gateway §7 "Publishing agents"): `POST /v0/agents` lists a version of an author's
 * agent at once when every condition holds, checked in this fixed order (the first refusal
 * answers, and nothing is stored):
 * 1. a GitHub app is configured, else 503 `publishing_off`;
 * 2. the account is linked to GitHub, else 403 `github_link_required`;
 * 3. the manifest is valid: the body against the manifest schema (422 `invalid_request`, checked
 *    by the mount before this module), then its rules (422 `invalid_manifest` / `invalid_schema`);
 * 4. its `id` is in the author's namespace, else 403 `not_your_namespace`;
 * 5. `runtime.kind` is `mcp` or `webhook`, else 422 `runtime_not_publishable`;
 * 6. `runtime.endpoint` is `https` without credentials, else 422 `endpoint_refused`;
 * 7. a fork names a listed version, its chain is bounded and does not loop, else 422 `invalid_lineage`;
 * 8. the version was never published (yanked ones included), else 409 `version_exists`;
 * 9. the account has fewer than {@link MAX_VERSIONS_PER_ACCOUNT} versions, else 422 `too_many_versions`;
 * 10. an open-source agent's `source.repository` is a public GitHub repository of the author
 *    (`github-source.ts`); a `proprietary` one is not checked and is labelled everywhere it is listed;
 * 11. the endpoint resolves only to public addresses: the injected `checkEndpoint` (network safety,
 *    gateway §7), whose refusal is 422 `endpoint_not_public`.
 * Versions are immutable and a yank never frees a number; the database enforces both
 * (migration `011_publishing`). Once listed, `onPublished` (the evaluation at publish time) runs
 * in the background.
 */
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { GatewayErrorCode } from '../../generated/gateway/server.ts';
import { ContractError, type ContractErrorCode } from '../contracts/errors.ts';
import { lineageChain } from '../contracts/lineage.ts';
import { validateManifest, type LoadedManifest } from '../contracts/manifest.ts';
import { iso } from '../db/index.ts';
import { HttpError } from '../http/errors.ts';
import { agentRef, type Registry } from '../gateway/registry.ts';
import type { components } from '../../generated/gateway/types.ts';
import { PUBLISHING_OFF } from './features.ts';
import { checkSourceRepository } from './github-source.ts';
import type { HostedSettings } from './settings.ts';

/** The most versions one account may publish, yanked ones included: 1,000. */
export const MAX_VERSIONS_PER_ACCOUNT = 1000;

/** A version just listed, as {@link PublishDeps.onPublished} receives it. */
export interface PublishedVersion {
  /** `ns/name@x.y.z`. */
  agent: string;
  id: string;
  version: string;
  account: string;
  proprietary: boolean;
  loaded: LoadedManifest;
}

/** What publishing needs from the composition. */
export interface PublishDeps {
  db: Knex;
  registry: Registry;
  /** The GitHub app; null: publishing answers 503. */
  github: HostedSettings['github'];
  /**
   * Network safety at publish time: resolves when `url` resolves only to public addresses, throws
   * (any Error, its message relayed) otherwise. An `HttpError` it throws is answered as it is.
   */
  checkEndpoint: (url: string) => Promise<void>;
  /** Called once a version is listed (the evaluation at publish time); never awaited by the request, a failure is logged. */
  onPublished: (version: PublishedVersion) => void | Promise<void>;
  logger: Logger;
}

/** A publication as the API shows it: the `Publication` schema of `openapi/gateway.yaml`. */
export type PublicationView = components['schemas']['Publication'];

/** A `hosted_publications` row (joined with its license) as a {@link PublicationView}. */
export function publicationView(row: Record<string, any>, license: string): PublicationView {
  return {
    agent: `${row.id}@${row.version}`,
    id: row.id,
    version: row.version,
    license,
    proprietary: Boolean(row.proprietary),
    listed: row.yanked_at === null,
    published_at: iso(row.published_at)!,
    yanked_at: iso(row.yanked_at),
    yanked_by: row.yanked_by,
    yank_reason: row.yank_reason,
  };
}

/** The contract refusals a manifest's checks raise, each answered 422 with its own code. */
const MANIFEST_REFUSALS = ['invalid_manifest', 'invalid_schema', 'invalid_money', 'invalid_ref', 'invalid_lineage'] as const satisfies readonly GatewayErrorCode[];

/** 422 with the contract refusal's own code; a code the manifest checks never raise (an agent's report's) answers `invalid_manifest`. */
function contractRefusal(error: ContractError): HttpError {
  const own = (code: ContractErrorCode): code is (typeof MANIFEST_REFUSALS)[number] => (MANIFEST_REFUSALS as readonly string[]).includes(code);
  return new HttpError(422, own(error.code) ? error.code : 'invalid_manifest', error.message);
}

/** Validates the manifest document; a contract refusal is 422 with its own code. */
function validated(document: unknown): LoadedManifest {
  try {
    return validateManifest(document);
  } catch (error) {
    if (error instanceof ContractError) throw contractRefusal(error);
    throw error;
  }
}

/** Rule 6: `https`, a host, no user name or password. Throws 422 `endpoint_refused`. */
function checkEndpointShape(endpoint: string | null): string {
  const refused = (why: string) => new HttpError(422, 'endpoint_refused', `runtime.endpoint ${why}: a published agent runs at an https URL of its author's server, and its credential is set with PUT /v0/agents/{ns}/{name}/credential`);
  if (endpoint === null) throw refused('is missing');
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw refused(`${JSON.stringify(endpoint)} is not a URL`);
  }
  if (url.protocol !== 'https:') throw refused(`must be https, not ${url.protocol.replace(':', '')}`);
  if (url.username !== '' || url.password !== '') throw refused('must not carry credentials (user:password@)');
  return endpoint;
}

/** Rule 7: the direct upstream is listed; the whole chain is bounded and loop-free. Throws 422 `invalid_lineage`. */
function checkLineage(registry: Registry, loaded: LoadedManifest): void {
  const { lineage } = loaded.manifest;
  if (lineage === null) return;
  const [id, version] = lineage.fork_of.split('@');
  if (!registry.get(id, version)) throw new HttpError(422, 'invalid_lineage', `lineage.fork_of: ${lineage.fork_of} is not a listed version: a fork must name a listed agent`);
  try {
    lineageChain(loaded.manifest, (ref) => registry.manifestOf(ref));
  } catch (error) {
    if (error instanceof ContractError) throw contractRefusal(error);
    throw error;
  }
}

/**
 * Publishes `document` (the manifest as JSON) for `account` and lists it at once. Answers the
 * publication; throws the refusals listed in this module's header, in that order.
 */
export async function publishVersion(deps: PublishDeps, account: string, document: unknown): Promise<PublicationView> {
  const { db, registry } = deps;
  if (deps.github === null) {
    throw new HttpError(503, 'publishing_off', `${PUBLISHING_OFF}; calls to listed agents keep being served`);
  }
  const row = await db('hosted_accounts').where({ handle: account }).first('github_id', 'github_login');
  if (!row || row.github_id === null) throw new HttpError(403, 'github_link_required', 'publishing needs an account linked to GitHub: sign in with GitHub (GET /v0/auth/github) with the same email, then publish again');
  const github = { id: Number(row.github_id), login: row.github_login as string };
  const loaded = validated(document);
  const { manifest } = loaded;
  const [ns] = manifest.id.split('/');
  if (ns !== account) throw new HttpError(403, 'not_your_namespace', `id ${manifest.id} is outside your namespace: publish it as ${account}/<name>`);
  if (manifest.runtime.kind !== 'mcp' && manifest.runtime.kind !== 'webhook') {
    throw new HttpError(422, 'runtime_not_publishable', `runtime.kind ${manifest.runtime.kind} cannot be published: published agents run on their author's server, as mcp or webhook (gateway §6)`);
  }
  const endpoint = checkEndpointShape(manifest.runtime.endpoint);
  checkLineage(registry, loaded);
  const agent = agentRef(manifest);
  const taken = () => new HttpError(409, 'version_exists', `${agent} was published before: versions are immutable and a yanked number is never reused; publish a higher version`);
  if (await db('gateway_agents').where({ id: manifest.id, version: manifest.version }).first('id')) throw taken();
  const proprietary = manifest.license === 'proprietary';
  if (!proprietary) {
    if (manifest.source === null) throw new HttpError(422, 'source_required', `license ${manifest.license} is open source: set source.repository to its public GitHub repository, or set license: proprietary`);
    await checkSourceRepository(deps.github, github, manifest.source.repository);
  }
  try {
    await deps.checkEndpoint(endpoint);
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw new HttpError(422, 'endpoint_not_public', `runtime.endpoint ${endpoint} is refused: ${(error as Error).message}`);
  }

  const stored = await db.transaction(async (trx) => {
    await trx('hosted_accounts').where({ handle: account }).forUpdate().first('handle');
    const count = Number((await trx('hosted_publications').where({ account }).count({ n: '*' }))[0].n);
    if (count >= MAX_VERSIONS_PER_ACCOUNT) throw new HttpError(422, 'too_many_versions', `an account publishes at most ${MAX_VERSIONS_PER_ACCOUNT} versions, yanked ones included`);
    const inserted = await trx('gateway_agents')
      .insert({ id: manifest.id, version: manifest.version, manifest: JSON.stringify(document), source: account, published: true, listed: true })
      .onConflict(['id', 'version'])
      .ignore()
      .returning('id');
    if (inserted.length === 0) throw taken();
    const [publication] = await trx('hosted_publications').insert({ id: manifest.id, version: manifest.version, account, proprietary }).returning('*');
    return publication;
  });
  registry.list({ document: document as Record<string, unknown>, loaded, dir: null, published: true });
  const published: PublishedVersion = { agent, id: manifest.id, version: manifest.version, account, proprietary, loaded };
  // The evaluation runs in the background: the author gets the listing now, the results later.
  void Promise.resolve()
    .then(() => deps.onPublished(published))
    .catch((error) => deps.logger.error({ err: error, agent }, 'the evaluation hook failed for a published version'));
  return publicationView(stored, manifest.license);
}

/** Who yanks: the author (`DELETE /v0/agents/...`) or the operator (moderation, with a reason). */
export type Yanker = { by: 'author'; account: string } | { by: 'operator' };

/**
 * Yanks `id@version` inside `trx`: it stops being listed, its number stays taken. The author may
 * yank only its own versions (anyone else's is 404 `no_such_agent`); the operator any published
 * one, never a shipped agent (422 `not_moderated`). Throws 404 `no_such_agent`, 409
 * `already_yanked`. Answers the publication; the caller unlists it from the registry after commit.
 */
export async function yankInTransaction(trx: Knex.Transaction, id: string, version: string, yanker: Yanker, reason: string | null): Promise<PublicationView> {
  const agent = `${id}@${version}`;
  const listedRow = await trx('gateway_agents').where({ id, version }).forUpdate().first('published', 'manifest');
  const publication = listedRow ? await trx('hosted_publications').where({ id, version }).forUpdate().first() : undefined;
  const none = new HttpError(404, 'no_such_agent', `there is no published version ${agent}`);
  if (!listedRow || (yanker.by === 'author' && publication?.account !== yanker.account)) throw none;
  if (!listedRow.published || !publication) {
    throw new HttpError(422, 'not_moderated', `${agent} is shipped with the gateway: it changes with the code, not by moderation`);
  }
  if (publication.yanked_at !== null) throw new HttpError(409, 'already_yanked', `${agent} was yanked already (${iso(publication.yanked_at)}, by the ${publication.yanked_by})`);
  await trx('gateway_agents').where({ id, version }).update({ listed: false });
  const [yanked] = await trx('hosted_publications')
    .where({ id, version })
    .update({ yanked_at: trx.fn.now(), yanked_by: yanker.by, yank_reason: reason })
    .returning('*');
  const manifest = typeof listedRow.manifest === 'string' ? JSON.parse(listedRow.manifest) : listedRow.manifest;
  return publicationView(yanked, manifest.license);
}

/** The author's yank (`DELETE /v0/agents/{ns}/{name}@{version}`): stops listing it, never frees the number. */
export async function yankByAuthor(deps: Pick<PublishDeps, 'db' | 'registry'>, account: string, id: string, version: string): Promise<PublicationView> {
  const yanked = await deps.db.transaction((trx) => yankInTransaction(trx, id, version, { by: 'author', account }, null));
  deps.registry.unlist(id, version);
  return yanked;
}
