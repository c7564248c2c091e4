/**
 * The value-moving doors of the reference binding and their read: credit (§6.7), settle (§6.8),
 * reverse (§6.9), adjust (§6.10) and read-settlement (§6.4). Immediate finality: every accepted
 * operation is `settled` when it answers (§10). Amounts are EUR micro-units.
 */
import type { Knex } from 'knex';
import type { OperationRequest, OperationResult } from '../../generated/clearing/server.ts';
import { HttpError, invalidRequest, noSuchObject } from '../http/errors.ts';
import {
  checkReplay,
  expireHolds,
  findTransaction,
  inTransaction,
  lockAccounts,
  postEntry,
  postingsOf,
  refuseMachinery,
  reversalOf,
  termsOf,
  type Door,
  type Posting,
} from './ledger.ts';

/** The machinery accounts value enters from and margins land in (DESIGN "Money": money enters only from `external:*`). */
export const FUNDING_SOURCE = 'external:funding';
export const ADJUSTMENT_SOURCE = 'external:adjustments';
export const PLATFORM_FEES = 'platform:fees';

const accepted = (applied: boolean) => ({ ok: true as const, applied, state: 'settled' as const });

/**
 * The common shape of credit, settle and adjust: lock the accounts, answer a replay of the same
 * terms with `applied: false` (§9), else post the entry.
 */
async function post(
  db: Knex,
  door: Door,
  txnId: string,
  accounts: string[],
  terms: Record<string, unknown>,
  entry: () => { account: string; amount: number; postings: Posting[]; extra?: Record<string, unknown> },
) {
  return inTransaction(db, async (trx) => {
    await lockAccounts(trx, accounts);
    const existing = await findTransaction(trx, txnId);
    if (existing) {
      checkReplay(existing, door, terms);
      return accepted(false);
    }
    const { account, amount, postings, extra } = entry();
    await postEntry(trx, { txn_id: txnId, door, account, amount, terms, ...extra }, postings);
    return accepted(true);
  });
}

/** credit (§6.7): value in from `external:funding`, idempotent on the payment's `txnId`; `simulated` is kept for good. */
export async function credit(db: Knex, { body }: OperationRequest<'credit'>): Promise<OperationResult<'credit'>> {
  refuseMachinery(body.account, 'account credited');
  const terms = termsOf({ account: body.account, amount: body.amount, simulated: body.simulated ?? false });
  return post(db, 'credit', body.txnId, [body.account], terms, () => ({
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
export async function settle(db: Knex, { body }: OperationRequest<'settle'>): Promise<OperationResult<'settle'>> {
  if (body.retail < body.rate) throw invalidRequest(`retail ${body.retail} is less than rate ${body.rate}; the caller cannot pay less than the owner earns`);
  refuseMachinery(body.caller, 'caller');
  refuseMachinery(body.owner, 'owner');
  const terms = termsOf({ caller: body.caller, owner: body.owner, rate: body.rate, retail: body.retail });
  return post(db, 'settle', body.txnId, [body.caller, body.owner], terms, () => ({
    account: body.caller,
    amount: body.retail,
    postings: [
      { account: body.caller, delta: -body.retail, kind: 'charge' },
      { account: body.owner, delta: body.rate, kind: 'earn' },
      { account: PLATFORM_FEES, delta: body.retail - body.rate, kind: 'fee' },
    ],
    extra: { ref: body.ref, memo: body.memo },
  }));
}

/** adjust (§6.10): a signed correction against `external:adjustments`; `amount` on the record is its size. */
export async function adjust(db: Knex, { body }: OperationRequest<'adjust'>): Promise<OperationResult<'adjust'>> {
  refuseMachinery(body.account, 'account adjusted');
  const terms = termsOf({ account: body.account, delta: body.delta });
  return post(db, 'adjust', body.txnId, [body.account], terms, () => ({
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
export async function reverse(db: Knex, { body }: OperationRequest<'reverse'>): Promise<OperationResult<'reverse'>> {
  const terms = termsOf({ reverses: body.reverses });
  return inTransaction(db, async (trx) => {
    const existing = await findTransaction(trx, body.txnId);
    if (existing) {
      checkReplay(existing, 'reverse', terms);
      return { ...accepted(false), amount: existing.amount };
    }
    const original = await findTransaction(trx, body.reverses);
    if (!original) throw noSuchObject(`there is no transaction ${body.reverses} to reverse`);
    if (original.door === 'reverse') {
      throw new HttpError(422, 'not_reversible', `${original.txn_id} is itself a correction (the reversal of ${original.reverses}) and cannot be reversed; if the charge should stand, charge it again under a new transaction id`);
    }
    if (original.door === 'adjust') {
      throw new HttpError(422, 'not_reversible', `${original.txn_id} is itself a correction (an adjustment) and cannot be reversed; if it was wrong, adjust again by the opposite amount under a new transaction id`);
    }
    const postings = await postingsOf(trx, original.txn_id);
    await lockAccounts(trx, [original.account, ...postings.map((p) => p.account)]);
    const prior = await reversalOf(trx, original.txn_id);
    // A replay that waited on the locks while its first arrival committed: the stored outcome (§9).
    if (prior === body.txnId) return { ...accepted(false), amount: original.amount };
    if (prior) throw new HttpError(422, 'already_reversed', `${original.txn_id} was already reversed by ${prior}`, { reversed_by: prior });
    if (original.door === 'draw') await giveCapBack(trx, original.hold_id!, original.amount);
    await postEntry(
      trx,
      { txn_id: body.txnId, door: 'reverse', account: original.account, amount: original.amount, terms, reverses: original.txn_id, reason: body.reason, actor: body.actor },
      postings.map((p) => ({ account: p.account, delta: -p.delta, kind: `reverse-${p.kind}` })),
    );
    return { ...accepted(true), amount: original.amount };
  });
}

/** §6.9: a reversed draw returns its amount to the hold's cap while the hold is open; a released hold gets nothing back. */
async function giveCapBack(trx: Knex.Transaction, holdId: string, amount: number): Promise<void> {
  const hold = await trx('clearing_holds').where({ hold_id: holdId }).first('account');
  await expireHolds(trx, hold.account);
  await trx('clearing_holds').where({ hold_id: holdId, status: 'open' }).decrement('drawn', amount);
}

/** read-settlement (§6.4): one record per transaction id; `unknown` (200) when there is none. */
export async function readSettlement(db: Knex, { params }: OperationRequest<'read-settlement'>): Promise<OperationResult<'read-settlement'>> {
  return inTransaction(db, async (trx) => {
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
