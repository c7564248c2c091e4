/**
 * Deciding a held call (gateway §5 `POST /v0/approvals/{id}`, and the MCP server's elicitation):
 * approve and run it with its stored input under the same receipt, or reject it. Either way the
 * stored input is deleted. Expired approvals are closed first (gateway §7 "Limits").
 */
import type { Knex } from 'knex';
import { formatMoney } from '../contracts/money.ts';
import { HttpError } from '../http/errors.ts';
import { decide, expireApprovals, lockApproval, type ApprovalRow } from './approvals.ts';
import type { CallResult, Gateway } from './lifecycle.ts';
import { readReceipt, saveReceipt } from './receipts.ts';

/** What a decision produced: the run's result, or the rejected approval. */
export type DecisionResult = { run: CallResult } | { rejected: ApprovalRow };

/** Marks a held call's receipt `rejected` with `code` (nothing ran, nothing was billed). */
async function rejectReceipt(db: Knex, id: string, code: string, message: string): Promise<void> {
  const receipt = await readReceipt(db, id);
  if (receipt) await saveReceipt(db, { ...receipt, status: 'rejected', error: { code, message } }, receipt.mandate.split('.')[0]);
}

/** Closes pending approvals past their 7 days: their input is forgotten and their receipts end `rejected`. */
export async function closeExpiredApprovals(db: Knex): Promise<void> {
  for (const receipt of await expireApprovals(db)) {
    await rejectReceipt(db, receipt, 'approval_expired', 'the approval was not decided within 7 days; nothing ran and nothing was billed');
  }
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
    return approval;
  });
  if (decision === 'reject') {
    await rejectReceipt(db, held.receipt, 'approval_rejected', `approval ${held.id} was rejected; nothing ran and nothing was billed`);
    return { rejected: { ...held, status: 'rejected', input: null } };
  }
  const run = await gateway.call(
    { mandate: held.mandate, agent: held.agent, input: held.input, ...(held.max_cost_micros === null ? {} : { max_cost: formatMoney(held.max_cost_micros) }) },
    { receipt: held.receipt, approved: { ...held, status: 'approved' } },
  );
  return { run };
}
