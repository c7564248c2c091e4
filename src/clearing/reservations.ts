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
import { HttpError, invalidRequest, noSuchObject } from '../http/errors.ts';
import {
  checkReplay,
  expireHolds,
  findTransaction,
  inTransaction,
  lockAccounts,
  postEntry,
  readFigures,
  refuseMachinery,
  termsOf,
  type Figures,
} from './ledger.ts';

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

/**
 * Locks a hold for a write, after locking its account and applying expiry (§6.15).
 * Throws 404 `no_such_object` when there is no such hold.
 */
async function lockHold(trx: Knex.Transaction, holdId: string, alsoLock: string[] = []): Promise<Record<string, any>> {
  const known = await trx('clearing_holds').where({ hold_id: holdId }).first('account');
  if (!known) throw noSuchObject(`there is no reservation ${holdId}`);
  await lockAccounts(trx, [known.account, ...alsoLock]);
  await expireHolds(trx, known.account);
  return trx('clearing_holds').where({ hold_id: holdId }).forUpdate().first();
}

/** 422 `insufficient_funds` stating the four numbers §6.11 names. */
function insufficient(asked: number, figures: Figures, what: string): HttpError {
  return new HttpError(
    422,
    'insufficient_funds',
    `${what} of ${asked} does not fit: ${figures.available} available on ${figures.account} (balance ${figures.balance}, reserved ${figures.reserved})`,
    { asked, available: figures.available, balance: figures.balance, reserved: figures.reserved },
  );
}

/** Parses an ISO 8601 instant that must lie in the future. Throws 422 `invalid_request`. */
function futureInstant(value: string, field: string): Date {
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) throw invalidRequest(`${field} ${value} is not an ISO 8601 instant`);
  if (at.getTime() <= Date.now()) throw invalidRequest(`${field} ${value} is not in the future; a hold needs an open window`);
  return at;
}

/**
 * open-hold (§6.11): refused when available does not cover it, and when `holdId` is reused
 * with another account or amount (naming the existing terms); a reuse with the same terms
 * returns the existing reservation with `applied: false`.
 */
export async function openHold(db: Knex, { body }: OperationRequest<'open-hold'>): Promise<OperationResult<'open-hold'>> {
  refuseMachinery(body.account, 'holder of a reservation');
  return inTransaction(db, async (trx) => {
    await lockAccounts(trx, [body.account]);
    const existing = await trx('clearing_holds').where({ hold_id: body.holdId }).first();
    if (existing) {
      if (existing.account !== body.account || int(existing.amount) !== body.amount) {
        throw new HttpError(
          422,
          'terms_conflict',
          `reservation ${body.holdId} already exists for ${existing.account} with amount ${int(existing.amount)}`,
          { existing: { account: existing.account, amount: int(existing.amount) } },
        );
      }
      const figures = await readFigures(trx, body.account);
      const current = await trx('clearing_holds').where({ hold_id: body.holdId }).first();
      return { ok: true, applied: false, reservation: reservationOf(current), available: figures.available };
    }
    const expiresAt = futureInstant(body.expiresAt, 'expiresAt');
    const figures = await readFigures(trx, body.account);
    if (body.amount > figures.available) throw insufficient(body.amount, figures, 'a hold');
    const [row] = await trx('clearing_holds')
      .insert({ hold_id: body.holdId, account: body.account, amount: body.amount, status: 'open', expires_at: expiresAt, ref: body.ref, memo: body.memo })
      .returning('*');
    return { ok: true, applied: true, reservation: reservationOf(row), available: figures.available - body.amount };
  });
}

/**
 * resize-hold (§6.12): a raise must fit in available; a reduction releases the difference; never
 * below drawn (422 `invalid_request`); a released hold stays released (422 `closed`). Resizing
 * to the current cap and window reports `applied: false` and changes nothing.
 */
export async function resizeHold(db: Knex, { body }: OperationRequest<'resize-hold'>): Promise<OperationResult<'resize-hold'>> {
  return inTransaction(db, async (trx) => {
    const hold = await lockHold(trx, body.holdId);
    if (hold.status !== 'open') {
      throw new HttpError(422, 'closed', `reservation ${body.holdId} was released (${hold.release_reason ?? 'released'}); open a new hold instead`);
    }
    const amount = int(hold.amount);
    const drawn = int(hold.drawn);
    const expiresAt = body.expiresAt === undefined ? new Date(hold.expires_at) : futureInstant(body.expiresAt, 'expiresAt');
    const figures = await readFigures(trx, hold.account);
    if (body.amount === amount && expiresAt.getTime() === new Date(hold.expires_at).getTime()) {
      return { ok: true, applied: false, reservation: reservationOf(hold), available: figures.available, delta: 0 };
    }
    if (body.amount < drawn) throw invalidRequest(`reservation ${body.holdId} has ${drawn} drawn; its cap cannot fall to ${body.amount}`);
    const delta = body.amount - amount;
    // Only a raise is checked: a reduction or a new window must pass even when available is negative (invariant 11).
    if (delta > 0 && delta > figures.available) throw insufficient(delta, figures, `a raise of reservation ${body.holdId}`);
    const [row] = await trx('clearing_holds').where({ hold_id: body.holdId }).update({ amount: body.amount, expires_at: expiresAt }).returning('*');
    return { ok: true, applied: true, reservation: reservationOf(row), available: figures.available - delta, delta };
  });
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
export async function draw(db: Knex, { body }: OperationRequest<'draw'>): Promise<OperationResult<'draw'>> {
  const asked = body.lines.map(askedLine);
  const askedTotal = asked.reduce((sum, l) => sum + l.asked, 0);
  refuseMachinery(body.owner, 'owner');
  const terms = termsOf({ holdId: body.holdId, caller: body.caller, owner: body.owner, lines: body.lines });
  return inTransaction(db, async (trx) => {
    const hold = await lockHold(trx, body.holdId, [body.owner]);
    const existing = await findTransaction(trx, body.txnId);
    if (existing) {
      checkReplay(existing, 'draw', terms);
      const lines = (await trx('clearing_draw_lines').where({ txn_id: body.txnId }).orderBy('seq')).map(lineOf);
      const remaining = int(hold.amount) - int(hold.drawn);
      return { ok: true, applied: false, state: 'settled', billed: existing.amount, refused: askedTotal - existing.amount, remaining, exhausted: remaining === 0, lines };
    }
    if (hold.account !== body.caller) throw invalidRequest(`reservation ${body.holdId} belongs to ${hold.account}, not to the caller ${body.caller}`);
    if (hold.status !== 'open') throw new HttpError(422, 'closed', `reservation ${body.holdId} was released (${hold.release_reason ?? 'released'}); it admits no further draws`);
    let left = int(hold.amount) - int(hold.drawn);
    const lines = asked.map((line) => {
      const amount = Math.min(line.asked, left);
      left -= amount;
      return { ...line, amount, capped: amount < line.asked };
    });
    const billed = lines.reduce((sum, l) => sum + l.amount, 0);
    await postEntry(
      trx,
      { txn_id: body.txnId, door: 'draw', account: body.caller, amount: billed, terms, hold_id: body.holdId, ref: body.ref, memo: body.memo },
      [
        { account: body.caller, delta: -billed, kind: 'charge' },
        { account: body.owner, delta: billed, kind: 'earn' },
      ],
    );
    await trx('clearing_draw_lines').insert(lines.map((line, seq) => ({ ...line, seq, txn_id: body.txnId, hold_id: body.holdId })));
    await trx('clearing_holds').where({ hold_id: body.holdId }).increment('drawn', billed);
    return {
      ok: true,
      applied: true,
      state: 'settled',
      billed,
      refused: askedTotal - billed,
      remaining: left,
      exhausted: left === 0,
      lines: lines.map(lineOf),
    };
  });
}

/**
 * release-hold (§6.14): returns only what was not drawn; one-way and idempotent: a second
 * release (or a release after expiry) answers `applied: false` and `released: 0`. Posts nothing.
 */
export async function releaseHold(db: Knex, { body }: OperationRequest<'release-hold'>): Promise<OperationResult<'release-hold'>> {
  return inTransaction(db, async (trx) => {
    const hold = await lockHold(trx, body.holdId);
    if (hold.status !== 'open') return { ok: true, applied: false, released: 0, reservation: reservationOf(hold) };
    const [row] = await trx('clearing_holds')
      .where({ hold_id: body.holdId })
      .update({ status: 'released', released_at: trx.raw('clock_timestamp()'), release_reason: body.reason ?? 'released by the caller' })
      .returning('*');
    return { ok: true, applied: true, released: int(hold.amount) - int(hold.drawn), reservation: reservationOf(row) };
  });
}

/** The reservation records of one account, oldest first, expiry applied (§6.5). */
export async function reservationsOf(trx: Knex.Transaction, account: string, onlyOpen: boolean): Promise<Reservation[]> {
  const query = trx('clearing_holds').where({ account }).orderBy([{ column: 'opened_at' }, { column: 'hold_id' }]);
  if (onlyOpen) query.andWhere({ status: 'open' });
  return (await query).map(reservationOf);
}

/** list-reservations (§6.5): the account's figures and every reservation record, expiry applied first. */
export async function listReservations(db: Knex, { params }: OperationRequest<'list-reservations'>): Promise<OperationResult<'list-reservations'>> {
  return inTransaction(db, async (trx) => {
    await expireHolds(trx, params.account);
    const figures = await readFigures(trx, params.account);
    return { ...figures, reservations: await reservationsOf(trx, params.account, false) };
  });
}

/** read-reservation (§6.6): the record plus its draws (one per stored line), oldest first. 404 `no_such_object`. */
export async function readReservation(db: Knex, { params }: OperationRequest<'read-reservation'>): Promise<OperationResult<'read-reservation'>> {
  return inTransaction(db, async (trx) => {
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
