/**
 * The linearizability check of one step: the operations of a step were in flight together, so
 * the binding may have applied them in any order. A step passes when some order of its
 * operations, from some state the history may be in, explains every answer (each answer is one
 * the model allows at that point). The states every such order leaves are the candidates the
 * next step starts from. An operation hit by a fault (its answer lost and retried, or delivered
 * twice) may answer as the first application or as its replay (§9), and takes effect once.
 */
import { isKnownCode } from '../contract.ts';
import { asObject, isInt } from '../expect.ts';
import type { Reply } from '../wire.ts';
import { outcomes, stateKey, type Expected, type ModelState, type PropertyId } from './model.ts';
import { describeOp, type Op } from './ops.ts';

/** Most candidate states carried between steps; beyond it the run stops as inconclusive, never failed. */
export const MAX_CANDIDATES = 256;

/** One operation of a step as it ran: what was sent, the final answer, whether a fault touched it. */
export interface Sent {
  readonly op: Op;
  readonly reply: Reply;
  /** The request was retried after a lost answer or delivered twice: either answer form is allowed. */
  readonly faulted: boolean;
}

/** Why no order explains a step: the operation whose answer nothing allows, and what was allowed. */
export interface Mismatch {
  readonly property: PropertyId;
  readonly message: string;
  readonly expected: string;
  readonly got: string;
  readonly sent: Sent;
}

/** Whether `reply` is an answer `expected` describes; null when it is, else what differs. */
export function differs(expected: Expected, reply: Reply): string | null {
  const body = asObject(reply.body);
  if (reply.status === null) return 'no answer';
  if (expected.kind === 'refused') {
    if (!expected.status.includes(reply.status)) return `status ${reply.status}`;
    const code = body?.code;
    if (typeof code !== 'string') return 'no code';
    if (!expected.codes.includes(code) && !(expected.own && !isKnownCode(code))) return `code ${code}`;
    return null;
  }
  if (reply.status !== (expected.kind === 'read' ? expected.status : 200)) return `status ${reply.status}`;
  if (body === null) return 'a body that is not a JSON object';
  if (expected.kind === 'accepted') {
    if (expected.applied !== 'either' && body.applied !== expected.applied) return `applied ${JSON.stringify(body.applied)}`;
    if (body.state !== undefined && body.state !== 'settled') return `state ${JSON.stringify(body.state)}`;
  }
  for (const [field, value] of Object.entries(expected.fields)) {
    const got = field === 'pending' ? (body.pending ?? 0) : body[field];
    if (got !== value && !(value === null && got === undefined)) return `${field} ${JSON.stringify(got)}`;
  }
  if (expected.kind === 'read' && expected.legsSumZero === true && Array.isArray(body.legs)) {
    const deltas = body.legs.map((leg) => asObject(leg)?.delta);
    if (!deltas.every(isInt)) return 'legs with deltas that are not integers';
    const sum = (deltas as number[]).reduce((a, b) => a + b, 0);
    if (sum !== 0) return `legs summing to ${sum}`;
  }
  return null;
}

/** An answer form in words, for the report. */
export function describeExpected(expected: Expected): string {
  if (expected.kind === 'refused') return `${expected.status.join('/')} ${expected.codes.join('|')}${expected.own ? '|own code' : ''}`;
  const fields = Object.entries(expected.fields).map(([k, v]) => `${k} ${JSON.stringify(v)}`).join(', ');
  if (expected.kind === 'read') return `${expected.status}${fields === '' ? '' : ` with ${fields}`}`;
  return `200 applied ${expected.applied}${fields === '' ? '' : `, ${fields}`}`;
}

/**
 * Every state some order of `step` leads to from some state of `starts`, or the mismatch that
 * got furthest when none does. Each operation is two events, its effect and its answer (bits 2i
 * and 2i+1 of the mask): together for a request no fault touched; for a faulted one the effect
 * may come first, silently (an attempt whose answer was lost), and the final answer later, from
 * whatever state the others left by then, without a second effect. Memoised on (events done,
 * state), so a step of n operations costs at most 4^n nodes per distinct state.
 */
export function linearize(starts: readonly ModelState[], step: readonly Sent[], prefix: string): { states: ModelState[]; mismatch: Mismatch | null } {
  const full = 4 ** step.length - 1;
  const seen = new Set<string>();
  const ends = new Map<string, ModelState>();
  // The op whose answer no state and no order explains is the culprit; failing that, the
  // mismatch of the order that got furthest.
  const matchedSomewhere = new Set<number>();
  const misfits = new Map<number, Mismatch>();
  const best: { depth: number; mismatch: Mismatch | null } = { depth: -1, mismatch: null };
  const visit = (state: ModelState, done: number, depth: number): void => {
    const here = stateKey(state);
    const key = `${done}:${here}`;
    if (seen.has(key)) return;
    seen.add(key);
    if (done === full) {
      ends.set(here, state);
      return;
    }
    for (let i = 0; i < step.length; i += 1) {
      const effect = 1 << (2 * i);
      const answer = 2 << (2 * i);
      if ((done & answer) !== 0) continue;
      const sent = step[i] as Sent;
      const all = outcomes(state, sent.op, prefix);
      // The answer now: with the effect (if not yet taken), or after it, changing nothing more.
      const applied = (done & effect) !== 0;
      const allowed = applied ? all.filter((o) => stateKey(o.next) === here) : all;
      const matching = allowed.filter((o) => differs(o.expected, sent.reply) === null);
      if (matching.length > 0) {
        matchedSomewhere.add(i);
      } else {
        const first = all[0];
        const mismatch: Mismatch = {
          property: first?.property ?? 'explore.answers',
          message: `${describeOp(sent.op, prefix)}: no order of the ${step.length} request(s) in flight together explains its answer`,
          expected: all.map((o) => describeExpected(o.expected)).join(' or '),
          got: `${sent.reply.status ?? 'no answer'} ${sent.reply.exchange.response_body.slice(0, 300)}`,
          sent,
        };
        if (!misfits.has(i)) misfits.set(i, mismatch);
        if (depth >= best.depth) Object.assign(best, { depth, mismatch });
      }
      for (const o of matching) visit(o.next, done | effect | answer, depth + 1);
      // A faulted request's effect alone: an earlier attempt applied, its answer lost.
      if (sent.faulted && !applied) {
        for (const o of all) if (stateKey(o.next) !== here) visit(o.next, done | effect, depth + 1);
      }
    }
  };
  for (const start of starts) visit(start, 0, 0);
  if (ends.size > 0) return { states: [...ends.values()], mismatch: null };
  const culprit = [...misfits.entries()].find(([i]) => !matchedSomewhere.has(i));
  return { states: [], mismatch: culprit?.[1] ?? best.mismatch };
}
