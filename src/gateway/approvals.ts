/**
 * Pending approvals (gateway §1 "Admit", §5, §7 "Limits"): a call the mandate sends to a human
 * is held, bound to the mandate, the exact agent version, a hash of the input and the caller's
 * `max_cost`. The held input is the one thing kept between requests: it is deleted once the
 * approval is used or rejected, and pending approvals expire after 7 days, forgetting it.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Knex } from 'knex';
import { int, iso } from '../db/index.ts';
import { formatMoney, type Micros } from '../contracts/money.ts';
import { readReceipt, type ReceiptError, type ReceiptStatus } from './receipts.ts';

/** How long an approval waits for a decision. */
export const APPROVAL_TTL_MS = 7 * 24 * 3600 * 1000;

/** A stored approval. Money in micro-units of the mandate's currency; `input` is null once forgotten. */
export interface ApprovalRow {
  id: string;
  status: 'pending' | 'approved' | 'rejected' | 'expired';
  mandate: string;
  agent: string;
  input: unknown;
  input_sha256: string;
  max_cost_micros: Micros | null;
  worst_case_micros: Micros;
  reason: string;
  receipt: string;
  created_at: string;
  expires_at: string;
}

/**
 * The SHA-256 (hex) of an input's canonical JSON (RFC 8785, by `canonicalize`): the binding between
 * an approval and the input it approved (gateway §1 "Admit"). Canonical, not the text as sent: the
 * held input comes back from a `jsonb` column with its keys reordered (shorter first), and must
 * hash the same as the input a caller re-sends.
 */
export function inputHash(input: unknown): string {
  return createHash('sha256').update(canonicalize(input) ?? 'null').digest('hex');
}

function rowOf(row: Record<string, any>): ApprovalRow {
  return {
    id: row.id,
    status: row.status,
    mandate: row.mandate,
    agent: row.agent,
    input: row.input === null ? null : typeof row.input === 'string' ? JSON.parse(row.input) : row.input,
    input_sha256: row.input_sha256,
    max_cost_micros: row.max_cost_micros === null ? null : int(row.max_cost_micros),
    worst_case_micros: int(row.worst_case_micros),
    reason: row.reason,
    receipt: row.receipt,
    created_at: iso(row.created_at)!,
    expires_at: iso(row.expires_at)!,
  };
}

/** Holds a call for approval; returns the stored approval. */
export async function createApproval(
  db: Knex | Knex.Transaction,
  fields: { mandate: string; agent: string; input: unknown; max_cost_micros: Micros | null; worst_case_micros: Micros; reason: string; receipt: string },
): Promise<ApprovalRow> {
  const seq = await db.raw(`SELECT nextval('gateway_approval_seq') AS n`);
  const [row] = await db('gateway_approvals')
    .insert({
      id: `a${seq.rows[0].n}`,
      status: 'pending',
      mandate: fields.mandate,
      agent: fields.agent,
      input: JSON.stringify(fields.input),
      input_sha256: inputHash(fields.input),
      max_cost_micros: fields.max_cost_micros,
      worst_case_micros: fields.worst_case_micros,
      reason: fields.reason,
      receipt: fields.receipt,
      expires_at: new Date(Date.now() + APPROVAL_TTL_MS),
    })
    .returning('*');
  return rowOf(row);
}

/** Marks pending approvals past their window `expired` and forgets their input; returns their receipts. */
export async function expireApprovals(db: Knex | Knex.Transaction): Promise<string[]> {
  const rows = await db('gateway_approvals')
    .where({ status: 'pending' })
    .andWhere('expires_at', '<=', db.raw('clock_timestamp()'))
    .update({ status: 'expired', input: null, decided_at: db.raw('clock_timestamp()') })
    .returning('receipt');
  return rows.map((r: { receipt: string }) => r.receipt);
}

/**
 * Whose approvals a door may see (gateway §7 "Principals"): `'all'` on the dev gateway (one
 * user, every mandate its own), else the approvals of calls under these root mandates (a hosted
 * principal's mandates, an MCP session's mandate), their derived sub-mandates included.
 */
export type ApprovalScope = 'all' | { roots: readonly string[] };

/** Most approvals one list answers, and the default (gateway §5 `GET /v0/approvals`, `limit`; the MCP `list_approvals`). */
export const APPROVAL_PAGE = { default: 100, max: 500 } as const;

/**
 * The approvals of `scope` in the database's query: the held receipt's `root_mandate` (written
 * with the approval, in its transaction) is one of the scope's roots, so no other tenant's row
 * is ever read.
 */
function scoped(query: Knex.QueryBuilder, scope: ApprovalScope): Knex.QueryBuilder {
  if (scope === 'all') return query;
  return query.whereIn('receipt', (receipts) => receipts.from('gateway_receipts').whereIn('root_mandate', [...scope.roots]).select('id'));
}

/**
 * The pending approvals of `scope`, newest first (then by id, so a page is stable), at most
 * `limit` (1 to {@link APPROVAL_PAGE}.max): the scope and the limit are in the query, whatever
 * other tenants hold. The one reader of every door's list (dev and hosted `GET /v0/approvals`,
 * the MCP `list_approvals`).
 */
export async function pendingApprovals(db: Knex, scope: ApprovalScope, limit: number): Promise<ApprovalRow[]> {
  const query = db('gateway_approvals').where({ status: 'pending' }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(limit);
  return (await scoped(query, scope)).map(rowOf);
}

/** Reads one approval in any state when it is in `scope`, or null (absent and out of scope read the same: gateway §7 answers 404 for both). */
export async function readApproval(db: Knex, id: string, scope: ApprovalScope): Promise<ApprovalRow | null> {
  const row = await scoped(db('gateway_approvals').where({ id }), scope).first();
  return row ? rowOf(row) : null;
}

/** Locks and reads one approval inside a transaction, or null. */
export async function lockApproval(trx: Knex.Transaction, id: string): Promise<ApprovalRow | null> {
  const row = await trx('gateway_approvals').where({ id }).forUpdate().first();
  return row ? rowOf(row) : null;
}

/**
 * Records the decision. A rejection deletes the held input at once; an approval keeps it until
 * the run's outcome is recorded (`saveReceipt` deletes it then), so a crash in between leaves
 * a call that restart recovery can close (gateway §4, issue 8 §1.5).
 */
export async function decide(trx: Knex.Transaction, id: string, status: 'approved' | 'rejected'): Promise<void> {
  await trx('gateway_approvals')
    .where({ id })
    .update({ status, ...(status === 'rejected' ? { input: null } : {}), decided_at: trx.raw('clock_timestamp()') });
}

/** An approval as the `/v0` API shows it (no input: only its hash). */
export function approvalView(row: ApprovalRow, currency: string) {
  return {
    id: row.id,
    status: row.status,
    mandate: row.mandate,
    agent: row.agent,
    input_sha256: row.input_sha256,
    max_cost: row.max_cost_micros === null ? null : formatMoney(row.max_cost_micros),
    worst_case: formatMoney(row.worst_case_micros),
    currency,
    reason: row.reason,
    receipt: row.receipt,
    created_at: row.created_at,
    expires_at: row.expires_at,
  };
}

/** How an approval's call ended (`ApprovalOutcome` of `openapi/gateway.yaml`). */
export interface ApprovalOutcome {
  receipt: string;
  /** How the call ended: never `running` or `pending_approval` (then there is no outcome yet). */
  status: Exclude<ReceiptStatus, 'running' | 'pending_approval'>;
  billed: boolean;
  error: ReceiptError | null;
}

/**
 * How approval `row`'s call ended, read from its receipt (stored, so it outlives a restart:
 * issue 8 §1.5); null while the receipt is still `pending_approval` or `running`.
 */
export async function approvalOutcome(db: Knex, row: ApprovalRow): Promise<ApprovalOutcome | null> {
  const receipt = await readReceipt(db, row.receipt);
  if (!receipt || receipt.status === 'pending_approval' || receipt.status === 'running') return null;
  return { receipt: receipt.id, status: receipt.status, billed: receipt.billed, error: receipt.error };
}
