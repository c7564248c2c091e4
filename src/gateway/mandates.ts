/**
 * Mandates and their budgets in the database (gateway §1 "Reserve", §3, §5 `/v0/mandates`).
 * A call's worst case becomes a row of `gateway_reservations` under a lock on the mandate's row,
 * so parallel calls, from one process or several, see each other and cannot overrun the budget.
 * Amounts are integer micro-units of the mandate's currency.
 */
import type { Knex } from 'knex';
import { int } from '../db/index.ts';
import { validateMandate, type Mandate } from '../contracts/mandate.ts';
import { formatMoney, type Micros } from '../contracts/money.ts';

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

/**
 * Reads a root mandate, or null: the only kind a door (`/v0`, `/mcp`) may name. A derived
 * sub-mandate (gateway §3) is null here, like a mandate that does not exist: it is usable only
 * by the run it was derived for, which holds it (issue 8 §1.1). Throws ContractError when a
 * stored document is no longer valid.
 */
export async function loadMandate(db: Knex | Knex.Transaction, id: string): Promise<StoredMandate | null> {
  const row = await db('gateway_mandates').where({ id }).whereNull('parent').first();
  if (!row) return null;
  const document = typeof row.document === 'string' ? JSON.parse(row.document) : row.document;
  return { id, document, mandate: validateMandate(document), parent: row.parent, payer: row.payer };
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

/** The budget figures of a mandate, from its reservations (open ones count their worst case, settled ones what they spent). */
export async function budgetOf(db: Knex | Knex.Transaction, id: string, total_micros: Micros): Promise<BudgetFigures> {
  const row = await db('gateway_reservations')
    .where({ mandate: id })
    .first(
      db.raw(`coalesce(sum(CASE WHEN status = 'open' THEN worst_case_micros ELSE 0 END), 0)::bigint AS reserved`),
      db.raw(`coalesce(sum(CASE WHEN status = 'settled' THEN spent_micros ELSE 0 END), 0)::bigint AS spent`),
    );
  const reserved_micros = int(row.reserved);
  const spent_micros = int(row.spent);
  return { total_micros, spent_micros, reserved_micros, remaining_micros: total_micros - spent_micros - reserved_micros };
}

/**
 * Reserves `worst_case_micros` of a mandate's budget for `receipt`, under a lock on the mandate
 * row. A worst case exactly equal to what remains fits (open point 6). Returns the figures seen;
 * `ok: false` when it does not fit (nothing is written).
 */
export async function reserveBudget(
  trx: Knex.Transaction,
  mandate: StoredMandate,
  receipt: string,
  worst_case_micros: Micros,
): Promise<{ ok: boolean; figures: BudgetFigures }> {
  await trx('gateway_mandates').where({ id: mandate.id }).forUpdate().first('id');
  const figures = await budgetOf(trx, mandate.id, mandate.mandate.budget.total_micros);
  if (worst_case_micros > figures.remaining_micros) return { ok: false, figures };
  await trx('gateway_reservations').insert({ receipt, mandate: mandate.id, worst_case_micros, status: 'open' });
  return { ok: true, figures };
}

/** Closes a reservation: `settled` with what the call spent (0 or more), or `released` (nothing spent). */
export async function closeReservation(trx: Knex.Transaction, receipt: string, spent_micros: Micros | null): Promise<void> {
  await trx('gateway_reservations')
    .where({ receipt, status: 'open' })
    .update(spent_micros === null ? { status: 'released' } : { status: 'settled', spent_micros });
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
