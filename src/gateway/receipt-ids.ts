/**
 * Receipt ids (`r1`, `r2`, …, gateway §4) that never repeat, even across a failover (issue 27 §2).
 *
 * A bare `SELECT nextval(…)` commits nothing the server must wait for: it writes WAL only every
 * 32 values and answers at once. During a failover the old primary, restarted by its keeper,
 * still answers such reads for a moment from a sequence the new primary never saw, so two calls
 * (one id drawn there, one on the new primary) could get one id, and the second's receipt would
 * overwrite the first's. Here ids are drawn in blocks of {@link RECEIPT_ID_BLOCK}, more than the
 * 32 values PostgreSQL hands out per WAL record of a sequence, so every block's statement writes
 * one, under a transaction id (`nextval` takes one when it logs, for this reason), and its
 * commit waits for the WAL flush and for the synchronous standby like any write: an id is handed
 * out only once it is durable where the next primary will be, and an old primary that lost its
 * standby hands out none. (A `txid_current()` would not do it: PostgreSQL waits for the standby
 * only when the transaction wrote WAL; `tests/fleet/durable-read.test.ts` checks the wait.) One
 * such commit per {@link RECEIPT_ID_BLOCK} calls; ids stay increasing within a process, and
 * unique across processes.
 *
 * Bounds: at most {@link RECEIPT_ID_BLOCK} ids wait in a process; one block is drawn at a time, and
 * a caller waits for at most the draws it takes to get one.
 */
import type { Knex } from 'knex';
import { receiptIdOf } from './receipts.ts';

/** Ids drawn per durable round trip: more than 32, so each draw writes WAL (see the module comment). */
export const RECEIPT_ID_BLOCK = 64;

const DRAW_BLOCK = `SELECT nextval('gateway_receipt_seq') AS n FROM generate_series(1, ${RECEIPT_ID_BLOCK})`;

/** The receipt ids one gateway process hands out (see the module comment). */
export class ReceiptIds {
  /** Drawn and durable, not yet handed out, in increasing order. */
  private readonly ready: string[] = [];
  private drawing: Promise<void> | null = null;
  /** The lease the waiting ids were drawn under. */
  private lease: number | null = null;

  constructor(private readonly db: Knex) {}

  /**
   * A new receipt id, never handed out before by any process on this database. `lease`: this
   * process's lease id now; a new one means the process lost its database connection (a
   * failover), so the ids drawn before are dropped: with asynchronous replication their block
   * may not have reached the new primary, which would draw them again. Throws what the database threw.
   */
  async next(lease: number): Promise<string> {
    if (lease !== this.lease) {
      this.ready.length = 0;
      this.lease = lease;
    }
    while (this.ready.length === 0) {
      this.drawing ??= this.draw().finally(() => {
        this.drawing = null;
      });
      await this.drawing;
    }
    return this.ready.shift()!;
  }

  private async draw(): Promise<void> {
    const rows: Array<{ n: string | number }> = (await this.db.raw(DRAW_BLOCK)).rows;
    const numbers = rows.map((row) => BigInt(row.n)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    this.ready.push(...numbers.map(receiptIdOf));
  }
}
