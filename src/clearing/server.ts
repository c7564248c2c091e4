/**
 * Runs the reference binding: opens the database, listens on 127.0.0.1 (the §3 co-location
 * assumption), sweeps expired holds periodically (§6.15), and closes cleanly.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import pino, { type Logger } from 'pino';
import { openDatabase, type DatabaseTarget } from '../db/index.ts';
import { createClearingApp, openLedger } from './app.ts';
import type { OperationName } from './capabilities.ts';
import { expireHolds, type Ledger } from './ledger.ts';
import type { WritePathOptions } from './write-path.ts';

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
  const logger = options.logger ?? pino({ level: 'warn' });
  const database = await openDatabase(options.target);
  const ledger = openLedger(database.knex, options.writes);
  const app = createClearingApp({ db: database.knex, ledger, operations: options.operations, logger, unready: database.unwritable });
  const server = app.listen(options.port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const sweep = setInterval(() => {
    expireHolds(database.knex).catch((error) => logger.error({ err: error }, 'expiry sweep failed'));
  }, options.sweep_ms ?? 60_000);
  sweep.unref();
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    ledger,
    server,
    async close() {
      clearInterval(sweep);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await database.close();
    },
  };
}
