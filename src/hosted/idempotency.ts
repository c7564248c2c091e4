/**
 * Idempotent calls (gateway §7 "Idempotent calls"): `POST /v0/calls` with an `Idempotency-Key`,
 * per API key. The key is claimed in the transaction that creates the call's receipt, and its
 * outcome recorded in the transaction that closes it, so a crash never leaves a claim without its
 * receipt or a final receipt under a running claim. The primary key (API key, idempotency key)
 * lets exactly one of two racing requests commit, so a key is never run twice. The claim names
 * its receipt: a finished call is replayed (`replayed: true`, `output`
 * null, never run again); a running one answers 409; one a restart interrupted answers 409 too,
 * since its outcome is unknown. The same key with a different body is refused 422.
 */
import { createHash } from 'node:crypto';
import type Koa from 'koa';
import type { Knex } from 'knex';
import { HttpError } from '../http/errors.ts';
import { answer, type CallAnswer } from '../gateway/call-answer.ts';
import { approvalView, lockApproval } from '../gateway/approvals.ts';
import type { CallOptions, CallRequest, CallResult, Gateway, ReceiptRecorder } from '../gateway/lifecycle.ts';
import { readReceipt } from '../gateway/receipts.ts';
import { useGrant } from './grants.ts';
import type { Principal } from './principal.ts';
import { requireScope } from './scope.ts';

/** A call as the hosted gateway runs it: its mandate settled (named, or the agent key's), and the approval it re-submits under, if any. */
type CallBody = CallRequest & { approval?: string };

/** Longest idempotency key, in characters (printable ASCII only). */
export const MAX_IDEMPOTENCY_KEY_CHARS = 255;

const KEY_SHAPE = /^[\x21-\x7e]+$/;

/**
 * Marks `interrupted` the claims still `running` in the dead processes `dead` (gateway §7
 * "Restarts", issue 12 §4), and with `unowned` (start-up) those no process recorded; a live
 * process's claims are never touched. Returns how many.
 */
export async function interruptRunningClaims(db: Knex, dead: readonly number[], unowned: boolean): Promise<number> {
  return db('hosted_idempotency')
    .where({ status: 'running' })
    .where((owner) => (unowned ? owner.whereNull('process').orWhereIn('process', [...dead]) : owner.whereIn('process', [...dead])))
    .update({ status: 'interrupted' });
}

/** The SHA-256 of a call body's JSON, as the claim stores it. */
const bodyHash = (body: unknown): string => createHash('sha256').update(JSON.stringify(body)).digest('hex');

/** Answers a claim already made: replay, 409 or 422. */
async function answerClaimed(db: Knex, gateway: Gateway, ctx: Koa.Context, claim: Record<string, any>, hash: string): Promise<CallAnswer> {
  const key = claim.idempotency_key as string;
  if (claim.request_sha256 !== hash) {
    throw new HttpError(422, 'idempotency_key_reused', `the Idempotency-Key ${key} was used with a different body: use a new key for a different call`);
  }
  if (claim.status === 'running') throw new HttpError(409, 'idempotent_call_running', `the call under Idempotency-Key ${key} is still running: wait, then send it again to read its receipt`);
  if (claim.status === 'interrupted') {
    throw new HttpError(409, 'idempotent_call_interrupted', `the gateway restarted while the call under Idempotency-Key ${key} ran (receipt ${claim.receipt}); check GET /v0/receipts before sending it again with a new key`);
  }
  const receipt = (await readReceipt(db, claim.receipt))!;
  ctx.status = claim.http;
  const tree = await gateway.tree(receipt);
  if (claim.http === 200) return { output: null, receipt: tree, replayed: true };
  if (claim.http === 202 && receipt.approval) {
    const approval = await db.transaction((trx) => lockApproval(trx, receipt.approval!));
    return { approval: approvalView(approval!, receipt.currency), receipt: tree, replayed: true };
  }
  return { error: receipt.error?.message ?? 'the call did not succeed', code: receipt.error?.code ?? 'gateway_error', receipt: tree, replayed: true };
}

/** Thrown inside a receipt's transaction when another request holds the key: the transaction rolls back, nothing of this request stays. */
class ClaimTaken extends Error {}

/**
 * The claim of one key, recorded with the call's receipt (`ReceiptRecorder`): inserted `running`
 * in the transaction that writes the running receipt, or `done` with the final receipt of a
 * call that never ran (refused, held for approval); closed `done` with its HTTP status in the
 * receipt's closing transaction. A key another request holds throws `ClaimTaken`, so of two
 * racing requests exactly one commits a receipt (the other waits on the primary key, then finds it).
 */
function claimRecorder(owner: { key_prefix: string; idempotency_key: string; request_sha256: string; process: number }, claimed: { receipt?: string }): ReceiptRecorder {
  return async (trx, receipt, http) => {
    const row = { ...owner, receipt: receipt.id, status: http === null ? 'running' : 'done', http };
    const insert = trx('hosted_idempotency').insert(row).onConflict(['key_prefix', 'idempotency_key']);
    // A conflict is our own claim closing (same receipt), or someone else's key.
    const written = http === null ? await insert.ignore().returning('receipt') : await insert.merge(['status', 'http']).where('hosted_idempotency.receipt', receipt.id).returning('receipt');
    if (written.length === 0) throw new ClaimTaken(`Idempotency-Key ${owner.idempotency_key} is held by another request`);
    claimed.receipt = receipt.id;
  };
}

/**
 * Runs `POST /v0/calls` for a principal: with `approval`, the one run a `{"run": false}` grant
 * allows, only for the call the approval holds (else 409 `approval_mismatch`, the grant left
 * unused); with an `Idempotency-Key`, at most once per API key. Throws 422 for a malformed key.
 */
export async function idempotentCall(deps: { db: Knex; gateway: Gateway }, ctx: Koa.Context, principal: Principal, body: CallBody): Promise<CallAnswer> {
  const { db, gateway } = deps;
  const { approval: approval_id, ...request } = body;
  const key = ctx.get('idempotency-key');
  if (key !== '' && (key.length > MAX_IDEMPOTENCY_KEY_CHARS || !KEY_SHAPE.test(key))) {
    throw new HttpError(422, 'invalid_request', `invalid request: Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_CHARS} printable ASCII characters`);
  }
  if (approval_id !== undefined) {
    const held = await db.transaction((trx) => lockApproval(trx, approval_id));
    if (!held) throw new HttpError(404, 'no_such_approval', `there is no approval ${approval_id}`);
    await requireScope(db, principal, held.mandate, 'no_such_approval', 'approval', approval_id);
  }
  const run = async (options: CallOptions): Promise<CallResult> => {
    if (approval_id === undefined) return gateway.call(request, options);
    const approved = await db.transaction((trx) => useGrant(trx, approval_id, (approval) => gateway.checkApproved(request, approval)));
    return gateway.call(request, { ...options, receipt: approved.receipt, approved });
  };
  if (key === '') return answer(ctx, gateway, await run({}), 'EUR');

  const hash = bodyHash(body);
  const owner = { key_prefix: (principal as { prefix: string }).prefix, idempotency_key: key, request_sha256: hash, process: gateway.process_id };
  const readClaim = () => db('hosted_idempotency').where({ key_prefix: owner.key_prefix, idempotency_key: key }).first();
  // A key already claimed is answered without running anything; the claim in the receipt's transaction is what guarantees once.
  const existing = await readClaim();
  if (existing) return answerClaimed(db, gateway, ctx, existing, hash);
  const claimed: { receipt?: string } = {};
  let result: CallResult;
  try {
    result = await run({ record: claimRecorder(owner, claimed) });
  } catch (error) {
    if (error instanceof ClaimTaken) return answerClaimed(db, gateway, ctx, await readClaim(), hash);
    // A failure after the claim committed leaves the call's outcome unknown until a restart closes it.
    if (claimed.receipt !== undefined) await db('hosted_idempotency').where({ ...owner, receipt: claimed.receipt, status: 'running' }).update({ status: 'interrupted' });
    throw error;
  }
  return answer(ctx, gateway, result, result.receipt.currency);
}
