/**
 * `holon serve`: the dev gateway (gateway §5, §6 "Dev runtime") in one process with the
 * embedded database and, unless `clearing_url` names another binding, the reference clearing
 * binding (which the gateway calls in-process, `clearing-in-process.ts`, while it also serves
 * HTTP for everyone else); `agents/host.mjs` runs beside it as a child process. It loads the shipped agents (`examples/`, `agents/`), takes a
 * process lease, closes calls that dead processes left in flight (gateway §7 "Restarts"; several
 * processes may share one Postgres, issue 12 §4), posts pending settlements, and makes sure the dev
 * account `dev` and the mandates of `examples/mandates/` exist, so a first call needs no set-up.
 */
import { readdir, readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import pino, { type Logger } from 'pino';
import type { Knex } from 'knex';
import { envNumber, type NumberVariable } from '../config/env.ts';
import { openDatabase, targetFromEnv, type Database, type DatabaseTarget } from '../db/index.ts';
import { startClearingServer, type RunningClearing } from '../clearing/server.ts';
import { isLoopback } from '../http/access.ts';
import { allowedHostsFromEnv, listenHosts } from '../http/host-gate.ts';
import { portTaken } from '../http/port-probe.ts';
import { PLATFORM_FEES } from '../clearing/settlements.ts';
import type { Fetch } from '../runtimes/http.ts';
import { createRuntimes } from '../runtimes/index.ts';
import { ClearingRefused, clearingTimeoutsFromEnv, HttpClearingPort, type ClearingPort, type ClearingTimeouts } from './clearing.ts';
import { InProcessClearingPort } from './clearing-in-process.ts';
import { createGatewayApp, type GatewayAppExtension } from './app.ts';
import { Gateway, type GatewayDeps } from './lifecycle.ts';
import { storeMandate } from './mandates.ts';
import { Outbox, outboxSettingsFromEnv, type OutboxSettings } from './outbox.ts';
import { leaseFromEnv, ProcessLease } from './processes.ts';
import { serverTimingFromEnv } from './server-timing.ts';
import { recoverDead } from './recovery.ts';
import { startAgentsHost } from './agents-host.ts';
import { Registry } from './registry.ts';
import { excludedAgents, leftOut } from './shipped-agents.mjs';

/** The dev account that pays for calls under the example mandates. */
export const DEV_ACCOUNT = 'dev';

/** Demo credit given once to the dev account: 100 EUR in micro-units. */
export const DEV_CREDIT_MICROS = 100_000_000;

/**
 * Makes sure the dev accounts exist where the binding lets the gateway say so: through the
 * reference binding's own door (an extension), every payer and author gets an account, and the
 * dev account its demo credit once (`demo-credit:dev`, through credit when offered). A binding
 * without that door answers 404, and then its accounts are its own business (clearing-contract §4);
 * an account it refuses is logged, and calls that need it are refused when they happen.
 */
async function prepareAccounts(clearing: ClearingPort, accounts: readonly string[], logger: Logger, dev_credit: boolean): Promise<void> {
  for (const account of new Set(accounts)) {
    try {
      await clearing.createAccount(account);
    } catch (error) {
      if (!(error instanceof ClearingRefused)) throw error;
      if (error.status === 404) {
        logger.warn('the clearing binding has no account door: create the dev accounts there yourself');
        return;
      }
      logger.warn({ account }, error.message);
    }
  }
  if (!dev_credit) return;
  try {
    await clearing.credit('demo-credit:dev', DEV_ACCOUNT, DEV_CREDIT_MICROS, 'dev gateway demo credit', true);
  } catch (error) {
    if (!(error instanceof ClearingRefused)) throw error;
    logger.warn(error.message);
  }
}

/** Options of `startGateway`. */
export interface GatewayServerOptions {
  /** TCP port; 0 picks a free one. */
  port: number;
  /**
   * The address to listen on (default `127.0.0.1`). On a loopback address only loopback peers are
   * served; `0.0.0.0` or another address serves the network, under that address's names.
   */
  host?: string;
  /**
   * Public names this gateway also answers to (`host[:port]` or a URL), besides the names of the
   * address it listens on (DNS-rebinding gate, `src/http/host-gate.ts`). Default: `HOLON_ALLOWED_HOSTS`.
   */
  allowed_hosts?: readonly string[];
  /** Data directory: `<db>/gateway` and `<db>/clearing` (PGlite), unless a PostgreSQL URL is given. */
  db: string;
  /** PostgreSQL for the gateway and the in-process binding alike (default: `DATABASE_URL`; neither: PGlite in `db`). */
  database_url?: string;
  /** A clearing binding's URL; absent: the reference binding runs in this process. */
  clearing_url?: string;
  /** Bounds on every clearing request (default: `HOLON_CLEARING_CONNECT_TIMEOUT_S`, `HOLON_CLEARING_TIMEOUT_S`, else 5 s and 15 s). */
  clearing_timeouts?: ClearingTimeouts;
  /** How the outbox posts settlements (default: `DEFAULT_OUTBOX`, `max_pending` from `HOLON_OUTBOX_MAX_PENDING`). */
  outbox?: Partial<OutboxSettings>;
  /** Directories of shipped agents (default `examples` and `agents`). */
  agent_dirs?: readonly string[];
  /**
   * Agent ids left out (default: `HOLON_EXCLUDE`, else `holon-labs/summarize` and
   * `holon-labs/sec-company`); sec-company is left out anyway without `HOLON_SEC_CONTACT`, as the
   * agents host does (`shipped-agents.mjs`).
   */
  exclude?: readonly string[];
  /** Directory of example mandates (default `examples/mandates`). */
  mandate_dir?: string;
  /**
   * Start `agents/host.mjs` on this port (0 picks a free one; default `HOLON_AGENTS_PORT`, else
   * {@link defaultAgentsPort}); the MCP agents of `agents/` are listed with the host's URL as
   * their `runtime.endpoint`. null: do not start it.
   */
  agents_host_port?: number | null;
  logger?: Logger;
  /** How long this process's lease lasts without a heartbeat, seconds (default `HOLON_PROCESS_LEASE_S`, else 30; `processes.ts`). */
  lease_s?: number;
  /** Answer each call with a `Server-Timing` header of its phases (default `HOLON_SERVER_TIMING`, else off; `server-timing.ts`). */
  server_timing?: boolean;
  /**
   * Called when this process loses its lease (it expired, or the lock connection died): another
   * process may be closing its calls. Default: a fatal log line and exit code 1.
   */
  onLost?: (reason: string) => void;
  /**
   * A composition above the gateway (the hosted gateway, gateway §7), called once the gateway is
   * ready and before it listens; what it answers extends the app. With it, the dev account, its
   * credit and the example mandates are left out.
   */
  extend?: (parts: GatewayParts) => Promise<GatewayAppExtension>;
  /**
   * How published agents are reached (the hosted gateway, gateway §6 "Authentication", §7
   * "Network safety"): their own fetch and their author's endpoint credential. Absent, or for a
   * shipped agent: the global fetch and no credential. Chosen by where a listed version came
   * from (`ListedAgent.published`), never by its URL.
   */
  published?: PublishedAccess;
}

/** How the gateway reaches published agents (see `GatewayServerOptions.published`). */
export interface PublishedAccess {
  /** The fetch of every request to a published agent's endpoint. */
  fetch: Fetch;
  /** The author's endpoint credential of agent `ns/name`, or null. */
  credential(db: Knex, agent: string): Promise<string | null>;
}

/** What {@link GatewayServerOptions.extend} is handed. */
export interface GatewayParts {
  database: Database;
  gateway: Gateway;
  registry: Registry;
  clearing: ClearingPort;
  outbox: Outbox;
  logger: Logger;
  /** How the gateway runs an agent version (a published one through `published`), for runs outside a call: evaluations. */
  agents: AgentAccess;
}

/** How an agent version is reached: its runtime (the guarded client for a published one) and its endpoint credential. */
export type AgentAccess = Pick<GatewayDeps, 'runtimeFor' | 'credentialFor'>;

/** A running gateway. */
export interface RunningGateway {
  url: string;
  /** The `/mcp` URL of `agents/host.mjs`, when it was started. */
  agents_url: string | null;
  /** The binding's HTTP URL: the in-process binding's own listener, or `clearing_url` when another binding was named. */
  clearing_url: string;
  server: Server;
  gateway: Gateway;
  outbox: Outbox;
  db: Database;
  /** This process's lease (`processes.ts`). */
  lease: ProcessLease;
  close(): Promise<void>;
}

/** The port the shipped manifests name for the agents host, taken by default when it is free. */
export const DEFAULT_AGENTS_PORT = 4300;

/** `HOLON_AGENTS_PORT`: the agents host's TCP port, 0 to 65535 (0: any free port); unset, {@link defaultAgentsPort} decides. */
export const AGENTS_PORT_VARIABLE: NumberVariable<null> = {
  name: 'HOLON_AGENTS_PORT',
  what: "the agents host's port, 0 for any free one",
  default: null,
  unset: `${DEFAULT_AGENTS_PORT} when free, else any free port`,
  min: 0,
  max: 65_535,
  integer: true,
};

/** The agents host's port {@link AGENTS_PORT_VARIABLE} names, or null when it is unset. Throws `SettingRefused` when it is not a port. */
export function agentsPortFromEnv(env: NodeJS.ProcessEnv = process.env): number | null {
  return envNumber(env, AGENTS_PORT_VARIABLE);
}

/**
 * The agents host's port when nobody named one: {@link DEFAULT_AGENTS_PORT} when it is free, so
 * the manifests' URL holds and every process of a deployment lists the same one; else 0, any free
 * port, so a second gateway on the machine (the dev one beside a hosted one) starts as well.
 */
export async function defaultAgentsPort(): Promise<number> {
  return (await portTaken(DEFAULT_AGENTS_PORT)) ? 0 : DEFAULT_AGENTS_PORT;
}

/** Loads every `*.yaml` mandate of `dir` (issued by the dev account), replacing what was stored under the same id. */
async function loadExampleMandates(database: Database, dir: string): Promise<void> {
  let files: string[];
  try {
    files = (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort();
  } catch {
    return;
  }
  for (const file of files) {
    const document = parseYaml(await readFile(path.join(dir, file), 'utf8'), { schema: 'core', uniqueKeys: true });
    try {
      await storeMandate(database.knex, document, { parent: null, payer: document.issuer, replace: true });
    } catch (error) {
      throw new Error(`${path.join(dir, file)}: ${(error as Error).message}`);
    }
  }
}

/**
 * The URL this machine reaches a server listening on `address:port` at: that address, or
 * 127.0.0.1 when it listens on every interface (`0.0.0.0`, or `::`, which takes IPv4 too).
 */
function localUrl(address: string, port: number): string {
  if (address === '0.0.0.0' || address === '::') return `http://127.0.0.1:${port}`;
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
}

/**
 * Starts the dev gateway; resolves once it listens. A failure on the way closes whatever was
 * already started (binding, database, host) before it is thrown, so nothing is left running.
 */
export async function startGateway(options: GatewayServerOptions): Promise<RunningGateway> {
  const closers: Array<() => Promise<unknown>> = [];
  const closeAll = async () => {
    for (const close of closers.splice(0).reverse()) await close();
  };
  try {
    return await start(options, closers, closeAll);
  } catch (error) {
    await closeAll();
    throw error;
  }
}

async function start(options: GatewayServerOptions, closers: Array<() => Promise<unknown>>, closeAll: () => Promise<void>): Promise<RunningGateway> {
  const logger = options.logger ?? pino({ level: process.env.HOLON_LOG_LEVEL ?? 'warn' });
  const agentDirs = options.agent_dirs ?? ['examples', 'agents'];
  const hostPort = options.agents_host_port === undefined ? (agentsPortFromEnv() ?? (await defaultAgentsPort())) : options.agents_host_port;
  const targetOf = (dir: string): DatabaseTarget => (options.database_url ? { url: options.database_url } : targetFromEnv(dir));
  const lease_s = options.lease_s ?? leaseFromEnv();
  const server_timing = options.server_timing ?? serverTimingFromEnv();
  let binding: RunningClearing | null = null;
  if (!options.clearing_url) {
    binding = await startClearingServer({ target: targetOf(path.join(options.db, 'clearing')), port: 0, logger });
    closers.push(binding.close);
  }
  // The binding in this process is called in-process (its ledger, its write path); HTTP only reaches another binding.
  const timeouts = options.clearing_timeouts ?? clearingTimeoutsFromEnv();
  const clearing: ClearingPort = binding ? new InProcessClearingPort(binding.ledger, timeouts) : new HttpClearingPort(options.clearing_url!, timeouts);
  const target = targetOf(path.join(options.db, 'gateway'));
  const database = await openDatabase(target);
  closers.push(database.close);
  const db = database.knex;

  // The host first: the shipped MCP agents are listed at its URL, whatever port it got; it serves what is listed.
  const exclude = leftOut(options.exclude ?? excludedAgents());
  const host = hostPort !== null && agentDirs.includes('agents') ? await startAgentsHost(path.join('agents', 'host.mjs'), hostPort, exclude, (line) => logger.info(`agents | ${line}`)) : null;
  if (host) closers.push(host.close);
  await Registry.loadShipped(db, agentDirs, exclude, host ? new Map([['agents', host.url]]) : new Map());
  const registry = await Registry.fromDatabase(db);
  if (!options.extend) await loadExampleMandates(database, options.mandate_dir ?? path.join('examples', 'mandates'));

  const onLost = options.onLost ?? ((reason: string) => {
    logger.fatal(`${reason}: stopping, since another gateway process may be closing this one's calls`);
    process.exit(1);
  });
  let recover: ((unowned: boolean) => Promise<void>) | null = null;
  const lease = await ProcessLease.acquire(database, { lease_s, url: 'url' in target ? target.url : undefined, logger, onLost, onHeartbeat: () => recover?.(false) ?? Promise.resolve() });
  // Taken after the agents are loaded (CPU-bound work that could outlast a lease on a loaded
  // machine), and beating from now on.
  lease.start();
  closers.push(() => lease.end());
  const outbox = new Outbox(db, clearing, logger, { ...outboxSettingsFromEnv(), ...options.outbox });
  const gateway_id = (await db('gateway_identity').first('id')).id as string;
  // One set of runtimes per gateway (MCP sessions are kept across calls); published agents get their own, through the guarded client.
  const runtimes = createRuntimes();
  closers.push(runtimes.close);
  const published = options.published;
  const publishedRuntimes = published ? createRuntimes({ fetch: published.fetch }) : null;
  if (publishedRuntimes) closers.push(publishedRuntimes.close);
  const agents: AgentAccess = {
    runtimeFor: (agent) => (agent.published && publishedRuntimes ? publishedRuntimes : runtimes).runtimeFor(agent.loaded.manifest.runtime.kind),
    credentialFor: async (agent) => (agent.published && published ? published.credential(db, agent.loaded.manifest.id) : null),
  };
  const gateway = new Gateway({ db, registry, clearing, outbox, ...agents, logger, gateway_id, process_id: lease.id, server_timing });

  const rootPayers = async () => (await db('gateway_mandates').whereNull('parent').distinct('payer')).map((r) => r.payer as string);
  const authors = () => registry.latest().map((agent) => agent.loaded.manifest.id.split('/')[0]);
  const dev = !options.extend;
  await prepareAccounts(clearing, [...(dev ? [DEV_ACCOUNT] : []), ...(await rootPayers()), ...authors()], logger, dev);
  const extension = options.extend ? await options.extend({ database, gateway, registry, clearing, outbox, logger, agents }) : undefined;
  // §7 "Restarts": what dead processes left open, now and at every heartbeat (issue 12 §4).
  recover = async (unowned) => {
    const dead = await lease.deadProcesses();
    await recoverDead(db, outbox, dead, unowned);
    await extension?.recover?.(dead, unowned);
    await lease.forget(dead);
  };
  await recover(true);
  await outbox.freeClaims();
  outbox.start();
  closers.push(() => outbox.stop());
  // Listen first: the gate needs the port and the address actually bound (port 0, `localhost`).
  const server = createServer();
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject).listen(options.port, options.host ?? '127.0.0.1'));
  const { port, address } = server.address() as AddressInfo;
  const { app, close: closeApp } = createGatewayApp({
    db,
    gateway,
    registry,
    clearing,
    outbox,
    currency: 'EUR',
    mcp_mandate: process.env.HOLON_MCP_MANDATE ?? 'dev/sandbox',
    access: { hosts: [...listenHosts(address, port), ...(options.allowed_hosts ?? allowedHostsFromEnv())], loopback_peers_only: isLoopback(address) },
    logger,
    accounts: async () => {
      const names = [...new Set([...(await rootPayers()), ...authors()])].sort().map((account) => ({ name: account, account }));
      return [...names, { name: 'holon', account: PLATFORM_FEES }];
    },
    extension,
  });
  closers.push(closeApp);
  server.on('request', app.callback());
  return {
    url: localUrl(address, port),
    agents_url: host?.url ?? null,
    clearing_url: binding?.url ?? options.clearing_url!,
    server,
    gateway,
    outbox,
    db: database,
    lease,
    close: closeAll,
  };
}
