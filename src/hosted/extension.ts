/**
 * The hosted layer (gateway §7) over a ready gateway, through the gateway's extension hooks
 * (`src/gateway/extension.ts`): the principal middleware, the scoped handler table, the rate
 * limits, the console pages, the demo, files, publishing and evaluation, and how `/mcp` binds a
 * session to the agent key. The composition root (`src/serve/hosted.ts`) plugs it in; nothing
 * below imports this module.
 */
import { randomBytes } from 'node:crypto';
import type Koa from 'koa';
import type { GatewayAppExtension, GatewayParts } from '../gateway/extension.ts';
import type { McpOptions } from '../mcp/server.ts';
import { credentialStatus } from './credentials.ts';
import { evaluateVersion, readEvaluations, type EvaluationDeps } from './evaluation.ts';
import { suiteSourceFromEnv } from './eval-suites.ts';
import type { EndpointAccess } from './endpoints.ts';
import { consolePages } from './console/pages.ts';
import { runtimeFor } from '../runtimes/index.ts';
import { readCatalog } from './catalog.ts';
import { featuresOf } from './features.ts';
import { DEMO_PATH, demoCors, demoRunner } from './demo.ts';
import { githubSignIn } from './github.ts';
import { rateLimits } from './limits.ts';
import { isDatabaseFailure } from './stop.ts';
import { interruptRunningClaims } from './idempotency.ts';
import { principalMiddleware, principalOf, requirePrincipal, type Principal } from './principal.ts';
import { hostedHandlers } from './routes.ts';
import type { HostedSettings } from './settings.ts';
import type { EarningsDeps } from './earnings.ts';
import type { PublishDeps } from './publish.ts';
import { linkKey } from './file-links.ts';
import { attachFiles } from './files.ts';

/** Where signed file links point: `HOLON_PUBLIC_URL`, else the gateway's own URL once it listens. */
export interface LinkOrigin {
  url: string | null;
}

/** What the hosted layer wires into publishing and the author's view from other modules; tests replace some. */
export type PublishingHooks = Pick<PublishDeps, 'checkEndpoint' | 'onPublished'> & Pick<EarningsDeps, 'evaluationsOf' | 'credentialSet'>;

/** Refuses `/mcp` to anything but an agent key (401 without a key, 403 for another principal). */
const mcpNeedsAgentKey: Koa.Middleware = async (ctx, next) => {
  if (ctx.path === '/mcp') requirePrincipal(ctx, ['agent']);
  await next();
};

/**
 * `/mcp` under keys (gateway §7): each session is bound to the agent key that opens it, runs
 * under that key's mandate, may ask in the client only when the key says so, and is owned by the
 * key's prefix. Only reached behind {@link hostedExtension}'s middleware, which refuses `/mcp` to
 * anything but an agent key.
 */
export const agentKeySession: NonNullable<McpOptions['session']> = (ctx) => {
  const principal = principalOf(ctx);
  if (principal.kind !== 'agent') throw new Error('/mcp reached without an agent key');
  return { mandate: principal.mandate, elicit: principal.key.ask_in_client, owner: principal.prefix };
};

/**
 * The hosted layer over a ready gateway: `settings`, the access to authors' endpoints, what stops
 * the process when the database failed, the files' clock and link origin, and `overrides` of the
 * publishing hooks (tests).
 */
export async function hostedExtension(
  parts: GatewayParts,
  settings: HostedSettings,
  endpoints: EndpointAccess,
  stop: (error: unknown) => void,
  files: { clock: () => number; origin: LinkOrigin },
  overrides: Partial<PublishingHooks> = {},
): Promise<GatewayAppExtension> {
  const db = parts.database.knex;
  // Without HOLON_FILE_SECRET (development only), links are signed with a key of this process.
  const link_key = linkKey(settings.file_secret ?? randomBytes(32).toString('base64url'));
  const origin = () => {
    if (files.origin.url === null) throw new Error('a file link was asked for before the gateway listens');
    return files.origin.url;
  };
  const evaluation: EvaluationDeps = { db, ...parts.agents, source: suiteSourceFromEnv(), logger: parts.logger, files: { key: link_key, origin }, clock: files.clock };
  const hooks: PublishingHooks = {
    checkEndpoint: endpoints.check,
    credentialSet: (id) => credentialStatus(db, ...(id.split('/') as [string, string])),
    // In the background: publishing answers at once; a failed run is logged, its stored state says `running` or `failed`.
    onPublished: (version) => {
      const listed = parts.registry.get(version.id, version.version);
      if (listed) void evaluateVersion(evaluation, listed).catch((error) => parts.logger.error({ err: error, agent: version.agent }, 'an evaluation failed'));
    },
    evaluationsOf: (agent) => readEvaluations(db, ...(agent.split('@') as [string, string])),
    ...overrides,
  };
  const limits = rateLimits(settings.rate_limits, settings.trust_proxy, parts.database);
  const deps = {
    db,
    gateway: parts.gateway,
    clearing: parts.clearing,
    signer: parts.signer,
    signup_credit_micros: settings.signup_credit_micros,
    fx: settings.fx,
    authorNamespaces: () => new Set(parts.registry.latest().map((agent) => agent.loaded.manifest.id.split('/')[0])),
  };
  parts.gateway.useFiles((input, owner) => attachFiles(db, { key: link_key, origin }, input, owner, files.clock()));
  const fileDeps = { db, link_key, bounds: settings.file_bounds, now_ms: files.clock };
  const routeDeps = {
    ...deps,
    github: githubSignIn(deps, settings),
    limitSignup: limits.signup,
    endpoints,
    files: fileDeps,
    publish: { db, registry: parts.registry, github: settings.github, checkEndpoint: hooks.checkEndpoint, onPublished: hooks.onPublished, logger: parts.logger },
    earnings: { db, evaluationsOf: hooks.evaluationsOf, credentialSet: hooks.credentialSet },
    features: featuresOf(settings),
    catalog: () => readCatalog(db, parts.registry, settings.records),
    demo: demoRunner({ registry: parts.registry, runtimeFor: (kind) => runtimeFor(kind), trust_proxy: settings.trust_proxy, store: parts.database }),
  };
  return {
    middleware: [demoCors(settings.site_url), limits.byAddress, consolePages(settings.site_url), principalMiddleware(db, settings.admin_key), limits.byPrincipal, mcpNeedsAgentKey],
    cross_origin: settings.site_url === null ? undefined : { path_prefix: DEMO_PATH, origins: [new URL(settings.site_url).origin] },
    handlers: (defaults) => hostedHandlers(routeDeps, defaults),
    recover: (dead, unowned) => interruptRunningClaims(db, dead, unowned),
    log_principal: (ctx) => {
      const principal = ctx.state.principal as Principal | undefined;
      return principal === undefined ? 'unresolved' : principal.kind === 'none' ? 'none' : principal.prefix;
    },
    onUnexpected: (error) => {
      if (isDatabaseFailure(error)) stop(error);
    },
  };
}
