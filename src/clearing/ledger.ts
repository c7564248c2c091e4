/**
 * The reference binding's storage: the SQL behind the rules, kept apart from them (the rules are
 * in `settlements.ts`, `reservations.ts` and `accounts.ts`). Writes that move value go through
 * the write path (`write-path.ts`, one database function call each); the reads and the cold
 * doors here take the knex transaction they run in (on PGlite, the outer handle inside a
 * transaction would deadlock). Amounts are integers in the binding's unit, EUR micro-units.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Knex } from 'knex';
import type { LRUCache } from 'lru-cache';
import { int, iso } from '../db/index.ts';
import { HttpError, invalidRequest, noSuchObject } from '../http/errors.ts';
import type { FixedStatement, SqlRunner } from '../db/raw-sql.ts';
import type { Signer } from '../signing/signer.ts';
import type { WritePath } from './write-path.ts';

/**
 * The binding's storage: the knex handle for reads and cold doors, the write path for
 * value-moving doors, the agent links already resolved (`newLinkCache`), and the signer of its
 * checkpoints (issue 23 §3).
 */
export interface Ledger {
  db: Knex;
  writes: WritePath;
  /** Account by agent key, for the links resolve-account has read (§6.1). */
  links: LRUCache<string, string>;
  /** Signs the journal's checkpoints: the gateway's signer in the gateway's process, else the binding's own (`startClearingServer`). */
  signer: Signer;
}

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

/** Runs `work` in one database transaction, again when it lost a race (invariant 9, §9: the retry finds the other's row as a replay). */
export { inTransaction } from '../db/transaction.ts';

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
 * The one statement of read-balance (§6.2): the account's kind, its balance (a holder's row, or
 * the sum of a machinery account's stripes, `sql/clearing_apply_posting.sql`) and what its open
 * holds still reserve. A hold whose window has closed never counts, released yet or not (§6.15),
 * so the read writes nothing.
 */
export const FIGURES_SQL: FixedStatement = {
  name: 'holon_clearing_figures',
  text: `SELECT a.balance, a.kind,
    (SELECT coalesce(sum(m.balance), 0)::bigint FROM clearing_machinery_balances m WHERE m.account = a.id AND a.kind <> 'holder') AS machinery,
    (SELECT coalesce(sum(h.amount - h.drawn), 0)::bigint FROM clearing_holds h
      WHERE h.account = a.id AND h.status = 'open' AND h.expires_at > clock_timestamp()) AS reserved
  FROM clearing_accounts a WHERE a.id = $1`,
};

/**
 * An account's figures (§6.2), one statement on `run` (a raw pooled connection for the
 * admission path's read-balance, or the transaction of a longer read). Throws 404 `no_such_object`.
 */
export async function readFigures(run: SqlRunner, account: string): Promise<Figures> {
  const [row] = await run(FIGURES_SQL, [account]);
  if (!row) throw noSuchObject(`there is no account ${account}`);
  const balance = int(row.kind === 'holder' ? row.balance : row.machinery);
  const reserved = int(row.reserved);
  return { account, balance, available: balance - reserved, reserved, pending: 0 };
}

/** A stored transaction row from either driver or from the write path's JSON, normalized. */
export function storedTransaction(row: Record<string, any>): TransactionRow {
  return { ...row, amount: int(row.amount), created_at: iso(row.created_at)! } as TransactionRow;
}

/** The stored transaction under `txnId`, or null. */
export async function findTransaction(trx: Knex.Transaction, txnId: string): Promise<TransactionRow | null> {
  const row = await trx('clearing_transactions').where({ txn_id: txnId }).first();
  return row ? storedTransaction(row) : null;
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
