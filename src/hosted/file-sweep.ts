/**
 * The sweep that deletes uploaded files 24 hours after upload (gateway §7 "Files"): once at
 * start, then every {@link FILE_SWEEP_INTERVAL_MS}. An expired file is never served or attached
 * even before the sweep reaches it (every read checks `expires_at`); the sweep frees the space.
 */
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { sweepFiles } from './files.ts';

/** How often expired files are deleted, in ms (10 minutes). */
export const FILE_SWEEP_INTERVAL_MS = 10 * 60 * 1000;

/** A running sweep; `stop()` waits for a sweep in progress, so the database can close after it. */
export interface FileSweep {
  stop(): Promise<void>;
}

/** Starts the sweep over `db` with `clock` (ms since the epoch); a failed sweep is logged and retried at the next tick. */
export function startFileSweep(db: Knex, clock: () => number, logger: Logger): FileSweep {
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    running = sweepFiles(db, clock()).then(
      (deleted) => void (deleted > 0 && logger.info({ deleted }, 'deleted expired files')),
      (error) => logger.error({ err: error }, 'the file sweep failed; it runs again at the next tick'),
    );
  };
  tick();
  const timer = setInterval(tick, FILE_SWEEP_INTERVAL_MS).unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
