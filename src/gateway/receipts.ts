/**
 * Receipts (gateway §4): one for every request, denied ones included, never holding inputs or
 * outputs; a tree through `parent` and `children`. A receipt is written `running` when funds are
 * reserved, so a restart can find and close it (gateway §7 "Restarts"), and finalized once.
 */
import type { Knex } from 'knex';
import { iso } from '../db/index.ts';
import { namedStatement, runnerOf } from '../db/raw-sql.ts';
import type { GatewayErrorCode } from '../../generated/gateway/server.ts';
import { HttpError, type AgentCode } from '../http/errors.ts';
import { formatMoney, parseMoney, type Micros } from '../contracts/money.ts';

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
  error: ReceiptError | null;
  created_at: string;
}

/**
 * Why a call did not succeed (gateway §4): one of the gateway's own codes (`ErrorCode` of
 * `openapi/gateway.yaml`), or the code the agent declared and reported (`AgentErrorCode`).
 */
export interface ReceiptError {
  code: GatewayErrorCode | AgentCode;
  message: string;
}

/** A receipt with its children expanded, in call order. */
export type ReceiptTree = Receipt & { calls: ReceiptTree[] };

/** The cost block of a receipt from micro-units. */
export function costView(own_micros: Micros, downstream_micros: Micros): Receipt['cost'] {
  return { own: formatMoney(own_micros), downstream: formatMoney(downstream_micros), total: formatMoney(own_micros + downstream_micros) };
}

/** The receipt id of a number drawn from `gateway_receipt_seq` (`receipt-ids.ts`): `r1`, `r2`, … */
export const receiptIdOf = (n: number | bigint | string): string => `r${n}`;

/** Who owns a `running` receipt: the hold to release if its process dies first, and that process's lease id. */
export interface RunningOwner {
  hold_id: string | null;
  process: number;
}

/** How {@link saveReceipt} writes: the owner of a `running` receipt, and whether only a receipt still `running` may be overwritten. */
export interface SaveOptions {
  /** For a receipt written `running`: the hold to release and the process to outlive before restart recovery may close it (issue 12 §4). */
  running?: RunningOwner | null;
  /**
   * Fenced (issue 12 §4): overwrite the stored receipt only while it is `running`, in the same
   * statement that locks it, so a call that restart recovery closed meanwhile writes nothing.
   */
  only_running?: boolean;
  /**
   * Whether a `succeeded` or `failed` receipt lands in `call_events`, the agent's measured record
   * (default true); false for a call refused before its agent ran (gateway §7 "The journal":
   * every finished run is measured, and a refusal is no run).
   */
  measured?: boolean;
}

/** The parameters of {@link receiptCtes}. */
export type ReceiptParam =
  | 'receipt_id' | 'parent' | 'root_mandate' | 'status' | 'document' | 'created_at' | 'hold_id' | 'process' | 'only_running'
  | 'agent' | 'error_code' | 'latency_ms' | 'cost_micros' | 'delegated' | 'approval' | 'measured';

/**
 * Writing a receipt as CTEs, for a statement that may write more with it (gateway §4, §7 "The
 * journal"): `written` has the receipt's id when it was written (inserted, or overwritten: only
 * while still `running` under `only_running`, in the same statement that locks it, so a call
 * that restart recovery closed meanwhile writes nothing); `event` lands a finished run (succeeded
 * or failed, and `measured`) once in the append-only `call_events`; `approval` deletes the held input of a
 * decided approval once its run's final receipt is written (issue 8 §1.5). `guard`: a CTE that
 * must have a row for the receipt to be written.
 */
export const receiptCtes = (guard: string | null) => `written AS (
    INSERT INTO gateway_receipts (id, parent, root_mandate, status, document, hold_id, process, created_at)
    SELECT :receipt_id::text, :parent::text, :root_mandate::text, :status::text, :document::jsonb, :hold_id::text, :process::bigint, :created_at::timestamptz${guard ? `
    WHERE EXISTS (SELECT 1 FROM ${guard})` : ''}
    ON CONFLICT (id) DO UPDATE SET status = excluded.status, document = excluded.document, hold_id = excluded.hold_id, process = excluded.process
    WHERE NOT :only_running::boolean OR gateway_receipts.status = 'running'
    RETURNING id),
  event AS (
    INSERT INTO call_events (receipt, agent, status, error, latency_ms, cost_micros, delegated)
    SELECT id, :agent::text, :status::text, :error_code::text, :latency_ms::integer, :cost_micros::bigint, :delegated::boolean
    FROM written WHERE :measured::boolean AND :status::text IN ('succeeded', 'failed')
    ON CONFLICT (receipt) DO NOTHING),
  approval AS (
    UPDATE gateway_approvals SET input = NULL
    WHERE id = :approval::text AND status <> 'pending' AND :status::text NOT IN ('running', 'pending_approval')
      AND EXISTS (SELECT 1 FROM written))`;

/** The parameters of {@link receiptCtes} for `receipt` under `root_mandate`. A receipt written without `options.running` is owned by no process. */
export function receiptParams(receipt: Receipt, root_mandate: string, options: SaveOptions = {}): Record<ReceiptParam, unknown> {
  return {
    receipt_id: receipt.id,
    parent: receipt.parent ?? null,
    root_mandate,
    status: receipt.status,
    document: JSON.stringify(receipt),
    created_at: receipt.created_at,
    hold_id: options.running?.hold_id ?? null,
    process: options.running?.process ?? null,
    only_running: options.only_running ?? false,
    agent: receipt.agent ?? null,
    error_code: receipt.error?.code ?? null,
    latency_ms: receipt.duration_ms ?? 0,
    cost_micros: receipt.billed ? parseMoney(receipt.cost.own) : 0,
    delegated: receipt.parent !== null,
    approval: receipt.approval ?? null,
    measured: options.measured ?? true,
  };
}

/** Writing a receipt alone ({@link receiptCtes}); a row when it was written. */
export const SAVE_RECEIPT = namedStatement<ReceiptParam>('holon_gateway_save_receipt', `WITH ${receiptCtes(null)} SELECT id FROM written`);

/**
 * Writes (or overwrites) a receipt in one statement ({@link receiptCtes}), in `db`'s transaction
 * when it is one, and answers whether it was written (false only when `only_running` found it
 * closed: then nothing was written).
 */
export async function saveReceipt(db: Knex | Knex.Transaction, receipt: Receipt, root_mandate: string, options: SaveOptions = {}): Promise<boolean> {
  const rows = await runnerOf(db)(SAVE_RECEIPT.statement, SAVE_RECEIPT.values(receiptParams(receipt, root_mandate, options)));
  return rows.length > 0;
}

const documentOf = (row: Record<string, any>): Receipt => (typeof row.document === 'string' ? JSON.parse(row.document) : row.document);

/** Reads one receipt, or null. */
export async function readReceipt(db: Knex | Knex.Transaction, id: string): Promise<Receipt | null> {
  const row = await db('gateway_receipts').where({ id }).first('document');
  return row ? documentOf(row) : null;
}

/**
 * Reads one receipt, or null, as the synchronous standby has it too (issue 27 §2): the read locks
 * the row (`FOR KEY SHARE`: the call's own writes of its receipt do not wait for it), and locking a row writes WAL
 * under a transaction id, so its commit waits for the standby like a write's: it answers only
 * once what it read is durable where the next primary will be. An old primary a failover engine
 * restarted for a moment, whose own commits the new primary never saw, cannot answer it (it has
 * no standby left): it blocks there until that node is demoted. A transaction id alone is not
 * enough: PostgreSQL waits for the standby only when the transaction wrote WAL, and a
 * `txid_current()` writes none, so such a read came back at once from a restarted old primary
 * with a receipt its standby never had (the failover test's 8 calls answered 200, then lost;
 * `tests/fleet/durable-read.test.ts`). A receipt that does not exist locks nothing and answers
 * null at once. Gives up after `timeout_ms` without cancelling: a cancel is sent on a new
 * connection, which after a failover reaches another server, where the same backend pid is
 * someone else's query (and a cancelled wait for the standby would commit as if it had
 * answered).
 */
export async function readReceiptDurably(db: Knex, id: string, timeout_ms: number): Promise<Receipt | null> {
  const rows = (await db.raw('SELECT document FROM gateway_receipts WHERE id = ? FOR KEY SHARE', [id]).timeout(timeout_ms)).rows;
  return rows.length > 0 ? documentOf(rows[0]) : null;
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

/** Most root receipts one page lists, and the default (gateway §5 `GET /v0/receipts`, `limit`). */
export const RECEIPT_PAGE = { default: 50, max: 500 } as const;

/** A page of receipt trees and the cursor of the next one (null on the last page). */
export interface ReceiptPage {
  receipts: ReceiptTree[];
  next_cursor: string | null;
}

/** The cursor after a row: its exact `created_at` (microseconds, UTC) and id, base64url. */
const cursorOf = (at: string, id: string): string => Buffer.from(JSON.stringify([at, id])).toString('base64url');

/** The position a cursor names; throws HttpError 422 `invalid_request` for anything {@link cursorOf} did not make. */
function positionOf(cursor: string): [string, string] {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (typeof at === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/.test(at) && typeof id === 'string' && /^r\d{1,19}$/.test(id)) return [at, id];
  } catch {
    // Not base64url JSON: refused below like any other foreign cursor.
  }
  throw new HttpError(422, 'invalid_request', `invalid request: cursor ${JSON.stringify(cursor.slice(0, 40))} is not one this gateway gave: pass next_cursor from the previous page as it is`);
}

/**
 * One page of root receipts (no parent), newest first, optionally under one root mandate or any
 * of `mandates` (hosted scoping), as trees; `cursor` continues after the page that gave it.
 * `limit` is at most {@link RECEIPT_PAGE}`.max` (the API refuses more). Throws HttpError 422 for a foreign cursor.
 */
export async function listReceiptTrees(db: Knex, options: { mandate?: string; mandates?: readonly string[]; limit: number; cursor?: string }): Promise<ReceiptPage> {
  const limit = Math.min(options.limit, RECEIPT_PAGE.max);
  const query = db('gateway_receipts')
    .whereNull('parent')
    .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }])
    .limit(limit + 1);
  if (options.mandate) query.where({ root_mandate: options.mandate });
  if (options.mandates) query.whereIn('root_mandate', options.mandates);
  if (options.cursor !== undefined) query.whereRaw('(created_at, id) < (?::timestamptz, ?)', positionOf(options.cursor));
  const rows = await query.select('document', 'id', db.raw(`to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at`));
  const page = rows.slice(0, limit);
  const receipts: ReceiptTree[] = [];
  for (const row of page) receipts.push(await treeOf(db, documentOf(row)));
  const last = page[page.length - 1];
  return { receipts, next_cursor: rows.length > limit ? cursorOf(last.at, last.id) : null };
}

/** The receipts of the calls `id` made, in the order they were made. */
export async function childrenOf(db: Knex | Knex.Transaction, id: string): Promise<Receipt[]> {
  const rows = await db('gateway_receipts').where({ parent: id }).orderBy([{ column: 'created_at' }, { column: 'id' }]).select('document');
  return rows.map(documentOf);
}

/**
 * Receipts still `running` whose process is one of `dead` (or unrecorded: written before
 * processes were), with the hold each had opened; `lock` reads them `FOR UPDATE` in a transaction.
 */
export async function runningReceipts(db: Knex | Knex.Transaction, dead: readonly number[], options: { id?: string; lock?: boolean } = {}): Promise<Array<{ receipt: Receipt; hold_id: string | null }>> {
  const query = db('gateway_receipts').where({ status: 'running' }).where((owner) => owner.whereNull('process').orWhereIn('process', [...dead]));
  if (options.id !== undefined) query.where({ id: options.id });
  if (options.lock) query.forUpdate();
  const rows = await query.select('document', 'hold_id');
  return rows.map((row) => ({ receipt: documentOf(row), hold_id: row.hold_id ?? null }));
}

/** Now, as the ISO string receipts carry. */
export const now = (): string => iso(new Date())!;
