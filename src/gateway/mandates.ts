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
import { validateMandate, type Mandate } from '../contracts/mandate.ts';
import { formatMoney, type Micros } from '../contracts/money.ts';
import { NEXT_RECEIPT_SQL, receiptIdOf } from './receipts.ts';

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
  /** A new receipt id drawn in the same statement, when asked for (`receipt_id`). */
  receipt_id?: string;
}

/** The figures of a mandate row: its running `reserved_micros` and `spent_micros` against `total_micros`. */
function figuresOf(total_micros: Micros, row: { reserved_micros?: unknown; spent_micros?: unknown } | undefined): BudgetFigures {
  const reserved_micros = int(row?.reserved_micros ?? 0);
  const spent_micros = int(row?.spent_micros ?? 0);
  return { total_micros, spent_micros, reserved_micros, remaining_micros: total_micros - spent_micros - reserved_micros };
}

/**
 * Reads a root mandate and its budget figures (one statement), or null: the only kind a door
 * (`/v0`, `/mcp`) may name. A derived sub-mandate (gateway §3) is null here, like a mandate that
 * does not exist: it is usable only by the run it was derived for, which holds it (issue 8
 * §1.1). `receipt_id`: also draw a new receipt id in the same statement (a call's first read;
 * none is drawn when there is no such mandate). Throws ContractError when a stored document is no longer valid.
 */
export async function loadMandate(db: Knex | Knex.Transaction, id: string, options: { receipt_id?: boolean } = {}): Promise<LoadedMandate | null> {
  const query = db('gateway_mandates').where({ id }).whereNull('parent');
  const row = await (options.receipt_id ? query.first('*', db.raw(`${NEXT_RECEIPT_SQL} AS receipt_seq`)) : query.first());
  if (!row) return null;
  const document = typeof row.document === 'string' ? JSON.parse(row.document) : row.document;
  const mandate = validateMandate(document);
  const loaded: LoadedMandate = { id, document, mandate, parent: row.parent, payer: row.payer, figures: figuresOf(mandate.budget.total_micros, row) };
  if (options.receipt_id) loaded.receipt_id = receiptIdOf(row.receipt_seq);
  return loaded;
}

/**
 * Stores a mandate document (validated first; throws ContractError `invalid_mandate`). A root
 * mandate already stored with the same id is replaced only when `replace` is set (the dev
 * gateway's own `dev/sandbox`); otherwise the first one stands.
 */
export async function storeMandate(
  db: Knex | Knex.Transaction,
  document: Record<string, any>,
  options: { parent: string | null; payer: string; replace?: boolean },
): Promise<StoredMandate> {
  const mandate = validateMandate(document);
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

/**
 * Reserves `worst_case_micros` of a mandate's budget for `receipt`: in one statement, the
 * mandate's `reserved_micros` grows by it only while total − spent − reserved still covers it
 * (checked under the row's lock, on its latest version), and the reservation row is written.
 * A worst case exactly equal to what remains fits (open point 6). `ok: false` with the figures
 * seen when it does not fit (nothing is written).
 */
export async function reserveBudget(
  trx: Knex.Transaction,
  mandate: StoredMandate,
  receipt: string,
  worst_case_micros: Micros,
): Promise<{ ok: true } | { ok: false; figures: BudgetFigures }> {
  const total_micros = mandate.mandate.budget.total_micros;
  const { rows } = await trx.raw(
    `WITH reserved AS (
       UPDATE gateway_mandates SET reserved_micros = reserved_micros + ?
       WHERE id = ? AND ? - spent_micros - reserved_micros >= ?
       RETURNING id)
     INSERT INTO gateway_reservations (receipt, mandate, worst_case_micros, status)
     SELECT ?, id, ?, 'open' FROM reserved
     RETURNING receipt`,
    [worst_case_micros, mandate.id, total_micros, worst_case_micros, receipt, worst_case_micros],
  );
  if (rows.length === 1) return { ok: true };
  return { ok: false, figures: await budgetOf(trx, mandate.id, total_micros) };
}

/**
 * Closes a reservation still open: `settled` with what the call spent (0 or more), or `released`
 * (`spent_micros` null: nothing spent); in the same statement its worst case leaves the
 * mandate's `reserved_micros` and what it spent joins `spent_micros`. A reservation already
 * closed is left as it is.
 */
export async function closeReservation(trx: Knex.Transaction, receipt: string, spent_micros: Micros | null): Promise<void> {
  await trx.raw(
    `WITH closed AS (
       UPDATE gateway_reservations SET status = ?, spent_micros = ?
       WHERE receipt = ? AND status = 'open'
       RETURNING mandate, worst_case_micros, spent_micros)
     UPDATE gateway_mandates m
     SET reserved_micros = m.reserved_micros - closed.worst_case_micros, spent_micros = m.spent_micros + closed.spent_micros
     FROM closed WHERE m.id = closed.mandate`,
    [spent_micros === null ? 'released' : 'settled', spent_micros ?? 0, receipt],
  );
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
