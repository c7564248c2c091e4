/**
 * `holon serve --hosted` (gateway §7): the hosted gateway, the shared start (`gateway.ts`, Postgres
 * from `DATABASE_URL`, else PGlite in `db`) with the part it plugs in: the hosted layer of
 * `src/hosted/` (`hostedExtension`) over the gateway's extension hooks, published agents reached
 * through the guarded client with their authors' credentials, `/mcp` under the agent key's
 * mandate, and once it listens the sweep of expired files.
 */
import type { Logger } from 'pino';
import { requestLogger } from '../observe/log-context.ts';
import { excludedAgents } from '../gateway/shipped-agents.mjs';
import { allowedHostsFromEnv } from '../http/host-gate.ts';
import type { Resolve } from '../hosted/egress.ts';
import { endpointAccess, type EndpointAccess } from '../hosted/endpoints.ts';
import { agentKeySession, hostedExtension, type LinkOrigin, type PublishingHooks } from '../hosted/extension.ts';
import { startFileSweep } from '../hosted/file-sweep.ts';
import { readSettings, type HostedSettings } from '../hosted/settings.ts';
import { startGateway, type GatewayPlugin, type RunningGateway } from './gateway.ts';

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
  /**
   * A clearing binding's URL (`--clearing-url`): the gateway settles there over the clearing
   * contract's HTTP, as the dev gateway does; absent, the reference binding runs in this process.
   * In production one off loopback must be `https://` with the gateway's mutual TLS
   * (`HOLON_CLEARING_CLIENT_CERT`, `_KEY`, `HOLON_CLEARING_CA`), or the gateway does not start.
   */
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
  /** Port of `agents/host.mjs` (default `HOLON_AGENTS_PORT`, else 4300 when free, else a free one); null: do not start it. */
  agents_host_port?: number | null;
  /**
   * Public names the gateway answers to besides its listening address (DNS-rebinding gate);
   * default `HOLON_ALLOWED_HOSTS`. `HOLON_PUBLIC_URL`'s host is always one of them.
   */
  allowed_hosts?: readonly string[];
  /** Default: JSON lines at `HOLON_LOG_LEVEL`, else `info`. */
  logger?: Logger;
  /** The resolver of authors' endpoint hosts (default: the system's); tests inject a stand-in. */
  resolve?: Resolve;
  /** Certificate authorities (PEM) the guarded client trusts instead of Node's (default: Node's); tests trust their own agent's certificate. */
  ca?: string;
  /** Answer `GET /metrics` alone, with no key, on this port too (`--metrics-port`); on the main port it needs the admin key. */
  metrics_port?: number;
  /** The address of that listener (default 127.0.0.1). */
  metrics_host?: string;
  /** The clock of files (upload time, link expiry, the sweep), ms since the epoch; default `Date.now`. Tests move it. */
  clock?: () => number;
}

/** The agent directories `HOLON_REGISTRY` names, `agents` by default: the demo agents of `examples/` are never listed unless added. */
export function registryDirs(): string[] {
  return (process.env.HOLON_REGISTRY ?? 'agents').split(',').map((dir) => dir.trim()).filter(Boolean);
}

/** The default stop: a fatal log line, then exit code 1 (gateway §7: memory must never be ahead of the database). */
function exitOnDatabaseFailure(logger: Logger): (error: unknown) => void {
  return (error) => {
    logger.fatal({ err: error }, 'the database failed: stopping, so nothing answers from a state it does not hold');
    process.exit(1);
  };
}

/**
 * What the hosted gateway plugs in: `endpoints` as the published agents' access, the hosted
 * layer (`hostedExtension`) as the app's extension, `/mcp` sessions bound to agent keys, and once
 * it listens the file links' origin (the gateway's URL unless `HOLON_PUBLIC_URL` set it) and the
 * file sweep, which stops first when the gateway closes. A request still failing while the
 * gateway closes (its pool is gone) is the shutdown, not a failed write: `stop` is not called then.
 */
export function hostedPlugin(
  settings: HostedSettings,
  endpoints: EndpointAccess,
  stop: (error: unknown) => void,
  files: { clock: () => number; logger: Logger },
  publishing?: Partial<PublishingHooks>,
): GatewayPlugin {
  let closing = false;
  const origin: LinkOrigin = { url: settings.public_url };
  return {
    published: endpoints,
    mcp_session: agentKeySession,
    signing: { file_secret: settings.file_secret, issuer: settings.public_url },
    extend: (parts) => hostedExtension(parts, settings, endpoints, (error) => closing || stop(error), { clock: files.clock, origin }, publishing),
    listening: async (running) => {
      origin.url ??= running.url;
      const sweep = startFileSweep(running.db.knex, files.clock, files.logger);
      return async () => {
        closing = true;
        await sweep.stop();
      };
    },
  };
}

/**
 * Starts the hosted gateway; resolves once it listens. Throws (before anything starts) when a
 * setting required in production is missing or malformed, naming each one, or when in production
 * `clearing_url` names a binding off loopback without mutual TLS.
 */
export async function startHostedGateway(options: HostedGatewayOptions): Promise<RunningGateway> {
  const settings = options.settings ?? readSettings();
  const logger = options.logger ?? requestLogger({ level: process.env.HOLON_LOG_LEVEL ?? 'info' });
  const endpoints = endpointAccess(settings, { resolve: options.resolve, ca: options.ca });
  const plugin = hostedPlugin(settings, endpoints, options.stop ?? exitOnDatabaseFailure(logger), { clock: options.clock ?? Date.now, logger }, options.publishing);
  return startGateway(
    {
      port: options.port,
      host: options.host,
      db: options.db,
      database_url: options.database_url,
      clearing_url: options.clearing_url,
      // In production a binding off loopback is reached only over mutual TLS (issue 23 §4).
      production: settings.production,
      agent_dirs: options.agent_dirs ?? registryDirs(),
      exclude: options.exclude ?? excludedAgents(),
      agents_host_port: options.agents_host_port,
      allowed_hosts: [...(options.allowed_hosts ?? allowedHostsFromEnv()), ...(settings.public_url ? [settings.public_url] : [])],
      logger,
      // Without an admin key, /metrics on the main port is refused to all but loopback peers (issue 22 §1).
      metrics_key: settings.admin_key,
      metrics_port: options.metrics_port,
      metrics_host: options.metrics_host,
    },
    [plugin],
  );
}
