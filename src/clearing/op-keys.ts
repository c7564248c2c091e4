/**
 * What one write-path operation touches, as the keys group commit keeps apart (issue 12 §1–§2):
 * at most `per_account_max` operations of one batch share a key (default 16), and an operation
 * waits while an earlier one with a key of its own is still waiting or at the database
 * (`write-path.ts`).
 *
 * Why: batches at the database together that touch one account queue on its balance row, and
 * each write of a batch updates that row again in its own subtransaction, so the queue undid the
 * commits group commit saves (16 settles from one payer: 375/s grouped against 648/s one by one;
 * with this rule 991/s, bench/README.md). Keys are read off the operation alone, from the shapes
 * `clearing_apply` takes (migrations 005 and 014):
 *
 * - `account:<id>`: a holder account whose balance row the operation updates, or whose
 *   `available` it decides on. A post (credit, settle, adjust) updates each account of its
 *   `lock` list; an open-hold decides on its `account`; a draw debits its `caller` (the function
 *   refuses, before writing anything, a caller that is not the hold's account) and credits its
 *   `owner`. Machinery accounts (`external:*`, `platform:*`) are never keys: their balance is
 *   striped per session and never locked by a batch, and keying them would put every settle in
 *   a batch of its own.
 * - `hold:<id>`: the hold row that open-hold creates and resize-hold, release-hold and draw update.
 *   Resize and release name only the hold: its account is not in the request, and they need no
 *   key of it, because neither updates the account row (they update the hold row only; locking
 *   an account row the batch already holds makes no new row version). So they may share a batch
 *   with an operation on the same account, which is then run before or after them in the batch's
 *   order, as it could be when both are sent one by one.
 * - `txn:<id>`: the transaction id an operation stores, and for a reverse the one it undoes, so a
 *   reverse never overtakes the settlement it names. A reverse's accounts are found by the
 *   function, not named in the request; a reverse is an operator's rare correction, so it may share
 *   a batch with another write on one of those accounts: that costs the batch a second row
 *   update, never a wrong figure, since the operations of a batch run one after another.
 */
import type { LedgerOp } from './ledger-op.ts';

/** The keys of `op` (see the module comment): strings `account:<id>`, `hold:<id>` or `txn:<id>`, without repeats. */
export function keysOf(op: LedgerOp): string[] {
  const accounts = (...ids: unknown[]) => ids.map((id) => `account:${id}`);
  const hold = `hold:${op.hold_id}`;
  const txn = `txn:${op.txn_id}`;
  switch (op.op) {
    case 'post':
      return [...new Set([...accounts(...(op.lock as string[])), txn])];
    case 'open-hold':
      return [...accounts(op.account), hold];
    case 'resize-hold':
    case 'release-hold':
      return [hold];
    case 'draw':
      return [...new Set([...accounts(op.caller, op.owner), hold, txn])];
    case 'reverse':
      return [...new Set([txn, `txn:${op.reverses}`])];
  }
}
