/**
 * The value-moving doors of the reference binding and their read: credit (§6.7), settle (§6.8),
 * reverse (§6.9), adjust (§6.10) and read-settlement (§6.4). Immediate finality: every accepted
 * operation is `settled` when it answers (§10). Amounts are EUR micro-units.
 */
import type { OperationRequest, OperationResult } from '../../generated/clearing/server.ts';
import { invalidRequest } from '../http/errors.ts';
import type { LedgerOp } from './ledger-op.ts';
import { checkReplay, findTransaction, inTransaction, postingsOf, refuseMachinery, reversalOf, storedTransaction, termsOf, type Door, type Ledger, type Posting } from './ledger.ts';

/** The machinery accounts value enters from and margins land in (DESIGN "Money": money enters only from `external:*`). */
export const FUNDING_SOURCE = 'external:funding';
export const ADJUSTMENT_SOURCE = 'external:adjustments';
export const PLATFORM_FEES = 'platform:fees';

const accepted = (applied: boolean) => ({ ok: true as const, applied, state: 'settled' as const });

/** A new entry of credit, settle or adjust: its record fields and postings. */
interface Entry {
  account: string;
  amount: number;
  postings: Posting[];
  extra?: Record<string, unknown>;
}

/**
 * The write-path operation of credit, settle and adjust: lock `accounts`, answer a stored id as
 * `existing`, else post the entry (one `clearing_apply` call).
 */
function postOp(door: Door, txnId: string, accounts: string[], terms: Record<string, unknown>, entry: Entry): LedgerOp {
  return { op: 'post', lock: accounts, txn_id: txnId, door, account: entry.account, amount: entry.amount, terms, postings: entry.postings, ...entry.extra };
}

/**
 * Applies a `postOp`: a replay of the same terms answers `applied: false` (§9, else 422
 * `terms_conflict`). Throws 404 `no_such_object` for an unknown account, 422 `invalid_request`
 * past the balance bound.
 */
async function post(ledger: Ledger, op: LedgerOp) {
  const outcome = await ledger.writes.apply(op);
  if (outcome.existing) checkReplay(storedTransaction(outcome.existing), op.door as Door, op.terms as Record<string, unknown>);
  return accepted(!outcome.existing);
}

/** credit (§6.7): value in from `external:funding`, idempotent on the payment's `txnId`; `simulated` is kept for good. */
export async function credit(ledger: Ledger, { body }: OperationRequest<'credit'>): Promise<OperationResult<'credit'>> {
  refuseMachinery(body.account, 'account credited');
  const terms = termsOf({ account: body.account, amount: body.amount, simulated: body.simulated ?? false });
  return post(ledger, postOp('credit', body.txnId, [body.account], terms, {
    account: body.account,
    amount: body.amount,
    postings: [
      { account: FUNDING_SOURCE, delta: -body.amount, kind: 'funding' },
      { account: body.account, delta: body.amount, kind: 'credit' },
    ],
    extra: { ref: body.ref, simulated: body.simulated ?? false },
  }));
}

/**
 * settle (§6.8): the caller pays `retail`, the owner earns `rate`, the margin lands in
 * `platform:fees`. Never refused for insufficient funds (invariant 10). Throws 422
 * `invalid_request` when retail < rate, 404 `no_such_object` for an unknown account.
 */
export async function settle(ledger: Ledger, { body }: OperationRequest<'settle'>): Promise<OperationResult<'settle'>> {
  return post(ledger, settleOp(body));
}

/**
 * The write-path operation of one settle (§6.8), after its own checks (also what the benchmark's
 * `direct` path sends, so both run the same SQL). Throws 422 `invalid_request` when retail < rate
 * or a machinery account is named.
 */
export function settleOp(body: OperationRequest<'settle'>['body']): LedgerOp {
  if (body.retail < body.rate) throw invalidRequest(`retail ${body.retail} is less than rate ${body.rate}; the caller cannot pay less than the owner earns`);
  refuseMachinery(body.caller, 'caller');
  refuseMachinery(body.owner, 'owner');
  const terms = termsOf({ caller: body.caller, owner: body.owner, rate: body.rate, retail: body.retail });
  return postOp('settle', body.txnId, [body.caller, body.owner], terms, {
    account: body.caller,
    amount: body.retail,
    postings: [
      { account: body.caller, delta: -body.retail, kind: 'charge' },
      { account: body.owner, delta: body.rate, kind: 'earn' },
      { account: PLATFORM_FEES, delta: body.retail - body.rate, kind: 'fee' },
    ],
    extra: { ref: body.ref, memo: body.memo },
  });
}

/** adjust (§6.10): a signed correction against `external:adjustments`; `amount` on the record is its size. */
export async function adjust(ledger: Ledger, { body }: OperationRequest<'adjust'>): Promise<OperationResult<'adjust'>> {
  refuseMachinery(body.account, 'account adjusted');
  const terms = termsOf({ account: body.account, delta: body.delta });
  return post(ledger, postOp('adjust', body.txnId, [body.account], terms, {
    account: body.account,
    amount: Math.abs(body.delta),
    postings: [
      { account: ADJUSTMENT_SOURCE, delta: -body.delta, kind: 'adjustment-source' },
      { account: body.account, delta: body.delta, kind: 'adjustment' },
    ],
    extra: { reason: body.reason, actor: body.actor },
  }));
}

/**
 * reverse (§6.9): appends the exact inverse of a transaction. Refusals: 404 `no_such_object`
 * (no such transaction), 422 `not_reversible` (it is itself a correction: a reversal or an
 * adjustment, §6.10 "a correction"), 422
 * `already_reversed` naming the existing reversal. Reversing a draw gives its amount back to
 * the hold's cap, once, while the hold is open.
 */
export async function reverse(ledger: Ledger, { body }: OperationRequest<'reverse'>): Promise<OperationResult<'reverse'>> {
  const terms = termsOf({ reverses: body.reverses });
  const outcome = await ledger.writes.apply({ op: 'reverse', txn_id: body.txnId, reverses: body.reverses, terms, reason: body.reason, actor: body.actor });
  if (outcome.existing) {
    const existing = storedTransaction(outcome.existing);
    checkReplay(existing, 'reverse', terms);
    return { ...accepted(false), amount: existing.amount };
  }
  return { ...accepted(outcome.applied), amount: outcome.amount };
}

/** read-settlement (§6.4): one record per transaction id; `unknown` (200) when there is none. */
export async function readSettlement(ledger: Ledger, { params }: OperationRequest<'read-settlement'>): Promise<OperationResult<'read-settlement'>> {
  return inTransaction(ledger.db, async (trx) => {
    const txn = await findTransaction(trx, params.txnId);
    if (!txn) {
      return { txn_id: params.txnId, state: 'unknown', amount: null, account: null, opened_at: null, settled_at: null, failure: null, legs: [], reversed_by: null };
    }
    return {
      txn_id: txn.txn_id,
      state: 'settled',
      amount: txn.amount,
      account: txn.account,
      opened_at: txn.created_at,
      settled_at: txn.created_at,
      failure: null,
      legs: await postingsOf(trx, txn.txn_id),
      reversed_by: await reversalOf(trx, txn.txn_id),
    };
  });
}
