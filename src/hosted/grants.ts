/**
 * Approvals granted without running (gateway §7 "Approvals and attended clients"):
 * `POST /v0/approvals/{id}` with `{"run": false}` approves the held call; the agent then
 * re-submits the same call with `approval: <id>`, and it runs once under the held receipt.
 */
import type { Knex } from 'knex';
import { HttpError } from '../http/errors.ts';
import { decide, lockApproval, type ApprovalRow } from '../gateway/approvals.ts';

/** Approves pending approval `id` without running it. Throws 404 `no_such_approval`, 409 `approval_decided`. */
export async function grantApproval(db: Knex, id: string): Promise<ApprovalRow> {
  return db.transaction(async (trx) => {
    const approval = await lockApproval(trx, id);
    if (!approval) throw new HttpError(404, 'no_such_approval', `there is no approval ${id}`);
    if (approval.status !== 'pending') throw new HttpError(409, 'approval_decided', `approval ${id} is already ${approval.status}`);
    await decide(trx, id, 'approved');
    await trx('hosted_approval_grants').insert({ approval: id });
    return { ...approval, status: 'approved', input: null };
  });
}

/**
 * Takes a granted approval for the one run it allows, under a lock on the approval (of two
 * resends at once, one takes it). `check` throws when the re-submitted call is not the call the
 * approval holds (`Gateway.checkApproved`, 409 `approval_mismatch`): then the grant is left
 * unused, for the exact call. Throws 409 `approval_not_granted` when it was not granted with
 * `{"run": false}`, or was used already.
 */
export async function useGrant(trx: Knex.Transaction, id: string, check: (approval: ApprovalRow) => void): Promise<ApprovalRow> {
  const approval = await lockApproval(trx, id);
  const grant = approval && (await trx('hosted_approval_grants').where({ approval: id }).whereNull('used_at').first('approval'));
  if (!approval || !grant) {
    throw new HttpError(409, 'approval_not_granted', `approval ${id} was not granted with {"run": false}, or its run was used already`);
  }
  check(approval);
  await trx('hosted_approval_grants').where({ approval: id }).update({ used_at: trx.raw('clock_timestamp()') });
  return approval;
}
