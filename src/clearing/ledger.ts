/**
 * The reference binding's storage: the SQL behind the rules, kept apart from them (the rules are
 * in `settlements.ts`, `reservations.ts` and `accounts.ts`). Every function takes the knex
 * transaction it runs in (on PGlite, the outer handle inside a transaction would deadlock).
 * Amounts are integers in the binding's unit, EUR micro-units.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Knex } from 'knex';
import { int, iso } from '../db/index.ts';
import { HttpError, invalidRequest, noSuchObject } from '../http/errors.ts';

/** The doors a transaction id can be used at (clearing-contract §9: one namespace across all of them). */
export type Door = 'credit' | 'settle' | 'reverse' | 'adjust' | 'draw';

/** A stored transaction (one entry of the journal). `terms` is what a replay must repeat. */
export interface TransactionRow {
  txn_id: string;
  door: Door;
  account: string;
  amount: number;
  terms: Record<string, unknown>;
  reverses: string | null;
  hold_id: string | null;
  created_at: string;
}

/** One posting: a signed amount on one account, with a kind naming its role (`charge`, `earn`, ...). */
export interface Posting {
  account: string;
  delta: number;
  kind: string;
}

/** An account's figures (clearing-contract §6.2): available = balance − reserved − pending (invariant 2). */
export interface Figures {
  account: string;
  balance: number;
  available: number;
  reserved: number;
  pending: number;
}

/** True for the binding's own machinery (`external:*`, `platform:*`), which callers may not settle, hold or adjust against (§4). */
export function isMachinery(account: string): boolean {
  return account.startsWith('external:') || account.startsWith('platform:');
}

/**
 * Runs `work` in one database transaction: it happens whole or not at all (invariant 9).
 * A concurrent first use of the same identifier surfaces as a unique violation; the work is
 * then run once more, and finds the other's row as a replay (§9).
 */
export async function inTransaction<T>(db: Knex, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction(work);
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (attempt < 3 && (code === '23505' || code === '40P01')) continue;
      throw error;
    }
  }
}

/**
 * Locks the named holder accounts (in id order, so two operations never deadlock) and checks
 * that every named account exists. Throws 404 `no_such_object` naming the first missing one.
 */
export async function lockAccounts(trx: Knex.Transaction, accounts: string[]): Promise<void> {
  // Machinery accounts keep no balance row (see the migration), so there is nothing of theirs to lock.
  const ids = [...new Set(accounts)].filter((id) => !isMachinery(id)).sort();
  const rows: { id: string }[] = await trx('clearing_accounts').select('id').whereIn('id', ids).orderBy('id').forUpdate();
  const found = new Set(rows.map((r) => r.id));
  const missing = ids.find((id) => !found.has(id));
  if (missing !== undefined) throw noSuchObject(`there is no account ${missing}`);
}

/** Refuses the binding's machinery accounts for a caller-named role (§4). Throws 422 `invalid_request`. */
export function refuseMachinery(account: string, role: string): void {
  if (isMachinery(account)) throw invalidRequest(`${account} is this binding's own machinery and cannot be the ${role}`);
}

/** Releases every open hold whose window has closed (of one account, or all): §6.15. Idempotent. */
export async function expireHolds(trx: Knex | Knex.Transaction, account?: string): Promise<number> {
  const query = trx('clearing_holds')
    .where({ status: 'open' })
    .andWhere('expires_at', '<=', trx.raw('clock_timestamp()'))
    .update({ status: 'released', released_at: trx.ref('expires_at'), release_reason: 'expired' });
  if (account !== undefined) query.andWhere({ account });
  return query;
}

/**
 * An account's figures (§6.2). A hold whose window has closed never counts, whether or not it
 * has been released yet (§6.15), so this read writes nothing and needs no transaction: the
 * admission path's read-balance is one round trip. Machinery accounts have no balance row:
 * their balance is the sum of their postings. Throws 404 `no_such_object`.
 */
export async function readFigures(trx: Knex | Knex.Transaction, account: string): Promise<Figures> {
  const row = await trx('clearing_accounts')
    .where({ id: account })
    .first(
      'kind',
      'balance',
      trx.raw(
        `(SELECT coalesce(sum(amount - drawn), 0)::bigint FROM clearing_holds h
          WHERE h.account = clearing_accounts.id AND h.status = 'open' AND h.expires_at > clock_timestamp()) AS reserved`,
      ),
    );
  if (!row) throw noSuchObject(`there is no account ${account}`);
  let balance = int(row.balance);
  if (row.kind !== 'holder') {
    const sum = await trx('clearing_postings').where({ account }).first(trx.raw('coalesce(sum(delta), 0)::bigint AS total'));
    balance = int(sum.total);
  }
  const reserved = int(row.reserved);
  return { account, balance, available: balance - reserved, reserved, pending: 0 };
}

/** The stored transaction under `txnId`, or null. */
export async function findTransaction(trx: Knex.Transaction, txnId: string): Promise<TransactionRow | null> {
  const row = await trx('clearing_transactions').where({ txn_id: txnId }).first();
  if (!row) return null;
  return { ...row, amount: int(row.amount), created_at: iso(row.created_at)! };
}

/** Normalizes a request's terms for storage and comparison (drops undefined fields). */
export function termsOf(fields: Record<string, unknown>): Record<string, unknown> {
  return JSON.parse(JSON.stringify(fields));
}

/** "a credit", "an adjust": a door as a refusal sentence names it. */
const aDoor = (door: Door) => `${door === 'adjust' ? 'an' : 'a'} ${door}`;

/**
 * Decides what a reused transaction id means (§9): a replay at the same door with the same
 * terms answers the stored outcome (`applied: false`); anything else is refused with 422
 * `terms_conflict` naming the first use, never deduplicated against it.
 */
export function checkReplay(existing: TransactionRow, door: Door, terms: Record<string, unknown>): void {
  if (existing.door !== door) {
    throw new HttpError(
      422,
      'terms_conflict',
      `transaction id ${existing.txn_id} was already used by ${aDoor(existing.door)} at ${existing.created_at}; ${aDoor(door)} needs its own transaction id`,
    );
  }
  if (!isDeepStrictEqual(existing.terms, terms)) {
    throw new HttpError(
      422,
      'terms_conflict',
      `transaction id ${existing.txn_id} was already used for ${aDoor(door)} with other terms: ${JSON.stringify(existing.terms)}`,
      { existing: existing.terms },
    );
  }
}

/** The fields of a new journal entry besides its postings. */
export interface NewTransaction {
  txn_id: string;
  door: Door;
  account: string;
  amount: number;
  terms: Record<string, unknown>;
  reverses?: string;
  hold_id?: string;
  reason?: string;
  actor?: string;
  ref?: string;
  memo?: string;
  simulated?: boolean;
}

/** Appends one entry and its postings; the database refuses it at commit unless the postings sum to zero. */
export async function postEntry(trx: Knex.Transaction, entry: NewTransaction, postings: Posting[]): Promise<void> {
  await trx('clearing_transactions').insert(entry);
  const lines = postings.filter((p) => p.delta !== 0);
  if (lines.length > 0) await trx('clearing_postings').insert(lines.map((p) => ({ ...p, txn_id: entry.txn_id })));
}

/** The postings of one entry, in the order they were written. */
export async function postingsOf(trx: Knex.Transaction, txnId: string): Promise<Posting[]> {
  const rows = await trx('clearing_postings').where({ txn_id: txnId }).orderBy('id').select('account', 'delta', 'kind');
  return rows.map((r) => ({ account: r.account, delta: int(r.delta), kind: r.kind }));
}

/** The id of the reversal that undid `txnId`, or null (§6.4 `reversed_by`). */
export async function reversalOf(trx: Knex.Transaction, txnId: string): Promise<string | null> {
  const row = await trx('clearing_transactions').where({ reverses: txnId }).first('txn_id');
  return row?.txn_id ?? null;
}
