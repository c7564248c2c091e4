/**
 * Receipts (gateway §4): one for every request, denied ones included, never holding inputs or
 * outputs; a tree through `parent` and `children`. A receipt is written `running` when funds are
 * reserved, so a restart can find and close it (gateway §7 "Restarts"), and finalized once.
 */
import type { Knex } from 'knex';
import { iso } from '../db/index.ts';
import { formatMoney, parseMoney, type Micros } from '../contracts/money.ts';
import { HttpError } from '../http/errors.ts';

/** How a request ended (or `running` while it runs). */
export type ReceiptStatus = 'running' | 'succeeded' | 'failed' | 'denied' | 'pending_approval' | 'rejected_input' | 'rejected';

/** The §4 receipt. Money fields are decimal strings in `currency`. */
export interface Receipt {
  id: string;
  parent: string | null;
  mandate: string;
  caller: string;
  agent: string | null;
  capability: string | null;
  status: ReceiptStatus;
  approval: string | null;
  worst_case: string | null;
  currency: string;
  payer: string;
  sub_mandate: string | null;
  billed: boolean;
  cost: { own: string; downstream: string; total: string };
  splits: Array<{ to: string; amount: string }>;
  children: string[];
  duration_ms: number;
  error: { code: string; message: string } | null;
  created_at: string;
}

/** A receipt with its children expanded, in call order. */
export type ReceiptTree = Receipt & { calls: ReceiptTree[] };

/** The cost block of a receipt from micro-units. */
export function costView(own_micros: Micros, downstream_micros: Micros): Receipt['cost'] {
  return { own: formatMoney(own_micros), downstream: formatMoney(downstream_micros), total: formatMoney(own_micros + downstream_micros) };
}

/** A new receipt id (`r1`, `r2`, …), from a database sequence so ids never repeat across restarts. */
export async function nextReceiptId(db: Knex): Promise<string> {
  const result = await db.raw(`SELECT nextval('gateway_receipt_seq') AS n`);
  return `r${result.rows[0].n}`;
}

/**
 * Writes (or overwrites) a receipt; `hold_id` is the hold to release if the gateway restarts
 * before it is finalized. A final receipt under an approval also deletes the approval's held
 * input: the run's outcome is recorded, so nothing needs it any more (gateway §4, issue 8 §1.5).
 * A finished run (succeeded or failed) also lands once in `call_events` (gateway §7 "The
 * journal"), append-only, written with its receipt (in the caller's transaction when it passes one).
 */
export async function saveReceipt(db: Knex | Knex.Transaction, receipt: Receipt, root_mandate: string, hold_id: string | null = null): Promise<void> {
  await db('gateway_receipts')
    .insert({ id: receipt.id, parent: receipt.parent, root_mandate, status: receipt.status, document: JSON.stringify(receipt), hold_id, created_at: receipt.created_at })
    .onConflict('id')
    .merge(['status', 'document', 'hold_id']);
  if (receipt.approval !== null && receipt.status !== 'running' && receipt.status !== 'pending_approval') {
    await db('gateway_approvals').where({ id: receipt.approval }).whereNot({ status: 'pending' }).update({ input: null });
  }
  if (receipt.status !== 'succeeded' && receipt.status !== 'failed') return;
  await db('call_events')
    .insert({
      receipt: receipt.id,
      agent: receipt.agent,
      status: receipt.status,
      error: receipt.error?.code ?? null,
      latency_ms: receipt.duration_ms,
      cost_micros: receipt.billed ? parseMoney(receipt.cost.own) : 0,
      delegated: receipt.parent !== null,
    })
    .onConflict('receipt')
    .ignore();
}

const documentOf = (row: Record<string, any>): Receipt => (typeof row.document === 'string' ? JSON.parse(row.document) : row.document);

/** Reads one receipt, or null. */
export async function readReceipt(db: Knex | Knex.Transaction, id: string): Promise<Receipt | null> {
  const row = await db('gateway_receipts').where({ id }).first('document');
  return row ? documentOf(row) : null;
}

/** Expands a receipt into its tree, children in the order the receipt lists them. */
export async function treeOf(db: Knex, receipt: Receipt): Promise<ReceiptTree> {
  const rows = receipt.children.length === 0 ? [] : await db('gateway_receipts').whereIn('id', receipt.children).select('document');
  const byId = new Map(rows.map((row) => [documentOf(row).id, documentOf(row)]));
  const calls: ReceiptTree[] = [];
  for (const id of receipt.children) {
    const child = byId.get(id);
    if (child) calls.push(await treeOf(db, child));
  }
  return { ...receipt, calls };
}

/**
 * Root receipts (no parent), newest first, optionally under one root mandate or any of
 * `mandates` (hosted scoping), as trees; at most `limit` (1..500, bounded by the API schema).
 * `before` pages: only roots older than that root receipt, in the same (created_at, id) order.
 * Throws 404 `no_such_receipt` when `before` is not a root receipt under the same filter, so a
 * cursor never reveals a receipt outside the caller's scope.
 */
export async function listReceiptTrees(db: Knex, options: { mandate?: string; mandates?: readonly string[]; limit: number; before?: string }): Promise<ReceiptTree[]> {
  const roots = () => {
    const query = db('gateway_receipts').whereNull('parent');
    if (options.mandate) query.where({ root_mandate: options.mandate });
    if (options.mandates) query.whereIn('root_mandate', options.mandates);
    return query;
  };
  const query = roots().orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(options.limit);
  if (options.before !== undefined) {
    const cursor = await roots().where({ id: options.before }).first('id', 'created_at');
    if (!cursor) throw new HttpError(404, 'no_such_receipt', `there is no root receipt ${options.before} to page from: pass the id of the last receipt of the previous page`);
    query.where((older) => older.where('created_at', '<', cursor.created_at).orWhere((same) => same.where('created_at', '=', cursor.created_at).andWhere('id', '<', cursor.id)));
  }
  const trees: ReceiptTree[] = [];
  for (const row of await query.select('document')) trees.push(await treeOf(db, documentOf(row)));
  return trees;
}

/** The receipts of the calls `id` made, in the order they were made. */
export async function childrenOf(db: Knex | Knex.Transaction, id: string): Promise<Receipt[]> {
  const rows = await db('gateway_receipts').where({ parent: id }).orderBy([{ column: 'created_at' }, { column: 'id' }]).select('document');
  return rows.map(documentOf);
}

/** Receipts still `running` (an interrupted process's calls), with the hold each had opened. */
export async function runningReceipts(db: Knex): Promise<Array<{ receipt: Receipt; hold_id: string | null }>> {
  const rows = await db('gateway_receipts').where({ status: 'running' }).select('document', 'hold_id');
  return rows.map((row) => ({ receipt: documentOf(row), hold_id: row.hold_id ?? null }));
}

/** Now, as the ISO string receipts carry. */
export const now = (): string => iso(new Date())!;
