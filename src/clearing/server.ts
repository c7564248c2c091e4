/**
 * Runs the reference binding: opens the database, listens on 127.0.0.1 (the §3 co-location
 * assumption), sweeps expired holds periodically (§6.15), and closes cleanly.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Logger } from 'pino';
import { requestLogger } from '../observe/log-context.ts';
import { openDatabase, type DatabaseTarget } from '../db/index.ts';
import { rawQuery } from '../db/raw-sql.ts';
import { addPoolSource, addScrapeSource, collectProcessMetrics } from '../observe/metrics.ts';
import { startTracing } from '../observe/trace.ts';
import { createClearingApp, openLedger } from './app.ts';
import type { OperationName } from './capabilities.ts';
import { expireHolds, type Ledger } from './ledger.ts';
import type { WritePathOptions } from './write-path.ts';
import type { MutualTls } from './tls.ts';

/** The open holds and the micro-units they hold undrawn (`holon_holds_open`, `holon_holds_open_micros`). */
const OPEN_HOLDS = { name: 'holon_metrics_open_holds', text: `SELECT count(*)::bigint AS n, coalesce(sum(amount - drawn), 0)::bigint AS micros FROM clearing_holds WHERE status = 'open'` };

/** Options of `startClearingServer`. */
export interface ClearingServerOptions {
  target: DatabaseTarget;
  /** TCP port on 127.0.0.1; 0 picks a free one. */
  port: number;
  operations?: readonly OperationName[];
  /** The write path's group commit and bounds (default: from the environment, `writePathOptionsFromEnv`). */
  writes?: WritePathOptions;
  /** Interval of the expiry sweep, in milliseconds (default 60 000). */
  sweep_ms?: number;
  logger?: Logger;
  /** Mutual TLS (issue 23 §4): served over https, every caller needs a client certificate `tls.ca` signed; absent, plain http behind the loopback gate. */
  tls?: MutualTls | null;
  /** The address to listen on (default 127.0.0.1; another only with `tls`: a binding off loopback must authenticate its callers). */
  host?: string;
}

/** A running binding: its base URL, its ledger (for a door in the same process) and how to stop it. */
export interface RunningClearing {
  url: string;
  /** The ledger the HTTP app serves: an in-process door onto it shares its write path (`InProcessClearingPort`). */
  ledger: Ledger;
  server: Server;
  close(): Promise<void>;
}

/** Starts the binding; resolves once it is listening. Throws when the database cannot be opened. */
export async function startClearingServer(options: ClearingServerOptions): Promise<RunningClearing> {
  const logger = options.logger ?? requestLogger({ level: 'warn' });
  startTracing();
  collectProcessMetrics();
  const database = await openDatabase(options.target);
  const ledger = openLedger(database.knex, options.writes);
  const tls = options.tls ?? null;
  const host = options.host ?? '127.0.0.1';
  if (!tls && host !== '127.0.0.1') {
    await database.close();
    throw new Error(`a binding listening on ${host} must authenticate its callers: set HOLON_CLEARING_TLS_CERT, HOLON_CLEARING_TLS_KEY and HOLON_CLEARING_TLS_CA`);
  }
  const app = createClearingApp({ db: database.knex, ledger, operations: options.operations, logger, gate: tls ? 'mutual-tls' : 'loopback', unready: database.unwritable });
  const server: Server = tls
    ? createHttpsServer({ cert: tls.cert, key: tls.key, ca: tls.ca, requestCert: true, rejectUnauthorized: false }, app.callback()).listen(options.port, host)
    : app.listen(options.port, host);
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const sweep = setInterval(() => {
    expireHolds(database.knex).catch((error) => logger.error({ err: error }, 'expiry sweep failed'));
  }, options.sweep_ms ?? 60_000);
  sweep.unref();
  // Read on scrape (issue 22 §1): the open holds use the partial index `clearing_holds_open`.
  const removeSources = [
    addScrapeSource('holds_open', async () => ({ '': Number((await rawQuery(database.knex, OPEN_HOLDS, []))[0].n) })),
    addScrapeSource('holds_open_micros', async () => ({ '': Number((await rawQuery(database.knex, OPEN_HOLDS, []))[0].micros) })),
    addPoolSource('clearing', database.knex),
  ];
  const { port } = server.address() as AddressInfo;
  return {
    url: `${tls ? 'https' : 'http'}://${host}:${port}`,
    ledger,
    server,
    async close() {
      clearInterval(sweep);
      for (const remove of removeSources) remove();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await database.close();
    },
  };
}
