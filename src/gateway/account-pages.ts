/**
 * Pages of `GET /v0/accounts` (gateway §5, §7 "see all balances"): accounts in name order, `limit`
 * at a time, each page starting after the previous page's last name (`cursor`), so a page costs
 * `limit` balance reads however many accounts exist. The bounds are the OpenAPI document's
 * (docs/bounds.md). Names compare by code point (as Postgres's `COLLATE "C"` does).
 */
import { formatMoney } from '../contracts/money.ts';
import { HttpError } from '../http/errors.ts';
import { ClearingRefused, ClearingUnreachable, type ClearingPort } from './clearing.ts';

/** Accounts per page when `limit` is not given. */
export const DEFAULT_ACCOUNTS_PAGE = 100;

/** An account as listed: the name the API shows (`holon`) and the binding's account behind it (`platform:fees`). */
export interface ListedAccount {
  name: string;
  account: string;
}

/** `AccountBalance` of the OpenAPI document: the binding's figures as decimal strings of the gateway's currency. */
export interface AccountBalance {
  account: string;
  balance: string;
  available: string;
  reserved: string;
}

/**
 * One page out of `names`: those after `cursor` (all when null), in name order, at most `limit`,
 * and the cursor of the next page (null when none follows). `names` must hold at least the
 * `limit + 1` first names after `cursor` when there are that many, so the next cursor is known.
 */
export function accountPage(names: Iterable<string>, cursor: string | null, limit: number): { page: string[]; next_cursor: string | null } {
  const after = [...new Set(names)].filter((name) => cursor === null || name > cursor).sort();
  const page = after.slice(0, limit);
  return { page, next_cursor: after.length > limit ? page[page.length - 1] : null };
}

/**
 * `account`'s figures (read-balance, clearing-contract §6.2) shown under `name`; null when the
 * binding has no such account (a payer never given one has no balance to show, not a 500).
 * Throws 503 `clearing_unavailable` when the binding cannot answer.
 */
export async function readAccountBalance(clearing: ClearingPort, { name, account }: ListedAccount): Promise<AccountBalance | null> {
  try {
    const figures = await clearing.readBalance(account);
    return { account: name, balance: formatMoney(figures.balance), available: formatMoney(figures.available), reserved: formatMoney(figures.reserved) };
  } catch (error) {
    if (error instanceof ClearingRefused && error.status === 404) return null;
    if (error instanceof ClearingUnreachable) throw new HttpError(503, 'clearing_unavailable', `${error.message}; the balance cannot be read right now`);
    throw error;
  }
}

/**
 * The page of `listed` after `cursor` ({@link accountPage}: `listed` holds at least the `limit + 1`
 * first names after it), with each account's balance; an account the binding does not know is
 * left out, so a page may hold fewer than `limit`. A name listed twice is read once.
 */
export async function balancesPage(clearing: ClearingPort, listed: Iterable<ListedAccount>, cursor: string | null, limit: number): Promise<{ accounts: AccountBalance[]; next_cursor: string | null }> {
  const byName = new Map([...listed].map((entry) => [entry.name, entry]));
  const { page, next_cursor } = accountPage(byName.keys(), cursor, limit);
  const accounts: AccountBalance[] = [];
  for (const name of page) {
    const balance = await readAccountBalance(clearing, byName.get(name)!);
    if (balance) accounts.push(balance);
  }
  return { accounts, next_cursor };
}
