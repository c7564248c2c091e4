/**
 * Reservations in the reference binding: open-hold (§6.11), resize-hold (§6.12), draw (§6.13),
 * release-hold (§6.14), expiry (§6.15) and the two reads (§6.5, §6.6). A hold moves no value;
 * a draw is one settlement with rate equal to retail. Every operation locks the account row
 * first, then the hold row, so parallel requests serialize and never deadlock. Amounts are EUR
 * micro-units.
 */
import type { Knex } from 'knex';
import type { OperationRequest, OperationResult } from '../../generated/clearing/server.ts';
import { int, iso } from '../db/index.ts';
import { invalidRequest, noSuchObject } from '../http/errors.ts';
import { transactionRunner } from '../db/raw-sql.ts';
import { checkReplay, expireHolds, inTransaction, readFigures, refuseMachinery, storedTransaction, termsOf, type Ledger } from './ledger.ts';

type Reservation = OperationResult<'read-reservation'> extends infer R ? Omit<R, 'draws'> : never;
type DrawLine = OperationResult<'draw'>['lines'][number];

/** A stored hold row as the §6.5 reservation record. */
function reservationOf(row: Record<string, any>): Reservation {
  return {
    hold_id: row.hold_id,
    account: row.account,
    amount: int(row.amount),
    drawn: int(row.drawn),
    status: row.status,
    ref: row.ref ?? null,
    memo: row.memo ?? null,
    opened_at: iso(row.opened_at)!,
    expires_at: iso(row.expires_at)!,
    released_at: iso(row.released_at),
    release_reason: row.release_reason ?? null,
  };
}

/** An `expiresAt` as the write path takes it: the raw text (named in a refusal) and the instant, null when it is not one. */
function expiry(value: string): { expires_raw: string; expires_at: string | null } {
  const at = new Date(value);
  return { expires_raw: value, expires_at: Number.isNaN(at.getTime()) ? null : at.toISOString() };
}

/**
 * open-hold (§6.11): refused when available does not cover it, and when `holdId` is reused
 * with another account or amount (naming the existing terms); a reuse with the same terms
 * returns the existing reservation with `applied: false`.
 */
export async function openHold(ledger: Ledger, { body }: OperationRequest<'open-hold'>): Promise<OperationResult<'open-hold'>> {
  refuseMachinery(body.account, 'holder of a reservation');
  const outcome = await ledger.writes.apply({
    op: 'open-hold',
    hold_id: body.holdId,
    account: body.account,
    amount: body.amount,
    ...expiry(body.expiresAt),
    ref: body.ref,
    memo: body.memo,
  });
  return { ok: true, applied: outcome.applied, reservation: reservationOf(outcome.reservation), available: outcome.available };
}

/**
 * resize-hold (§6.12): a raise must fit in available; a reduction releases the difference; never
 * below drawn (422 `invalid_request`); a released hold stays released (422 `closed`). Resizing
 * to the current cap and window reports `applied: false` and changes nothing.
 */
export async function resizeHold(ledger: Ledger, { body }: OperationRequest<'resize-hold'>): Promise<OperationResult<'resize-hold'>> {
  const window = body.expiresAt === undefined ? {} : expiry(body.expiresAt);
  const outcome = await ledger.writes.apply({ op: 'resize-hold', hold_id: body.holdId, amount: body.amount, ...window });
  return { ok: true, applied: outcome.applied, reservation: reservationOf(outcome.reservation), available: outcome.available, delta: outcome.delta };
}

/** Checks one asked line's own rules (§6.13) and returns it as stored before clamping. Throws 422 `invalid_request`. */
function askedLine(line: OperationRequest<'draw'>['body']['lines'][number], index: number) {
  if (line.pass_through && !line.upstream_receipt) throw invalidRequest(`lines[${index}] is a pass-through line and must name its upstream_receipt`);
  const counted = line.count !== undefined || line.per_unit !== undefined;
  if (counted && (line.count === undefined || line.per_unit === undefined)) {
    throw invalidRequest(`lines[${index}] gives ${line.count === undefined ? 'per_unit without count' : 'count without per_unit'}; both are needed to recompute its amount`);
  }
  const per = counted ? (line.per ?? 1) : (line.per ?? null);
  if (counted) {
    const expected = Number((BigInt(line.count!) * BigInt(line.per_unit!)) / BigInt(per!));
    if (expected !== line.amount) {
      throw invalidRequest(`lines[${index}].amount ${line.amount} is not floor(count ${line.count} × per_unit ${line.per_unit} / per ${per}) = ${expected}`);
    }
  }
  return {
    meter: line.meter,
    asked: line.amount,
    unit: line.unit ?? null,
    count: line.count ?? null,
    per,
    per_unit: line.per_unit ?? null,
    pass_through: line.pass_through ?? false,
    upstream_receipt: line.upstream_receipt ?? null,
  };
}

/** A stored draw line as answered (§6.13). */
function lineOf(row: Record<string, any>): DrawLine {
  return {
    meter: row.meter,
    amount: int(row.amount),
    unit: row.unit ?? null,
    count: row.count === null ? null : int(row.count),
    per: row.per === null ? null : int(row.per),
    per_unit: row.per_unit === null ? null : int(row.per_unit),
    pass_through: row.pass_through,
    upstream_receipt: row.upstream_receipt ?? null,
    capped: row.capped,
  };
}

/**
 * draw (§6.13): lines taken in order and clamped at the cap; a clamped line records what was
 * billed and is marked capped; a line with nothing left is kept at zero, capped. One settlement
 * from caller to owner with no margin. A replay answers the stored lines and billed figure with
 * `applied: false`, `refused` computed against what the replay asked. Refusals: 404
 * `no_such_object` (hold), 422 `invalid_request` (caller does not own the hold, line rules),
 * 422 `closed` (released or expired hold).
 */
export async function draw(ledger: Ledger, { body }: OperationRequest<'draw'>): Promise<OperationResult<'draw'>> {
  const asked = body.lines.map(askedLine);
  const askedTotal = asked.reduce((sum, l) => sum + l.asked, 0);
  refuseMachinery(body.owner, 'owner');
  const terms = termsOf({ holdId: body.holdId, caller: body.caller, owner: body.owner, lines: body.lines });
  const outcome = await ledger.writes.apply({
    op: 'draw',
    txn_id: body.txnId,
    hold_id: body.holdId,
    caller: body.caller,
    owner: body.owner,
    terms,
    lines: asked,
    ref: body.ref,
    memo: body.memo,
  });
  const lines = (outcome.lines as Record<string, any>[]).map(lineOf);
  if (outcome.existing) {
    const existing = storedTransaction(outcome.existing);
    checkReplay(existing, 'draw', terms);
    return { ok: true, applied: false, state: 'settled', billed: existing.amount, refused: askedTotal - existing.amount, remaining: outcome.remaining, exhausted: outcome.remaining === 0, lines };
  }
  return { ok: true, applied: true, state: 'settled', billed: outcome.billed, refused: askedTotal - outcome.billed, remaining: outcome.remaining, exhausted: outcome.remaining === 0, lines };
}

/**
 * release-hold (§6.14): returns only what was not drawn; one-way and idempotent: a second
 * release (or a release after expiry) answers `applied: false` and `released: 0`. Posts nothing.
 */
export async function releaseHold(ledger: Ledger, { body }: OperationRequest<'release-hold'>): Promise<OperationResult<'release-hold'>> {
  const outcome = await ledger.writes.apply({ op: 'release-hold', hold_id: body.holdId, reason: body.reason });
  return { ok: true, applied: outcome.applied, released: outcome.released, reservation: reservationOf(outcome.reservation) };
}

/** The reservation records of one account, oldest first, expiry applied (§6.5). */
export async function reservationsOf(trx: Knex.Transaction, account: string, onlyOpen: boolean): Promise<Reservation[]> {
  const query = trx('clearing_holds').where({ account }).orderBy([{ column: 'opened_at' }, { column: 'hold_id' }]);
  if (onlyOpen) query.andWhere({ status: 'open' });
  return (await query).map(reservationOf);
}

/** list-reservations (§6.5): the account's figures and every reservation record, expiry applied first. */
export async function listReservations(ledger: Ledger, { params }: OperationRequest<'list-reservations'>): Promise<OperationResult<'list-reservations'>> {
  return inTransaction(ledger.db, async (trx) => {
    await expireHolds(trx, params.account);
    const figures = await readFigures(transactionRunner(trx), params.account);
    return { ...figures, reservations: await reservationsOf(trx, params.account, false) };
  });
}

/** read-reservation (§6.6): the record plus its draws (one per stored line), oldest first. 404 `no_such_object`. */
export async function readReservation(ledger: Ledger, { params }: OperationRequest<'read-reservation'>): Promise<OperationResult<'read-reservation'>> {
  return inTransaction(ledger.db, async (trx) => {
    const known = await trx('clearing_holds').where({ hold_id: params.holdId }).first('account');
    if (!known) throw noSuchObject(`there is no reservation ${params.holdId}`);
    await expireHolds(trx, known.account);
    const hold = await trx('clearing_holds').where({ hold_id: params.holdId }).first();
    const rows = await trx('clearing_draw_lines as l')
      .join('clearing_transactions as t', 't.txn_id', 'l.txn_id')
      .where('l.hold_id', params.holdId)
      .orderBy([{ column: 't.created_at' }, { column: 'l.txn_id' }, { column: 'l.seq' }])
      .select('l.*', 't.created_at');
    return {
      ...reservationOf(hold),
      draws: rows.map((row) => ({ hold_id: row.hold_id, txn_id: row.txn_id, ts: iso(row.created_at)!, ...lineOf(row) })),
    };
  });
}
