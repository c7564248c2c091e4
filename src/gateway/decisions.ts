/**
 * Deciding a held call (gateway §5 `POST /v0/approvals/{id}`, and the MCP server's elicitation):
 * approve and run it with its stored input under the same receipt, or reject it. Either way the
 * stored input is deleted. Expired approvals are closed first (gateway §7 "Limits").
 */
import type { Knex } from 'knex';
import { rootMandateOf } from '../contracts/mandate.ts';
import { formatMoney } from '../contracts/money.ts';
import { HttpError } from '../http/errors.ts';
import { decide, expireApprovals, lockApproval, type ApprovalRow } from './approvals.ts';
import type { CallResult, Gateway } from './lifecycle.ts';
import { readReceipt, saveReceipt, type ReceiptError } from './receipts.ts';

/** What a decision produced: the run's result, or the rejected approval. */
export type DecisionResult = { run: CallResult } | { rejected: ApprovalRow };

/** Closes a held call's receipt with `status` and `code` (nothing ran, nothing was billed). */
async function closeHeldReceipt(db: Knex | Knex.Transaction, id: string, status: 'rejected' | 'failed', code: ReceiptError['code'], message: string): Promise<void> {
  const receipt = await readReceipt(db, id);
  if (receipt) await saveReceipt(db, { ...receipt, status, error: { code, message } }, rootMandateOf(receipt.mandate));
}

const EXPIRED = 'the approval was not decided within 7 days; nothing ran and nothing was billed';

/** Closes pending approvals past their 7 days: their input is forgotten and their receipts end `rejected`, in one transaction. */
export async function closeExpiredApprovals(db: Knex): Promise<void> {
  await db.transaction(async (trx) => {
    for (const receipt of await expireApprovals(trx)) await closeHeldReceipt(trx, receipt, 'rejected', 'approval_expired', EXPIRED);
  });
}

/**
 * Restart recovery (gateway §7 "Restarts", issue 12 §4): every receipt still `pending_approval`
 * under an approval that is no longer pending, and claimed by a dead process (the process
 * deciding an approval records itself on the receipt before it runs the call), is closed; with
 * `unowned` (at start-up), those no process claimed too (a grant never used, or written before
 * processes were recorded). An
 * approved call that never started ends like any interrupted call (`failed`,
 * `gateway_restarted`, never billed), and its held input is deleted; a rejected or expired one
 * ends `rejected`. `dead`: the processes whose claims no longer count. Returns how many were closed.
 */
export async function closeStrandedApprovals(db: Knex, dead: readonly number[], unowned: boolean): Promise<number> {
  const stranded = (trx: Knex | Knex.Transaction) =>
    trx('gateway_receipts as r')
      .join('gateway_approvals as a', 'a.receipt', 'r.id')
      .where('r.status', 'pending_approval')
      .whereNot('a.status', 'pending')
      .where((owner) => (unowned ? owner.whereNull('r.process').orWhereIn('r.process', [...dead]) : owner.whereIn('r.process', [...dead])));
  let closed = 0;
  for (const row of await stranded(db).select('r.id', 'a.id as approval', 'a.status')) {
    await db.transaction(async (trx) => {
      // Locked and read again: a live process may have claimed it meanwhile.
      if (!(await stranded(trx).where('r.id', row.id).forUpdate('r').first('r.id'))) return;
      closed++;
      if (row.status === 'approved') {
        await closeHeldReceipt(trx, row.id, 'failed', 'gateway_restarted', `the gateway restarted before approval ${row.approval}'s call started; nothing was billed`);
      } else if (row.status === 'expired') {
        await closeHeldReceipt(trx, row.id, 'rejected', 'approval_expired', EXPIRED);
      } else {
        await closeHeldReceipt(trx, row.id, 'rejected', 'approval_rejected', `approval ${row.approval} was rejected; nothing ran and nothing was billed`);
      }
    });
  }
  return closed;
}

/**
 * Decides approval `id`. Throws HttpError 404 `no_such_approval`, or 409 `approval_decided`
 * when it is no longer pending (decided or expired).
 */
export async function decideApproval(db: Knex, gateway: Gateway, id: string, decision: 'approve' | 'reject'): Promise<DecisionResult> {
  await closeExpiredApprovals(db);
  const held = await db.transaction(async (trx) => {
    const approval = await lockApproval(trx, id);
    if (!approval) throw new HttpError(404, 'no_such_approval', `there is no approval ${id}`);
    if (approval.status !== 'pending') throw new HttpError(409, 'approval_decided', `approval ${id} is already ${approval.status}`);
    await decide(trx, approval.id, decision === 'approve' ? 'approved' : 'rejected');
    // The run is this process's from now on: recovery of another process must not close it (issue 12 §4).
    if (decision === 'approve') await trx('gateway_receipts').where({ id: approval.receipt }).update({ process: gateway.process_id });
    if (decision === 'reject') await closeHeldReceipt(trx, approval.receipt, 'rejected', 'approval_rejected', `approval ${approval.id} was rejected; nothing ran and nothing was billed`);
    return approval;
  });
  if (decision === 'reject') return { rejected: { ...held, status: 'rejected', input: null } };
  const run = await gateway.call(
    { mandate: held.mandate, agent: held.agent, input: held.input, ...(held.max_cost_micros === null ? {} : { max_cost: formatMoney(held.max_cost_micros) }) },
    { receipt: held.receipt, approved: { ...held, status: 'approved' } },
  );
  return { run };
}
