/**
 * The refusals the write path's database functions raise (`src/clearing/sql/`),
 * as clearing-contract §7 errors. A function raises a SQLSTATE of class `H1` with a JSON detail
 * naming the figures; this table turns each into the §7.2 code and the §7.4 sentence, so the
 * sentences live in one place and read the same on every door.
 */
import { HttpError, invalidRequest, noSuchObject } from '../http/errors.ts';

type Detail = Record<string, any>;

/** 422 `insufficient_funds` stating the four numbers §6.11 names. */
function insufficient(d: Detail): HttpError {
  return new HttpError(
    422,
    'insufficient_funds',
    `${d.what} of ${d.asked} does not fit: ${d.available} available on ${d.account} (balance ${d.balance}, reserved ${d.reserved})`,
    { asked: d.asked, available: d.available, balance: d.balance, reserved: d.reserved },
  );
}

/** Each SQLSTATE of the write path and the §7 refusal it stands for. */
const refusals: Record<string, (d: Detail) => HttpError> = {
  H1404: (d) => noSuchObject(`there is no account ${d.account}`),
  H1405: (d) => noSuchObject(`there is no reservation ${d.hold_id}`),
  H1406: (d) => noSuchObject(`there is no transaction ${d.txn_id} to reverse`),
  H1421: (d) =>
    new HttpError(422, 'not_reversible', `${d.txn_id} is itself a correction (the reversal of ${d.reverses}) and cannot be reversed; if the charge should stand, charge it again under a new transaction id`),
  H1422: (d) =>
    new HttpError(422, 'not_reversible', `${d.txn_id} is itself a correction (an adjustment) and cannot be reversed; if it was wrong, adjust again by the opposite amount under a new transaction id`),
  H1423: (d) => new HttpError(422, 'already_reversed', `${d.txn_id} was already reversed by ${d.reversed_by}`, { reversed_by: d.reversed_by }),
  H1430: insufficient,
  H1440: (d) => new HttpError(422, 'closed', `reservation ${d.hold_id} was released (${d.reason ?? 'released'}); open a new hold instead`),
  H1441: (d) => new HttpError(422, 'closed', `reservation ${d.hold_id} was released (${d.reason ?? 'released'}); it admits no further draws`),
  H1450: (d) => invalidRequest(`reservation ${d.hold_id} has ${d.drawn} drawn; its cap cannot fall to ${d.amount}`),
  H1451: (d) => invalidRequest(`reservation ${d.hold_id} belongs to ${d.account}, not to the caller ${d.caller}`),
  H1452: (d) =>
    new HttpError(422, 'terms_conflict', `reservation ${d.hold_id} already exists for ${d.account} with amount ${d.amount}`, {
      existing: { account: d.account, amount: d.amount },
    }),
  H1460: (d) =>
    invalidRequest(
      `a posting of ${d.delta} on ${d.account} would take its balance from ${d.balance} to ${d.balance + d.delta}, beyond the bound of ±${d.bound} micro-units that every account keeps (issue 8 item 1.6); nothing was changed`,
      { bound: d.bound },
    ),
  H1461: (d) =>
    invalidRequest(d.instant ? `expiresAt ${d.value} is not in the future; a hold needs an open window` : `expiresAt ${d.value} is not an ISO 8601 instant`),
};

/** The §7 refusal for a write-path SQLSTATE and its JSON detail, or null when the state is not one of ours (a bug: answered 500). */
export function refusalOf(sqlstate: string, detail: string | null): HttpError | null {
  const refusal = refusals[sqlstate];
  return refusal ? refusal(JSON.parse(detail ?? '{}')) : null;
}
