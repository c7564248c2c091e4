/**
 * `holon serve --hosted` (gateway §7): the composition root of the hosted gateway. It starts the
 * same gateway as `holon serve` (Postgres from `DATABASE_URL`, else PGlite in `db`) and wires the
 * hosted layer above it through the gateway's extension hooks: the principal middleware, the
 * scoped handler table, `/mcp` under the agent key's mandate. Nothing below imports this module.
 */
import { randomBytes } from 'node:crypto';
import type Koa from 'koa';
import pino, { type Logger } from 'pino';
import { excludedAgents, startGateway, type GatewayParts, type RunningGateway } from '../gateway/server.ts';
import type { GatewayAppExtension } from '../gateway/app.ts';
import { allowedHostsFromEnv } from '../http/host-gate.ts';
import { credentialStatus } from './credentials.ts';
import { evaluateVersion, readEvaluations, type EvaluationDeps } from './evaluation.ts';
import { suiteSourceFromEnv } from './eval-suites.ts';
import { endpointAccess, type EndpointAccess } from './endpoints.ts';
import type { Resolve } from './egress.ts';
import { consolePages } from './console/pages.ts';
import { runtimeFor } from '../runtimes/index.ts';
import { readCatalog } from './catalog.ts';
import { DEMO_PATH, demoCors, demoRunner } from './demo.ts';
import { githubSignIn } from './github.ts';
import { rateLimits } from './limits.ts';
import { isDatabaseFailure } from './stop.ts';
import { interruptRunningClaims } from './idempotency.ts';
import { principalMiddleware, principalOf, requirePrincipal, type Principal } from './principal.ts';
import { hostedHandlers } from './routes.ts';
import { readSettings, type HostedSettings } from './settings.ts';
import type { EarningsDeps } from './earnings.ts';
import type { PublishDeps } from './publish.ts';
import { linkKey } from './file-links.ts';
import { attachFiles } from './files.ts';
import { startFileSweep } from './file-sweep.ts';

/** Options of {@link startHostedGateway}. */
export interface HostedGatewayOptions {
  /** TCP port; 0 picks a free one. */
  port: number;
  /** Interface to listen on (default 127.0.0.1). */
  host?: string;
  /** PGlite data directory when no PostgreSQL URL is given. */
  db: string;
  /** PostgreSQL (default: `DATABASE_URL`). */
  database_url?: string;
  /** A clearing binding's URL; absent: the reference binding runs in this process (as `startGateway`'s `clearing_url`). */
  clearing_url?: string;
  /** Settings (default: read from the environment, see `settings.ts`). */
  settings?: HostedSettings;
  /** Directories of shipped agents (default: `HOLON_REGISTRY`, comma-separated, else `agents`). */
  agent_dirs?: readonly string[];
  /** Agent ids left out (default `HOLON_EXCLUDE`). */
  exclude?: readonly string[];
  /** What stops the process when the database failed (default: log and exit 1). */
  stop?: (error: unknown) => void;
  /** Replaces hooks of publishing (gateway §7 "Publishing agents"), for tests: e.g. an endpoint check that accepts a loopback server. */
  publishing?: Partial<PublishingHooks>;
  /** Port of `agents/host.mjs` (default `HOLON_AGENTS_PORT`, else 4300); null: do not start it. */
  agents_host_port?: number | null;
  /**
   * Public names the gateway answers to besides its listening address (DNS-rebinding gate);
   * default `HOLON_ALLOWED_HOSTS`. `HOLON_PUBLIC_URL`'s host is always one of them.
   */
  allowed_hosts?: readonly string[];
  logger?: Logger;
  /** The resolver of authors' endpoint hosts (default: the system's); tests inject a stand-in. */
  resolve?: Resolve;
  /** Certificate authorities (PEM) the guarded client trusts instead of Node's (default: Node's); tests trust their own agent's certificate. */
  ca?: string;
  /** The clock of files (upload time, link expiry, the sweep), ms since the epoch; default `Date.now`. Tests move it. */
  clock?: () => number;
}

/** Where signed file links point: `HOLON_PUBLIC_URL`, else the gateway's own URL once it listens. */
interface LinkOrigin {
  url: string | null;
}

/** What the hosted layer wires into publishing and the author's view from other modules; tests replace some. */
export type PublishingHooks = Pick<PublishDeps, 'checkEndpoint' | 'onPublished'> & Pick<EarningsDeps, 'evaluationsOf' | 'credentialSet'>;

/** The agent directories `HOLON_REGISTRY` names, `agents` by default: the demo agents of `examples/` are never listed unless added. */
export function registryDirs(): string[] {
  return (process.env.HOLON_REGISTRY ?? 'agents').split(',').map((dir) => dir.trim()).filter(Boolean);
}

/** Refuses `/mcp` to anything but an agent key (401 without a key, 403 for another principal). */
const mcpNeedsAgentKey: Koa.Middleware = async (ctx, next) => {
  if (ctx.path === '/mcp') requirePrincipal(ctx, ['agent']);
  await next();
};

/** The hosted layer over a ready gateway. */
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
  const limits = rateLimits(settings.rate_limits, settings.trust_proxy);
  const deps = {
    db,
    gateway: parts.gateway,
    clearing: parts.clearing,
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
    catalog: () => readCatalog(db, parts.registry, settings.records),
    demo: demoRunner({ registry: parts.registry, runtimeFor: (kind) => runtimeFor(kind), trust_proxy: settings.trust_proxy }),
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
    mcp_session: (ctx) => {
      const principal = principalOf(ctx);
      if (principal.kind !== 'agent') throw new Error('/mcp reached without an agent key');
      return { mandate: principal.mandate, elicit: principal.key.ask_in_client, owner: principal.prefix };
    },
  };
}

/** The default stop: a fatal log line, then exit code 1 (gateway §7: memory must never be ahead of the database). */
function exitOnDatabaseFailure(logger: Logger): (error: unknown) => void {
  return (error) => {
    logger.fatal({ err: error }, 'the database failed: stopping, so nothing answers from a state it does not hold');
    process.exit(1);
  };
}

/**
 * Starts the hosted gateway; resolves once it listens. Throws (before anything starts) when a
 * setting required in production is missing or malformed, naming each one.
 */
export async function startHostedGateway(options: HostedGatewayOptions): Promise<RunningGateway> {
  const settings = options.settings ?? readSettings();
  const logger = options.logger ?? pino({ level: process.env.HOLON_LOG_LEVEL ?? 'info' });
  // A request still failing while the gateway closes (its pool is gone) is the shutdown, not a failed write.
  let closing = false;
  const stop = options.stop ?? exitOnDatabaseFailure(logger);
  const endpoints = endpointAccess(settings, { resolve: options.resolve, ca: options.ca });
  const clock = options.clock ?? Date.now;
  const origin: LinkOrigin = { url: settings.public_url };
  const running = await startGateway({
    port: options.port,
    host: options.host,
    db: options.db,
    database_url: options.database_url,
    clearing_url: options.clearing_url,
    agent_dirs: options.agent_dirs ?? registryDirs(),
    exclude: options.exclude ?? excludedAgents(),
    agents_host_port: options.agents_host_port,
    allowed_hosts: [...(options.allowed_hosts ?? allowedHostsFromEnv()), ...(settings.public_url ? [settings.public_url] : [])],
    logger,
    published: endpoints,
    extend: (parts) => hostedExtension(parts, settings, endpoints, (error) => closing || stop(error), { clock, origin }, options.publishing),
  });
  origin.url ??= running.url;
  const sweep = startFileSweep(running.db.knex, clock, logger);
  return {
    ...running,
    close: async () => {
      closing = true;
      await sweep.stop();
      await running.close();
    },
  };
}
