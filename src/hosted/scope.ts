/**
 * Scoping (gateway §7 "Principals"): a principal sees its own mandates (and the sub-mandates
 * derived from them), receipts, approvals and balance; anything else answers 404 as if it did
 * not exist, so a key cannot even learn which ids are taken. A human key's scope is every root
 * mandate its account issued; an agent key's is its one mandate; the admin and no key have none.
 */
import type { Knex } from 'knex';
import { isRootMandateId, rootMandateOf } from '../contracts/mandate.ts';
import type { GatewayErrorCode } from '../../generated/gateway/server.ts';
import { HttpError } from '../http/errors.ts';
import type { ApprovalScope } from '../gateway/approvals.ts';
import type { Principal } from './principal.ts';

/**
 * The root mandates a principal may act under and read, oldest first (none for admin and no key).
 * A root stored with a dot in its id before that was refused is left out: no door reads it (`loadMandate`).
 */
export async function mandatesInScope(db: Knex, principal: Principal): Promise<string[]> {
  if (principal.kind === 'agent') return [principal.mandate];
  if (principal.kind !== 'human') return [];
  const rows = await db('gateway_mandates').whereNull('parent').where({ payer: principal.account }).orderBy([{ column: 'created_at' }, { column: 'id' }]).select('id');
  return rows.map((row) => row.id as string).filter(isRootMandateId);
}

/** The approvals a principal may see and decide: those under its root mandates ({@link mandatesInScope}; none for admin and no key). */
export async function approvalScope(db: Knex, principal: Principal): Promise<ApprovalScope> {
  return { roots: await mandatesInScope(db, principal) };
}

/** Whether `mandate` (a root or a derived sub-mandate) is in the principal's scope. */
export async function inScope(db: Knex, principal: Principal, mandate: string): Promise<boolean> {
  const root = rootMandateOf(mandate);
  if (principal.kind === 'agent') return root === principal.mandate;
  if (principal.kind !== 'human') return false;
  const row = await db('gateway_mandates').where({ id: root }).whereNull('parent').first('payer');
  return row?.payer === principal.account;
}

/** Throws `404 <code>` ("there is no <what> <id>") unless `mandate` is in the principal's scope. */
export async function requireScope(db: Knex, principal: Principal, mandate: string, code: Extract<GatewayErrorCode, `no_such_${string}`>, what: string, id: string): Promise<void> {
  if (!(await inScope(db, principal, mandate))) throw new HttpError(404, code, `there is no ${what} ${id}`);
}
