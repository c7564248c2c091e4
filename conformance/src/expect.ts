/**
 * How a check states its verdict. A check throws CheckFailed (fail), Inconclusive (warn) or
 * NotApplicable (skip); the assertion helpers here throw CheckFailed with the evidence attached.
 */
import { isKnownCode, type ErrorCode } from './contract.ts';
import type { Exchange } from './http.ts';
import type { Reply } from './wire.ts';

/** What a check says when it fails: what the contract expected, what came back, and the exchanges that show it. */
export interface Verdict {
  readonly message: string;
  readonly expected: string;
  readonly got: string;
  /** The requests and answers that show the failure; each reproduces with `curlFor`. */
  readonly exchanges: readonly Exchange[];
}

/** The binding broke the rule. Carries what was expected, what came back and the exchanges. */
export class CheckFailed extends Error {
  override name = 'CheckFailed';
  readonly verdict: Verdict;

  constructor(verdict: Verdict) {
    super(verdict.message);
    this.verdict = verdict;
  }
}

/** The check could not set up its case (e.g. no funds), so it proved nothing: a warning. */
export class Inconclusive extends Error {
  override name = 'Inconclusive';
}

/** The rule does not apply to this binding or this configuration: a skip. */
export class NotApplicable extends Error {
  override name = 'NotApplicable';
}

/** Evidence for a failure: a reply or a bare exchange. */
export type Evidence = Reply | Exchange;

/** A JSON object as received: nothing about its fields is trusted. */
export type Json = Record<string, unknown>;

/** Throws CheckFailed: `message` says what was checked, then what was expected and what came. */
export function fail(message: string, expected: string, got: string, ...evidence: Evidence[]): never {
  throw new CheckFailed({
    message,
    expected,
    got,
    exchanges: evidence.map((e) => ('exchange' in e ? e.exchange : e)),
  });
}

/** Throws CheckFailed unless `condition` holds. */
export function ensure(
  condition: boolean, message: string, expected: string, got: string, ...evidence: Evidence[]
): asserts condition {
  if (!condition) fail(message, expected, got, ...evidence);
}

/** The value as a JSON object, or null when it is not one. */
export function asObject(value: unknown): Json | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : null;
}

/** Whether `value` is a safe integer (amounts, invariant 7). */
export function isInt(value: unknown): value is number {
  return Number.isSafeInteger(value);
}

/** A short rendering of what came back: status and body. */
export function gotOf(reply: Reply): string {
  if (reply.status === null) return `no answer (${reply.exchange.transport_error})`;
  const body = reply.exchange.response_body;
  return `${reply.status} ${body.length > 300 ? `${body.slice(0, 300)}…` : body}`;
}

/** The reply's body, which must be a 200 answer with a JSON object (a read). */
export function answered(reply: Reply, what: string): Json {
  const body = asObject(reply.body);
  if (reply.status !== 200 || body === null) {
    fail(`${what}: the read did not answer`, '200 with a JSON object', gotOf(reply), reply);
  }
  return body;
}

/**
 * The reply's body, which must be an accepted value-moving or hold answer: 2xx, a JSON object,
 * `applied` a boolean and `ok` not false (§6, §7.4).
 */
export function accepted(reply: Reply, what: string): Json {
  const body = asObject(reply.body);
  if (reply.status === null || reply.status < 200 || reply.status > 299 || body === null) {
    fail(`${what} was not accepted`, '2xx with a JSON object carrying `applied`', gotOf(reply), reply);
  }
  ensure(body.ok !== false, `${what} answered ok:false`, 'an accepted answer (a refusal carries 4xx, §7.4)',
    gotOf(reply), reply);
  ensure(typeof body.applied === 'boolean', `${what}: \`applied\` missing`,
    '`applied`, a boolean, on every accepted value-moving answer (§6)', gotOf(reply), reply);
  return body;
}

/** Like `accepted`, and `applied` must equal `value` (true: it changed something; false: a replay, §9). */
export function applied(reply: Reply, what: string, value: boolean): Json {
  const body = accepted(reply, what);
  ensure(body.applied === value, `${what}: applied is ${String(body.applied)}`,
    `applied: ${value}${value ? '' : ' (a replay MUST be reported, §9)'}`, gotOf(reply), reply);
  return body;
}

/** The refusal a check expects: statuses allowed and codes allowed. */
export interface RefusalRule {
  readonly status: readonly number[];
  readonly codes: readonly ErrorCode[];
  /** Also accept a code outside §7.2 (a binding's own code for its own refusal, §7.2). */
  readonly ownCodes?: boolean;
  /** How a failure message states the expectation; by default the statuses and codes. */
  readonly label?: string;
}

/** The usual refusal of a malformed request: 422 invalid_request, or the binding's own code. */
export const INVALID: RefusalRule = { status: [422], codes: ['invalid_request'], ownCodes: true };

/**
 * A refusal for which the contract names no code (a draw on a released hold, a resize below
 * what was drawn): any 422, with a §7.2 code or the binding's own.
 */
export const REFUSED: RefusalRule = {
  status: [422],
  codes: ['invalid_request', 'insufficient_funds', 'terms_conflict', 'already_reversed', 'not_reversible', 'closed'],
  ownCodes: true,
  label: '422 with any code (the contract names none for this refusal)',
};

/** The reply must be a refusal matching `rule`; answers its body. */
export function refused(reply: Reply, what: string, rule: RefusalRule): Json {
  const expected = rule.label ?? `${rule.status.join(' or ')} with code ${rule.codes.join(' or ')}${rule.ownCodes ? ' (or a code of the binding\'s own)' : ''}`;
  const body = asObject(reply.body);
  if (reply.status === null || !rule.status.includes(reply.status)) {
    fail(`${what} was not refused as the contract requires`, expected, gotOf(reply), reply);
  }
  const code = body?.code;
  const codeOk = typeof code === 'string'
    && ((rule.codes as readonly string[]).includes(code) || (rule.ownCodes === true && !isKnownCode(code)));
  ensure(codeOk, `${what}: refused with the wrong code`, expected, gotOf(reply), reply);
  return body as Json;
}

/** Whether two JSON values are equal (objects compared key by key, in any order). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]));
  }
  const oa = asObject(a);
  const ob = asObject(b);
  if (oa === null || ob === null) return false;
  const keys = new Set([...Object.keys(oa), ...Object.keys(ob)]);
  return [...keys].every((key) => jsonEqual(oa[key], ob[key]));
}

/** Throws CheckFailed unless `actual` equals `expected` as JSON. */
export function ensureEqual(actual: unknown, expected: unknown, what: string, ...evidence: Evidence[]): void {
  ensure(jsonEqual(actual, expected), what, JSON.stringify(expected), JSON.stringify(actual), ...evidence);
}
