/**
 * Account reads of the reference binding, resolve-account (§6.1), read-balance (§6.2) and
 * read-summary (§6.3), and its own doors outside the contract (§14): create an account, link
 * an agent key to an account. Amounts are EUR micro-units.
 */
import type { Knex } from 'knex';
import { LRUCache } from 'lru-cache';
import type { OperationRequest, OperationResult } from '../../generated/clearing/server.ts';
import { int, iso } from '../db/index.ts';
import { HttpError, invalidRequest } from '../http/errors.ts';
import { expireHolds, inTransaction, isMachinery, lockAccounts, readFigures, type Ledger } from './ledger.ts';
import { rawQuery, rawRunner, transactionRunner, type FixedStatement } from '../db/raw-sql.ts';
import { reservationsOf } from './reservations.ts';

/** The statement length of read-summary: default and clamp (§6.3). */
export const STATEMENT_DEFAULT = 30;
export const STATEMENT_MAX = 500;

/** The funding doors this binding declares (§5.1): the account holder can credit an account. */
export const FUNDING = ['credit'];

/** The one statement of resolve-account (§6.1). */
export const RESOLVE_SQL: FixedStatement = { name: 'holon_clearing_resolve', text: 'SELECT account FROM clearing_agent_links WHERE agent_key = $1' };

/** Most agent keys whose account a ledger remembers (each entry is two ids: at most a few KiB). */
export const LINK_CACHE_MAX = 10_000;
/** How long a remembered link is answered without reading it again, in milliseconds: bounds how long a link removed by hand in the database still resolves. */
export const LINK_CACHE_TTL_MS = 60_000;

/**
 * The agent keys a ledger has resolved to an account (§6.1 "SHOULD answer this cheaply"), bounded
 * by {@link LINK_CACHE_MAX} and {@link LINK_CACHE_TTL_MS}. Only links are kept, never a `null`
 * answer, so a just-linked key resolves at once; and a link never changes through the binding's
 * doors (link-agent refuses a relink, nothing removes one), so a remembered answer is the
 * table's answer.
 */
export function newLinkCache(): LRUCache<string, string> {
  return new LRUCache<string, string>({ max: LINK_CACHE_MAX, ttl: LINK_CACHE_TTL_MS });
}

/** resolve-account (§6.1): a remembered link, else one indexed read; an unlinked key answers `account: null`. */
export async function resolveAccount({ db, links }: Ledger, { params }: OperationRequest<'resolve-account'>): Promise<OperationResult<'resolve-account'>> {
  const remembered = links.get(params.agentKey);
  if (remembered !== undefined) return { agent: params.agentKey, account: remembered };
  const [row] = await rawQuery(db, RESOLVE_SQL, [params.agentKey]);
  const account: string | null = row?.account ?? null;
  if (account !== null) links.set(params.agentKey, account);
  return { agent: params.agentKey, account };
}

/** read-balance (§6.2): the figures, closed windows not counted; one read. 404 `no_such_object` for an unknown account. */
export async function readBalance({ db }: Ledger, { params }: OperationRequest<'read-balance'>): Promise<OperationResult<'read-balance'>> {
  return readFigures(rawRunner(db), params.account);
}

/**
 * The provenance split of §6.3, net of corrections (invariant 14): a reversal's postings carry
 * the kind they undo (`reverse-charge` counts against `charge`), so a reversed charge stops
 * counting as spend. Keys: credited, earned, spent, adjusted (and fees for the platform account).
 */
async function totals(trx: Knex.Transaction, account: string): Promise<Record<string, number>> {
  const rows = await trx('clearing_postings')
    .where({ account })
    .groupBy('kind')
    .select('kind', trx.raw('sum(delta)::bigint AS total'));
  const byKind = new Map<string, number>();
  for (const row of rows) {
    const kind = String(row.kind).replace(/^reverse-/, '');
    byKind.set(kind, (byKind.get(kind) ?? 0) + int(row.total));
  }
  const figure = (kind: string, sign: 1 | -1) => sign * (byKind.get(kind) ?? 0);
  const result: Record<string, number> = {
    credited: figure('credit', 1),
    earned: figure('earn', 1),
    spent: figure('charge', -1),
    adjusted: figure('adjustment', 1),
  };
  if (byKind.has('fee')) result.fees = figure('fee', 1);
  return result;
}

/** read-summary (§6.3): figures, open reservations, totals, funding and the newest `limit` postings. */
export async function readSummary({ db }: Ledger, { params, query }: OperationRequest<'read-summary'>): Promise<OperationResult<'read-summary'>> {
  const limit = Math.min(query.limit ?? STATEMENT_DEFAULT, STATEMENT_MAX);
  return inTransaction(db, async (trx) => {
    await expireHolds(trx, params.account);
    const figures = await readFigures(transactionRunner(trx), params.account);
    const statement = await trx('clearing_postings as p')
      .join('clearing_transactions as t', 't.txn_id', 'p.txn_id')
      .where('p.account', params.account)
      .orderBy('p.id', 'desc')
      .limit(limit)
      .select('p.txn_id', 'p.delta', 'p.kind', 't.door', 't.ref', 't.memo', 't.reason', 't.created_at');
    return {
      ...figures,
      reservations: await reservationsOf(trx, params.account, true),
      totals: await totals(trx, params.account),
      funding: FUNDING,
      statement: statement.map((row) => ({
        txn_id: row.txn_id,
        ts: iso(row.created_at),
        delta: int(row.delta),
        kind: row.kind,
        door: row.door,
        ref: row.ref ?? row.memo ?? row.reason ?? null,
      })),
    };
  });
}

/** create-account (extension): a holder account; idempotent; machinery names are refused (422 `invalid_request`). */
export async function createAccount({ db }: Ledger, { body }: OperationRequest<'create-account'>): Promise<OperationResult<'create-account'>> {
  if (isMachinery(body.account)) throw invalidRequest(`${body.account} names this binding's own machinery; choose another account id`);
  const inserted = await db('clearing_accounts').insert({ id: body.account, kind: 'holder' }).onConflict('id').ignore().returning('id');
  return { ok: true, applied: inserted.length === 1, account: body.account };
}

/**
 * link-agent (extension): maps an agent key to the account that pays for it (§4, §6.1).
 * Idempotent; relinking a key to another account is refused with 422 `terms_conflict`.
 */
export async function linkAgent({ db }: Ledger, { body }: OperationRequest<'link-agent'>): Promise<OperationResult<'link-agent'>> {
  return inTransaction(db, async (trx) => {
    await lockAccounts(trx, [body.account]);
    if (isMachinery(body.account)) throw invalidRequest(`${body.account} is this binding's own machinery; an agent cannot pay from it`);
    const existing = await trx('clearing_agent_links').where({ agent_key: body.agentKey }).first('account');
    if (existing && existing.account !== body.account) {
      throw new HttpError(422, 'terms_conflict', `agent key ${body.agentKey} is already linked to ${existing.account}`);
    }
    if (!existing) await trx('clearing_agent_links').insert({ agent_key: body.agentKey, account: body.account });
    return { ok: true, applied: !existing, agent: body.agentKey, account: body.account };
  });
}
