/**
 * The shapes of the contract's answers, each as a function listing what is wrong with a value
 * (an empty list means the shape holds). Used by targeted checks and by run-wide scans alike.
 */
import { OPERATIONS } from './contract.ts';
import { asObject, isInt, type Json } from './expect.ts';

/** `\`field\` must be <what>` for each of `fields` whose value in `r` fails `ok`. */
function fieldProblems(r: Json, fields: readonly string[], ok: (value: unknown) => boolean, what: string): string[] {
  return fields.filter((field) => !ok(r[field])).map((field) => `\`${field}\` must be ${what}`);
}

/** Whether `value` is a string. */
function isString(value: unknown): boolean {
  return typeof value === 'string';
}

/** `ok`, or absent, or null: the test of an optional field. */
function orAbsent(ok: (value: unknown) => boolean): (value: unknown) => boolean {
  return (value) => value === undefined || value === null || ok(value);
}

/** Problems of a capability document's required and optional fields (§5, §11). */
export function capabilityProblems(doc: Json): string[] {
  const problems: string[] = [];
  const need = (ok: boolean, text: string): void => {
    if (!ok) problems.push(text);
  };
  need(typeof doc.contract === 'string' && doc.contract !== '', '`contract` must be a non-empty string');
  need(doc.implementation === undefined || typeof doc.implementation === 'string', '`implementation`, when present, must be a string');
  need(asObject(doc.unit) !== null, '`unit` must be an object');
  need(Array.isArray(doc.operations) && doc.operations.every((op) => typeof op === 'string'), '`operations` must be an array of strings');
  need(doc.finality === 'immediate' || doc.finality === 'deferred', '`finality` must be "immediate" or "deferred"');
  need(Array.isArray(doc.notifications) && doc.notifications.every((n) => n === 'poll' || n === 'callback'),
    '`notifications` must be an array of "poll" and "callback"');
  need(Array.isArray(doc.funding) && doc.funding.every((f) => typeof f === 'string'), '`funding` must be an array of strings (it MAY be empty)');
  need(typeof doc.payout === 'boolean', '`payout` must be a boolean');
  need(typeof doc.negative_balance === 'boolean', '`negative_balance` must be a boolean');
  if (doc.limits !== undefined && doc.limits !== null) {
    const limits = asObject(doc.limits);
    need(limits !== null && [limits.min_amount, limits.max_amount].every((v) => v === undefined || v === null || isInt(v)),
      '`limits` must be an object whose min_amount and max_amount are integers or null');
  }
  need(doc.pending_max_seconds === undefined || doc.pending_max_seconds === null || isInt(doc.pending_max_seconds),
    '`pending_max_seconds`, when present, must be an integer or null');
  return problems;
}

/** Problems of a unit declaration (§11). */
export function unitProblems(unit: unknown): string[] {
  const u = asObject(unit);
  if (u === null) return ['`unit` must be an object'];
  const problems: string[] = [];
  if (typeof u.code !== 'string' || !/^[A-Z]{3}$/.test(u.code)) problems.push('`unit.code` must have the three-letter ISO 4217 shape');
  if (!isInt(u.scale) || u.scale < 0) problems.push('`unit.scale` must be a non-negative integer');
  if (u.display !== undefined && typeof u.display !== 'string') problems.push('`unit.display`, when present, must be a string');
  if (u.peg !== undefined && u.peg !== null && asObject(u.peg) === null) problems.push('`unit.peg` must be null or an object');
  return problems;
}

/** Problems of the names in `operations`: unknown names and duplicates (§5). */
export function operationNameProblems(operations: readonly unknown[]): string[] {
  const known = new Set<unknown>(OPERATIONS);
  const problems = operations.filter((op) => !known.has(op)).map((op) => `${JSON.stringify(op)} is not an operation of §6`);
  if (new Set(operations).size !== operations.length) problems.push('`operations` lists a name twice');
  return problems;
}

/** Problems of balance figures on a balance-bearing read (§6.2): integers, `account` echoed. */
export function figureProblems(body: Json, account: string): string[] {
  const problems: string[] = [];
  if (body.account !== account) problems.push(`\`account\` must echo ${JSON.stringify(account)}`);
  problems.push(...fieldProblems(body, ['balance', 'available', 'reserved'], isInt, 'an integer'));
  if (body.pending !== undefined && !isInt(body.pending)) problems.push('`pending`, when present, must be an integer');
  return problems;
}

/** Problems of a reservation record (§6.5): the fields every record carries, with their types. */
export function reservationProblems(record: unknown): string[] {
  const r = asObject(record);
  if (r === null) return ['a reservation record must be an object'];
  const problems = [
    ...fieldProblems(r, ['hold_id', 'account', 'opened_at', 'expires_at'], isString, 'a string'),
    ...fieldProblems(r, ['amount', 'drawn'], isInt, 'an integer'),
  ];
  if (r.status !== 'open' && r.status !== 'released') problems.push('`status` must be "open" or "released"');
  problems.push(...fieldProblems(r, ['ref', 'memo', 'released_at', 'release_reason'], orAbsent(isString), 'a string or null'));
  return problems;
}

/** Problems of a stored draw record (§6.6); `per` MUST be written out whenever `count` is. */
export function drawRecordProblems(record: unknown): string[] {
  const r = asObject(record);
  if (r === null) return ['a draw record must be an object'];
  const problems = fieldProblems(r, ['hold_id', 'txn_id', 'ts', 'meter'], isString, 'a string');
  if (!isInt(r.amount) || r.amount < 0) problems.push('`amount` must be a non-negative integer');
  if (typeof r.capped !== 'boolean') problems.push('`capped` must be a boolean');
  problems.push(...fieldProblems(r, ['count', 'per', 'per_unit'], orAbsent(isInt), 'an integer or null'));
  return problems;
}

/** Problems of a settlement record in a known state (§6.4). */
export function settlementProblems(record: Json, txnId: string): string[] {
  const problems: string[] = [];
  if (record.txn_id !== txnId) problems.push(`\`txn_id\` must echo ${JSON.stringify(txnId)}`);
  if (!['settled', 'pending', 'failed'].includes(record.state as string)) problems.push('`state` must be settled, pending or failed');
  if (typeof record.account !== 'string') problems.push('`account` must be a string');
  if (!isInt(record.amount)) problems.push('`amount` must be an integer');
  if (!('reversed_by' in record) || (record.reversed_by !== null && typeof record.reversed_by !== 'string')) {
    problems.push('`reversed_by` is REQUIRED: a string or null');
  }
  problems.push(...legProblems(record.legs));
  return problems;
}

/** Problems of a settlement's legs: an array of {account, integer delta, kind} (§6.4). */
export function legProblems(legs: unknown): string[] {
  if (!Array.isArray(legs)) return ['`legs` must be an array'];
  const bad = legs.filter((leg) => {
    const l = asObject(leg);
    return l === null || typeof l.account !== 'string' || !isInt(l.delta) || typeof l.kind !== 'string';
  });
  return bad.length === 0 ? [] : [`every leg must carry account (string), delta (integer) and kind (string); ${bad.length} do not`];
}

/** The sum of the deltas of `legs` for `account`, or of all legs when `account` is omitted. */
export function legSum(legs: unknown, account?: string): number {
  if (!Array.isArray(legs)) return Number.NaN;
  return legs.reduce((sum: number, leg) => {
    const l = asObject(leg);
    return l !== null && (account === undefined || l.account === account) ? sum + Number(l.delta) : sum;
  }, 0);
}

/** Problems of an error body (§7): JSON with a non-empty `error` sentence and a string `code`. */
export function errorBodyProblems(body: unknown): string[] {
  const b = asObject(body);
  if (b === null) return ['the body must be a JSON object'];
  const problems: string[] = [];
  if (typeof b.error !== 'string' || b.error.trim() === '') problems.push('`error` must be a non-empty sentence');
  if (typeof b.code !== 'string' || b.code === '') problems.push('`code` must be a token (§7.2)');
  return problems;
}

