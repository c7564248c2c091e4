/**
 * The shared start of a gateway (gateway §5, §6, §7 "Restarts"; issue 12 §4), which the dev
 * gateway (`dev.ts`, `holon serve`) and the hosted gateway (`hosted.ts`, `holon serve --hosted`)
 * run with the parts they plug in ({@link GatewayPlugin}): it opens the database and, unless
 * `clearing_url` names another binding, starts the reference clearing binding (which the gateway
 * calls in-process, `clearing-in-process.ts`, while it also serves HTTP for everyone else); starts
 * `agents/host.mjs` beside it (`src/agents-host/`) and lists the shipped agents (`examples/`,
 * `agents/`); takes a process lease, closes calls that dead processes left in flight (several
 * processes may share one Postgres), posts pending settlements, opens the start-up accounts, and
 * serves the gateway's app with each part's extension and the MCP server of `src/mcp/` at `/mcp`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Logger } from 'pino';
import { startAgentsHost } from '../agents-host/host.ts';
import { agentsPortFromEnv, defaultAgentsPort } from '../agents-host/port.ts';
import { startClearingServer, type RunningClearing } from '../clearing/server.ts';
import type { MutualTls } from '../clearing/tls.ts';
import { PLATFORM_FEES } from '../clearing/settlements.ts';
import { openDatabase, targetFromEnv, type Database, type DatabaseTarget } from '../db/index.ts';
import { agentAccess, type PublishedAccess } from '../gateway/agent-access.ts';
import { createGatewayApp } from '../gateway/app.ts';
import { checkClearingChannel, clearingClientTlsFromEnv, ClearingRefused, clearingTimeoutsFromEnv, HttpClearingPort, isLoopbackUrl, type ClearingPort, type ClearingTimeouts } from '../gateway/clearing.ts';
import { InProcessClearingPort } from '../gateway/clearing-in-process.ts';
import { observedClearing } from '../gateway/clearing-observed.ts';
import type { GatewayAppExtension, GatewayParts } from '../gateway/extension.ts';
import { Gateway } from '../gateway/lifecycle.ts';
import { Outbox, outboxSettingsFromEnv, type OutboxSettings } from '../gateway/outbox.ts';
import { failoverFromEnv, leaseFromEnv, ProcessLease } from '../gateway/processes.ts';
import { recoverDead } from '../gateway/recovery.ts';
import { Registry } from '../gateway/registry.ts';
import { serverTimingFromEnv } from '../gateway/server-timing.ts';
import { excludedAgents, leftOut } from '../gateway/shipped-agents.mjs';
import { isLoopback } from '../http/access.ts';
import { answerStarting } from '../http/starting.ts';
import { allowedHostsFromEnv, listenHosts } from '../http/host-gate.ts';
import { mcpMiddleware, type McpOptions } from '../mcp/server.ts';
import { countOpenSessions } from '../mcp/sessions.ts';
import { startMetricsListener } from '../observe/endpoint.ts';
import { addPoolSource, addScrapeSource, collectProcessMetrics } from '../observe/metrics.ts';
import { requestLogger } from '../observe/log-context.ts';
import { flushTraces, startTracing } from '../observe/trace.ts';
import { rawQuery } from '../db/raw-sql.ts';
import { createRuntimes } from '../runtimes/index.ts';
import { openSigner, type Signer } from '../signing/signer.ts';

/** A credit given once at start-up (the dev account's demo credit), through the binding's credit door when it offers one. */
export interface StartCredit {
  /** Its idempotency key at the binding: the same key is never credited twice. */
  txn_id: string;
  account: string;
  amount_micros: number;
  ref: string;
  /** Value created with nothing behind it (clearing-contract §6.7), recorded so by the binding. */
  simulated: boolean;
}

/**
 * What a gateway plugs into the shared start; what makes it the dev gateway or the hosted one.
 * Every hook is optional; the hooks of several parts run in the order of the parts.
 */
export interface GatewayPlugin {
  /** Runs once the shipped agents are listed, before the lease is taken: e.g. the dev gateway's example mandates. */
  prepare?: (database: Database) => Promise<void>;
  /** Accounts opened at start-up besides every root payer and author: e.g. the dev account. */
  accounts?: readonly string[];
  /** Credits given once the accounts are open. */
  credits?: readonly StartCredit[];
  /** How published agents are reached (the hosted gateway); the first part that names it is used. */
  published?: PublishedAccess;
  /** How `/mcp` binds a session (the hosted gateway: to the agent key); the first part that names it is used. Absent: `HOLON_MCP_MANDATE`. */
  mcp_session?: McpOptions['session'];
  /**
   * How the gateway signs mandates and receipts (issue 23): `HOLON_FILE_SECRET` seals the stored
   * key (null: a key of this process only) and `issuer` is the public URL (null: the URL it
   * listens at). The first part that names it is used; absent: a process key, that URL.
   */
  signing?: { file_secret: string | null; issuer: string | null };
  /** Called once the gateway is ready and before it listens; what it answers extends the app (before the MCP server). */
  extend?: (parts: GatewayParts) => Promise<GatewayAppExtension>;
  /** Called once the gateway listens (e.g. the hosted file sweep); the stop it answers runs first when the gateway closes. */
  listening?: (running: RunningGateway) => Promise<() => Promise<void>>;
}

/**
 * Opens the start-up accounts where the binding lets the gateway say so: through the reference
 * binding's own door (an extension), every account of `accounts` is created, then each credit
 * given once. A binding without that door answers 404, and then its accounts are its own
 * business (clearing-contract §4); an account or a credit it refuses is logged, and calls that
 * need it are refused when they happen.
 */
async function prepareAccounts(clearing: ClearingPort, accounts: readonly string[], credits: readonly StartCredit[], logger: Logger): Promise<void> {
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
  for (const credit of credits) {
    try {
      await clearing.credit(credit.txn_id, credit.account, credit.amount_micros, credit.ref, credit.simulated);
    } catch (error) {
      if (!(error instanceof ClearingRefused)) throw error;
      logger.warn(error.message);
    }
  }
}

/** Options of {@link startGateway}, of the dev gateway and the hosted one alike. */
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
  /**
   * The gateway's side of mutual TLS to the binding at `clearing_url` (issue 23 §4): its client
   * certificate and key and the CA of the binding's certificate, PEM; null: none. Default:
   * `HOLON_CLEARING_CLIENT_CERT`, `_KEY` and `HOLON_CLEARING_CA`. Unused without `clearing_url`.
   */
  clearing_tls?: MutualTls | null;
  /** Production (the hosted gateway under `NODE_ENV=production`): a binding off loopback must then be reached over mutual TLS. Default false. */
  production?: boolean;
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
  /**
   * Start `agents/host.mjs` on this port (0 picks a free one; default `HOLON_AGENTS_PORT`, else
   * {@link defaultAgentsPort}); the MCP agents of `agents/` are listed with the host's URL as
   * their `runtime.endpoint`. null: do not start it.
   */
  agents_host_port?: number | null;
  /** Default: JSON lines at `HOLON_LOG_LEVEL`, else `warn`. */
  logger?: Logger;
  /** How long this process's lease lasts without a heartbeat, seconds (default `HOLON_PROCESS_LEASE_S`, else 30; `processes.ts`). */
  lease_s?: number;
  /** Answer each call with a `Server-Timing` header of its phases (default `HOLON_SERVER_TIMING`, else off; `server-timing.ts`). */
  server_timing?: boolean;
  /**
   * Who may read `GET /metrics` on the gateway's port: holders of this key (the hosted gateway's
   * admin key), or when null (the default) loopback peers only (`observe/endpoint.ts`).
   */
  metrics_key?: string | null;
  /** Also answer `GET /metrics` alone, with no key, on this port (`--metrics-port`; 0 picks a free one); absent: no such listener. */
  metrics_port?: number;
  /** The address of that listener (default `127.0.0.1`: only this machine scrapes it). */
  metrics_host?: string;
  /**
   * On Postgres, how long this process keeps taking a new lease after losing one (a failover),
   * seconds (default `HOLON_DB_FAILOVER_S`, else 120; `processes.ts`).
   */
  failover_s?: number;
  /**
   * Called when this process has lost its lease for good (no new one within `failover_s`, or on
   * PGlite): another process may be closing its calls. Default: a fatal log line and exit code 1.
   */
  onLost?: (reason: string) => void;
}

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
  /** The URL of the `--metrics-port` listener, when one was started. */
  metrics_url: string | null;
  close(): Promise<void>;
}

/**
 * The URL this machine reaches a server listening on `address:port` at: that address, or
 * 127.0.0.1 when it listens on every interface (`0.0.0.0`, or `::`, which takes IPv4 too).
 */
function localUrl(address: string, port: number): string {
  if (address === '0.0.0.0' || address === '::') return `http://127.0.0.1:${port}`;
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
}

/** The open reservations and the micro-units they hold unspent (`holon_reservations_open`, `holon_reservations_open_micros`). */
const OPEN_RESERVATIONS = {
  name: 'holon_metrics_open_reservations',
  text: `SELECT count(*)::bigint AS n, coalesce(sum(worst_case_micros - spent_micros), 0)::bigint AS micros FROM gateway_reservations WHERE status = 'open'`,
};

/** The settlement intents waiting to be posted (`holon_outbox_depth`), on the outbox's partial index of pending intents. */
const OUTBOX_DEPTH = { name: 'holon_metrics_outbox_depth', text: `SELECT count(*)::bigint AS n FROM gateway_settlement_intents WHERE status = 'pending'` };

/**
 * The gauges a gateway adds, read on scrape (issue 22 §1): its reservations, outbox depth, pool
 * and lease. Answers their removers, run when it closes.
 */
function observeGateway(db: Database['knex'], lease: ProcessLease): Array<() => void> {
  const first = async (statement: { name: string; text: string }) => (await rawQuery(db, statement, []))[0];
  return [
    addScrapeSource('reservations_open', async () => ({ '': Number((await first(OPEN_RESERVATIONS)).n) })),
    addScrapeSource('reservations_open_micros', async () => ({ '': Number((await first(OPEN_RESERVATIONS)).micros) })),
    addScrapeSource('outbox_depth', async () => ({ '': Number((await first(OUTBOX_DEPTH)).n) })),
    addScrapeSource('lease_held', async () => ({ '': lease.held ? 1 : 0 })),
    addPoolSource('gateway', db),
  ];
}

/**
 * Starts a gateway with the parts `plugins` plug in; resolves once it listens. A failure on the
 * way closes whatever was already started (binding, database, host) before it is thrown, so
 * nothing is left running.
 */
export async function startGateway(options: GatewayServerOptions, plugins: readonly GatewayPlugin[]): Promise<RunningGateway> {
  const closers: Array<() => Promise<unknown>> = [];
  const closeAll = async () => {
    for (const close of closers.splice(0).reverse()) await close();
  };
  try {
    return await start(options, plugins, closers, closeAll);
  } catch (error) {
    await closeAll();
    throw error;
  }
}

async function start(options: GatewayServerOptions, plugins: readonly GatewayPlugin[], closers: Array<() => Promise<unknown>>, closeAll: () => Promise<void>): Promise<RunningGateway> {
  // The channel to another binding is checked before anything starts (issue 23 §4).
  const clearing_tls = options.clearing_url ? (options.clearing_tls === undefined ? clearingClientTlsFromEnv() : options.clearing_tls) : null;
  if (options.clearing_url) checkClearingChannel(options.clearing_url, clearing_tls, options.production ?? false);
  const logger = options.logger ?? requestLogger({ level: process.env.HOLON_LOG_LEVEL ?? 'warn' });
  if (options.clearing_url && !clearing_tls && !isLoopbackUrl(options.clearing_url)) {
    logger.warn(`the clearing binding ${options.clearing_url} is off loopback and reached over plain http: money moves in clear and anyone on that network can call it; serve it behind mutual TLS (holon clearing serve with HOLON_CLEARING_TLS_*) and set HOLON_CLEARING_CLIENT_CERT, HOLON_CLEARING_CLIENT_KEY and HOLON_CLEARING_CA`);
  }
  startTracing();
  collectProcessMetrics();
  // Spans still buffered go out when the gateway closes (the provider lives as long as the process).
  closers.push(flushTraces);
  const agentDirs = options.agent_dirs ?? ['examples', 'agents'];
  const hostPort = options.agents_host_port === undefined ? (agentsPortFromEnv() ?? (await defaultAgentsPort())) : options.agents_host_port;
  const targetOf = (dir: string): DatabaseTarget => (options.database_url ? { url: options.database_url } : targetFromEnv(dir));
  const lease_s = options.lease_s ?? leaseFromEnv();
  const server_timing = options.server_timing ?? serverTimingFromEnv();
  // The agents host first, without waiting for it: it is another process, so it starts while this
  // one opens the databases (most of a start); the shipped agents are listed at its URL once it answers.
  const exclude = leftOut(options.exclude ?? excludedAgents());
  const hostStarting = hostPort !== null && agentDirs.includes('agents') ? startAgentsHost(path.join('agents', 'host.mjs'), hostPort, exclude, (line) => logger.info(`agents | ${line}`)) : null;
  if (hostStarting) {
    // Its failure is thrown where it is awaited, below; until then it must not count as unhandled.
    hostStarting.catch(() => {});
    closers.push(async () => (await hostStarting.catch(() => null))?.close());
  }
  // Listen first: the signer's `iss` is the URL it listens at (unless a part names the public
  // one), and the binding in this process signs its checkpoints with it too (issue 23 §3). Until
  // the app is attached a request is answered 503 at once (readiness, issue 27 §2), never left
  // waiting.
  const starting = answerStarting('this gateway process');
  const server = createServer(starting);
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject).listen(options.port, options.host ?? '127.0.0.1'));
  const { port, address } = server.address() as AddressInfo;
  const signing = plugins.find((plugin) => plugin.signing)?.signing;
  // The gateway's store and the binding's open together (issue 21 §4): a PGlite open waits on its
  // files and on WebAssembly compiled off this thread, and the other open's work fills those
  // waits (two existing PGlite stores, on a quiet machine: 1.55-1.75 s one after the other,
  // 0.9-1.1 s together). Only a stored signing key (a file secret) is read from the gateway's
  // store, and then the binding waits for it.
  const target = targetOf(path.join(options.db, 'gateway'));
  const databaseOpening = openDatabase(target);
  const gatewayKnex = databaseOpening.then((opened) => opened.knex);
  // Its failure is thrown where `databaseOpening` is awaited, below; it must not count as unhandled.
  gatewayKnex.catch(() => {});
  const signerOpening = openSigner(gatewayKnex, { file_secret: signing?.file_secret ?? null, issuer: signing?.issuer ?? localUrl(address, port) });
  const bindingStarting = options.clearing_url ? null : signerOpening.then((signer) => startClearingServer({ target: targetOf(path.join(options.db, 'clearing')), port: 0, logger, signer }));
  // Every part that opened is closed when another failed: wait for all before throwing the first failure.
  const [opened, signed, started] = await Promise.allSettled([databaseOpening, signerOpening, bindingStarting]);
  if (opened.status === 'fulfilled') closers.push(opened.value.close);
  if (started.status === 'fulfilled' && started.value) closers.push(started.value.close);
  for (const outcome of [opened, signed, started]) if (outcome.status === 'rejected') throw outcome.reason;
  const database = (opened as PromiseFulfilledResult<Database>).value;
  const db = database.knex;
  const signer = (signed as PromiseFulfilledResult<Signer>).value;
  const binding = (started as PromiseFulfilledResult<RunningClearing | null>).value;
  // The binding in this process is called in-process (its ledger, its write path); HTTP only reaches another binding.
  const timeouts = options.clearing_timeouts ?? clearingTimeoutsFromEnv();
  const clearing: ClearingPort = observedClearing(binding ? new InProcessClearingPort(binding.ledger, timeouts) : new HttpClearingPort(options.clearing_url!, timeouts, clearing_tls));

  // The shipped MCP agents are listed at the host's URL, whatever port it got; it serves what is listed.
  const host = await hostStarting;
  await Registry.loadShipped(db, agentDirs, exclude, host ? new Map([['agents', host.url]]) : new Map());
  const registry = await Registry.fromDatabase(db);
  for (const plugin of plugins) await plugin.prepare?.(database);

  const onLost = options.onLost ?? ((reason: string) => {
    logger.fatal(`${reason}: stopping, since another gateway process may be closing this one's calls`);
    process.exit(1);
  });
  let recover: ((unowned: boolean) => Promise<void>) | null = null;
  const failover_s = options.failover_s ?? failoverFromEnv();
  const lease = await ProcessLease.acquire(database, { lease_s, failover_s, url: 'url' in target ? target.url : undefined, logger, onLost, onHeartbeat: () => recover?.(false) ?? Promise.resolve() });
  // Taken after the agents are loaded (CPU-bound work that could outlast a lease on a loaded
  // machine), and beating from now on.
  lease.start();
  closers.push(() => lease.end());
  const outbox = new Outbox(db, clearing, logger, { ...outboxSettingsFromEnv(), ...options.outbox });
  const gateway_id = (await db('gateway_identity').first('id')).id as string;
  for (const remove of observeGateway(db, lease)) closers.push(async () => remove());
  // One set of runtimes per gateway (MCP sessions are kept across calls); published agents get their own, through the guarded client.
  const runtimes = createRuntimes();
  closers.push(runtimes.close);
  const published = plugins.find((plugin) => plugin.published)?.published;
  const publishedRuntimes = published ? createRuntimes({ fetch: published.fetch }) : null;
  if (publishedRuntimes) closers.push(publishedRuntimes.close);
  const agents = agentAccess(db, runtimes, published && publishedRuntimes ? { access: published, runtimes: publishedRuntimes } : null);
  // The lease's id is read at each use: a process that lost its lease after a failover runs on under a new one.
  const gateway = new Gateway({
    db,
    registry,
    clearing,
    outbox,
    ...agents,
    logger,
    gateway_id,
    get process_id() {
      return lease.id;
    },
    server_timing,
    signer,
  });

  const rootPayers = async () => (await db('gateway_mandates').whereNull('parent').distinct('payer')).map((r) => r.payer as string);
  const authors = () => registry.latest().map((agent) => agent.loaded.manifest.id.split('/')[0]);
  const startAccounts = plugins.flatMap((plugin) => plugin.accounts ?? []);
  await prepareAccounts(clearing, [...startAccounts, ...(await rootPayers()), ...authors()], plugins.flatMap((plugin) => plugin.credits ?? []), logger);
  const extensions: GatewayAppExtension[] = [];
  for (const plugin of plugins) if (plugin.extend) extensions.push(await plugin.extend({ database, gateway, registry, clearing, outbox, logger, agents, signer }));
  // §7 "Restarts": what dead processes left open, now and at every heartbeat (issue 12 §4).
  recover = async (unowned) => {
    const dead = await lease.deadProcesses();
    await recoverDead(db, outbox, dead, unowned);
    for (const extension of extensions) await extension.recover?.(dead, unowned);
    await lease.forget(dead);
  };
  await recover(true);
  await outbox.freeClaims();
  outbox.start();
  closers.push(() => outbox.stop());
  // The gateway's own MCP server (gateway §7 "Connecting Claude Code"), after every part's middleware (the hosted principal).
  const mcp = mcpMiddleware({
    db,
    gateway,
    registry,
    mandate: process.env.HOLON_MCP_MANDATE ?? 'dev/sandbox',
    logger,
    session: plugins.find((plugin) => plugin.mcp_session)?.mcp_session,
  });
  const app = createGatewayApp({
    db,
    gateway,
    registry,
    clearing,
    outbox,
    currency: 'EUR',
    signer,
    access: { hosts: [...listenHosts(address, port), ...(options.allowed_hosts ?? allowedHostsFromEnv())], loopback_peers_only: isLoopback(address) },
    metrics: { key: options.metrics_key ?? null },
    logger,
    // Readiness (issue 27 §2): no lease (taking a new one after a failover), or no database host that takes writes.
    unready: async () => (await database.unwritable()) ?? lease.unleased,
    accounts: async () => {
      const names = [...new Set([...(await rootPayers()), ...authors()])].sort().map((account) => ({ name: account, account }));
      return [...names, { name: 'holon', account: PLATFORM_FEES }];
    },
    extensions: [...extensions, { middleware: [mcp], rpc_paths: ['/mcp'] }],
  });
  const removeSessions = addScrapeSource('mcp_sessions_open', async () => ({ '': await countOpenSessions(db) }));
  closers.push(async () => removeSessions());
  const metricsListener = options.metrics_port === undefined ? null : await startMetricsListener(options.metrics_port, options.metrics_host);
  if (metricsListener) closers.push(metricsListener.close);
  server.removeListener('request', starting);
  server.on('request', app.callback());
  const running: RunningGateway = {
    url: localUrl(address, port),
    agents_url: host?.url ?? null,
    clearing_url: binding?.url ?? options.clearing_url!,
    server,
    gateway,
    outbox,
    db: database,
    lease,
    metrics_url: metricsListener?.url ?? null,
    close: closeAll,
  };
  for (const plugin of plugins) if (plugin.listening) closers.push(await plugin.listening(running));
  return running;
}
