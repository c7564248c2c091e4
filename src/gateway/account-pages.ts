/**
 * Pages of `GET /v0/accounts` (gateway §5): accounts in name order, `limit` at a time, each page
 * starting after the previous page's last name (`cursor`), so a page costs `limit` balance reads
 * however many accounts exist. The bounds are the OpenAPI document's (README "Bounds").
 */

/** Accounts per page when `limit` is not given. */
export const DEFAULT_ACCOUNTS_PAGE = 100;

/** The most accounts one page may ask for. */
export const MAX_ACCOUNTS_PAGE = 500;

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
