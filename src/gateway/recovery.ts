/**
 * Restart recovery (gateway §7 "Restarts", issue 12 §4): the calls of dead gateway processes
 * (`processes.ts`) are closed `failed` with `gateway_restarted`, never billed; their budget
 * reservations and holds are released; a held call approved but never started is closed the same
 * way. The calls of a live process are never touched, whichever process recovers. Each call is
 * closed in one transaction that locks its receipt and checks it is still `running`, so two
 * processes recovering at once, or a late finish of the call itself (fenced in `lifecycle.ts`),
 * close it once.
 */
import type { Knex } from 'knex';
import { rootMandateOf } from '../contracts/mandate.ts';
import { parseMoney, type Micros } from '../contracts/money.ts';
import { inTransaction } from '../db/transaction.ts';
import { closeStrandedApprovals } from './decisions.ts';
import { closeReservation } from './mandates.ts';
import type { Outbox } from './outbox.ts';
import { childrenOf, costView, runningReceipts, saveReceipt, type Receipt, type ReceiptError } from './receipts.ts';

/**
 * What the payer of an interrupted call paid for its finished downstream calls: the passthrough
 * children's totals, and through a child interrupted too, what its own finished children cost.
 */
async function paidDownstream(db: Knex | Knex.Transaction, receipt: Receipt): Promise<Micros> {
  let total_micros = 0;
  for (const child of await childrenOf(db, receipt.id)) {
    if (child.payer !== receipt.payer) continue;
    total_micros += child.status === 'running' ? await paidDownstream(db, child) : parseMoney(child.cost.total);
  }
  return total_micros;
}

/**
 * Closes the calls of the processes `dead` left in flight (and those written before processes
 * were recorded). Finished downstream calls keep their own receipts and stay paid: the
 * interrupted call lists them as its children, shows them as its downstream cost, and they count
 * against its mandate. Returns how many calls were closed.
 */
export async function closeInterrupted(db: Knex, outbox: Outbox, dead: readonly number[]): Promise<number> {
  let closed = 0;
  for (const { receipt: seen } of await runningReceipts(db, dead)) {
    const done = await inTransaction(db, async (trx) => {
      const [still] = await runningReceipts(trx, dead, { id: seen.id, lock: true });
      if (!still) return false;
      const { receipt, hold_id } = still;
      const children = (await childrenOf(trx, receipt.id)).map((child) => child.id);
      const downstream_micros = await paidDownstream(trx, receipt);
      const error: ReceiptError = { code: 'gateway_restarted', message: 'the gateway restarted while this call ran; nothing was billed' };
      await saveReceipt(trx, { ...receipt, status: 'failed', billed: false, cost: costView(0, downstream_micros), children, error }, rootMandateOf(receipt.mandate));
      await closeReservation(trx, receipt.id, downstream_micros > 0 ? downstream_micros : null);
      if (hold_id) await outbox.write(trx, [{ operation: 'release-hold', receipt: receipt.id, body: { holdId: hold_id, reason: 'gateway restarted' } }]);
      return true;
    });
    if (done) closed++;
  }
  return closed;
}

/**
 * Everything dead processes left open: their interrupted calls, then their approved calls that
 * never started; `unowned` (at start-up) also closes held calls no process claimed (see
 * `closeStrandedApprovals`). Returns how many receipts were closed.
 */
export async function recoverDead(db: Knex, outbox: Outbox, dead: readonly number[], unowned: boolean): Promise<number> {
  return (await closeInterrupted(db, outbox, dead)) + (await closeStrandedApprovals(db, dead, unowned));
}
