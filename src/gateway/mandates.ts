/**
 * Mandates and their budgets in the database (gateway §1 "Reserve", §3, §5 `/v0/mandates`).
 * A call's worst case becomes a row of `gateway_reservations`, and the mandate's row keeps the
 * running figures (`reserved_micros`, `spent_micros`, migration 013), moved in the same
 * statement that opens or closes a reservation. Reserving is one conditional update of the
 * mandate row, which Postgres re-checks on the latest version after waiting for its lock, so
 * parallel calls, from one process or several, cannot overrun the budget. Amounts are integer
 * micro-units of the mandate's currency.
 */
import type { Knex } from 'knex';
import { int } from '../db/index.ts';
import { isRootMandateId, validateMandate, validateRootMandate, type Mandate } from '../contracts/mandate.ts';
import { formatMoney, type Micros } from '../contracts/money.ts';
import { namedStatement, runnerOf } from '../db/raw-sql.ts';

/** A stored mandate: the document as written, its normalized form, its parent and who pays under it. */
export interface StoredMandate {
  id: string;
  document: Record<string, any>;
  mandate: Mandate;
  parent: string | null;
  /** The clearing account that pays for calls made under this mandate. */
  payer: string;
}

/** A budget's figures (gateway §5): remaining = total − spent − reserved. */
export interface BudgetFigures {
  total_micros: Micros;
  spent_micros: Micros;
  reserved_micros: Micros;
  remaining_micros: Micros;
}

/** A root mandate as read, with its budget figures as they were at that read (admission's view; reserving re-checks them). */
export interface LoadedMandate extends StoredMandate {
  figures: BudgetFigures;
}

/** The figures of a mandate row: its running `reserved_micros` and `spent_micros` against `total_micros`. */
function figuresOf(total_micros: Micros, row: { reserved_micros?: unknown; spent_micros?: unknown } | undefined): BudgetFigures {
  const reserved_micros = int(row?.reserved_micros ?? 0);
  const spent_micros = int(row?.spent_micros ?? 0);
  return { total_micros, spent_micros, reserved_micros, remaining_micros: total_micros - spent_micros - reserved_micros };
}

const ROOT_MANDATE = namedStatement<'id'>('holon_gateway_root_mandate', 'SELECT * FROM gateway_mandates WHERE id = :id::text AND parent IS NULL');

/**
 * Reads a root mandate and its budget figures (one statement), or null: the only kind a door
 * (`/v0`, `/mcp`) may name. A derived sub-mandate (gateway §3) is null here, like a mandate that
 * does not exist: it is usable only by the run it was derived for, which holds it (issue 8
 * §1.1). So is any id with a dot, unread: a root id has none (`validateRootMandate`), and a root
 * stored with one before that rule would count its calls under another root. Throws
 * ContractError when a stored document is no longer valid.
 */
export async function loadMandate(db: Knex | Knex.Transaction, id: string): Promise<LoadedMandate | null> {
  if (!isRootMandateId(id)) return null;
  const [row] = await runnerOf(db)(ROOT_MANDATE.statement, ROOT_MANDATE.values({ id }));
  if (!row) return null;
  const document = typeof row.document === 'string' ? JSON.parse(row.document) : row.document;
  const mandate = validateMandate(document);
  const loaded: LoadedMandate = { id, document, mandate, parent: row.parent, payer: row.payer, figures: figuresOf(mandate.budget.total_micros, row) };
  return loaded;
}

/**
 * Stores a mandate document (validated first, as a root's when `parent` is null, so a root id
 * with a dot is refused; throws ContractError `invalid_mandate`). A root
 * mandate already stored with the same id is replaced only when `replace` is set (the dev
 * gateway's own `dev/sandbox`); otherwise the first one stands.
 */
export async function storeMandate(
  db: Knex | Knex.Transaction,
  document: Record<string, any>,
  options: { parent: string | null; payer: string; replace?: boolean },
): Promise<StoredMandate> {
  const mandate = options.parent === null ? validateRootMandate(document) : validateMandate(document);
  const row = {
    id: mandate.id,
    document: JSON.stringify(document),
    parent: options.parent,
    payer: options.payer,
    currency: mandate.budget.currency,
    total_micros: mandate.budget.total_micros,
  };
  const insert = db('gateway_mandates').insert(row).onConflict('id');
  await (options.replace ? insert.merge() : insert.ignore());
  return { id: mandate.id, document, mandate, parent: options.parent, payer: options.payer };
}

/** The budget figures of a mandate (its running figures against `total_micros`); zeros for a mandate not stored. */
export async function budgetOf(db: Knex | Knex.Transaction, id: string, total_micros: Micros): Promise<BudgetFigures> {
  return figuresOf(total_micros, await db('gateway_mandates').where({ id }).first('reserved_micros', 'spent_micros'));
}

/** The parameters of {@link RESERVE_CTES}: the mandate, the call's worst case (micro-units) and its receipt id. */
export type ReserveParam = 'mandate' | 'worst_case_micros' | 'receipt_id';

/**
 * Reserving as CTEs, for a statement that writes more with it: `reserved` (the mandate's id,
 * when its `reserved_micros` grew by the worst case: only while total − spent − reserved still
 * covers it, checked under the row's lock on its latest version, with the row's own
 * `total_micros`, not the document the caller read: `mandate-cache.ts`) and `reservation` (the
 * reservation row, written only then). A worst case exactly equal to what remains fits (open point 6).
 */
export const RESERVE_CTES = `reserved AS (
    UPDATE gateway_mandates SET reserved_micros = reserved_micros + :worst_case_micros::bigint
    WHERE id = :mandate::text AND total_micros - spent_micros - reserved_micros >= :worst_case_micros::bigint
    RETURNING id),
  reservation AS (
    INSERT INTO gateway_reservations (receipt, mandate, worst_case_micros, status)
    SELECT :receipt_id::text, id, :worst_case_micros::bigint, 'open' FROM reserved)`;

/** The parameters of {@link RESERVE_CTES} for a call (`receipt_id`) reserving `worst_case_micros` under `mandate`. */
export function reserveParams(mandate: StoredMandate, receipt_id: string, worst_case_micros: Micros): Record<ReserveParam, unknown> {
  return { mandate: mandate.id, worst_case_micros, receipt_id };
}

/** The parameters of {@link SUB_MANDATE_CTE}; all null when the call derives no sub-mandate. */
export type SubMandateParam = 'sub_id' | 'sub_document' | 'sub_parent' | 'sub_payer' | 'sub_currency' | 'sub_total_micros';

/** Storing a derived sub-mandate (gateway §3) as a CTE, only when `reserved` has a row and `:sub_id` is not null; a stored one stands. */
export const SUB_MANDATE_CTE = `sub AS (
    INSERT INTO gateway_mandates (id, document, parent, payer, currency, total_micros)
    SELECT :sub_id::text, :sub_document::jsonb, :sub_parent::text, :sub_payer::text, :sub_currency::text, :sub_total_micros::bigint
    FROM reserved WHERE :sub_id::text IS NOT NULL
    ON CONFLICT (id) DO NOTHING)`;

/** The parameters of {@link SUB_MANDATE_CTE} for `document` (validated; throws ContractError `invalid_mandate`) under `parent`, paid by `payer`; or none. */
export function subMandateParams(sub: { document: Record<string, any>; parent: string; payer: string } | null): { stored: StoredMandate | null; params: Record<SubMandateParam, unknown> } {
  if (!sub) return { stored: null, params: { sub_id: null, sub_document: null, sub_parent: null, sub_payer: null, sub_currency: null, sub_total_micros: null } };
  const mandate = validateMandate(sub.document);
  return {
    stored: { id: mandate.id, document: sub.document, mandate, parent: sub.parent, payer: sub.payer },
    params: { sub_id: mandate.id, sub_document: JSON.stringify(sub.document), sub_parent: sub.parent, sub_payer: sub.payer, sub_currency: mandate.budget.currency, sub_total_micros: mandate.budget.total_micros },
  };
}

/** The parameters of {@link closeCtes}: the receipt, and what it spent (micro-units; null: released, nothing spent). */
export type CloseParam = 'receipt_id' | 'close_status' | 'spent_micros';

/** The parameters of {@link closeCtes} for `receipt` having spent `spent_micros` (null: released). */
export function closeParams(receipt: string, spent_micros: Micros | null): Record<CloseParam, unknown> {
  return { receipt_id: receipt, close_status: spent_micros === null ? 'released' : 'settled', spent_micros: spent_micros ?? 0 };
}

/**
 * Closing a reservation still open as CTEs (`closed`, `budget`): `settled` with what the call
 * spent, or `released`; its worst case leaves the mandate's `reserved_micros` and what it spent
 * joins `spent_micros`. A reservation already closed is left as it is. `guard`: a CTE that must
 * have a row for anything to close (the receipt the statement writes).
 */
export const closeCtes = (guard: string | null) => `closed AS (
    UPDATE gateway_reservations SET status = :close_status::text, spent_micros = :spent_micros::bigint
    WHERE receipt = :receipt_id::text AND status = 'open'${guard ? ` AND EXISTS (SELECT 1 FROM ${guard})` : ''}
    RETURNING mandate, worst_case_micros, spent_micros),
  budget AS (
    UPDATE gateway_mandates m
    SET reserved_micros = m.reserved_micros - closed.worst_case_micros, spent_micros = m.spent_micros + closed.spent_micros
    FROM closed WHERE m.id = closed.mandate)`;

const CLOSE = namedStatement<CloseParam>('holon_gateway_close_reservation', `WITH ${closeCtes(null)} SELECT 1`);

/** Closes a reservation still open in one statement ({@link closeCtes}); `spent_micros` null: released. */
export async function closeReservation(db: Knex | Knex.Transaction, receipt: string, spent_micros: Micros | null): Promise<void> {
  await runnerOf(db)(CLOSE.statement, CLOSE.values(closeParams(receipt, spent_micros)));
}

/** A budget as the `/v0` API shows it: decimal strings in the mandate's currency. */
export function budgetView(currency: string, figures: BudgetFigures) {
  return {
    currency,
    total: formatMoney(figures.total_micros),
    spent: formatMoney(figures.spent_micros),
    reserved: formatMoney(figures.reserved_micros),
    remaining: formatMoney(figures.remaining_micros),
  };
}
