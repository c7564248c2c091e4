/**
 * A small in-memory clearing binding for the kit's own tests: a plain node:http server that
 * implements the contract faithfully (immediate finality, loopback gate, every operation by
 * default) and can be told which operations to offer, whether to declare periods, and one named
 * fault to inject. Each fault breaks exactly one rule, so a test can prove the kit notices.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OPERATIONS, type OperationName } from '../src/contract.ts';

/** The fixtures the fake holds; a test's config names the same ones. */
export const FAKE_FIXTURES = {
  agent_key: 'conf-agent',
  unknown_agent_key: 'conf-nobody',
  accounts: { payer: 'conf-payer', payee: 'conf-payee' },
} as const;

/** The four operations every binding MUST offer (§5). */
export const REQUIRED_ONLY: readonly OperationName[] = ['resolve-account', 'read-balance', 'read-settlement', 'settle'];

/** Every fault the fake can inject; each names the rule it breaks. */
export const FAULTS = [
  'caps-missing-field', 'caps-bad-unit', 'caps-no-poll', 'caps-omits-settle', 'caps-unknown-operation',
  'caps-credit-without-funding', 'listed-op-not-served', 'unlisted-op-no-code', 'caps-period-null',
  'no-health', 'health-gated', 'no-forwarded-gate', 'path-not-decoded', 'unknown-route-not-offered', 'bad-json-500',
  'resolve-wrong-account', 'resolve-unknown-404', 'resolve-slow', 'balance-no-reserved', 'unknown-account-not-offered',
  'available-not-balance', 'summary-no-totals', 'summary-zero-totals',
  'unknown-settlement-404', 'settle-charges-rate', 'settle-refuses-equal-rate', 'settle-refuses-insufficient',
  'settle-accepts-retail-below-rate', 'settlement-amount-is-rate', 'legs-unbalanced', 'credit-double', 'credit-accepts-zero',
  'adjust-ignores-sign', 'adjust-accepts-zero', 'reverse-restores-rate', 'reverse-no-reversed-by', 'reverse-twice',
  'reverse-refusal-unnamed', 'reverse-of-reverse', 'reverse-of-adjust', 'reverse-without-reason', 'reverse-draw-keeps-cap',
  'reverse-draw-reopens-released', 'reverse-draw-released-drawn', 'reverse-draw-replay-restores-cap', 'resize-ignores-window',
  'hold-debits-balance', 'hold-record-wrong-amount', 'hold-overcommits', 'hold-refusal-vague', 'hold-accepts-bad-expiry',
  'hold-conflict-unnamed', 'resize-raise-free', 'resize-overcommits', 'resize-reduce-keeps-reserved', 'resize-below-drawn',
  'resize-revives-released', 'draw-remaining-ignores-billed', 'draw-takes-margin', 'draw-exceeds-cap', 'draw-capped-unmarked',
  'draw-drops-zero-lines', 'draw-record-drops-count', 'draw-per-null', 'draw-pass-through-unchecked', 'draw-any-caller',
  'draw-accepts-empty-lines', 'release-returns-full-cap', 'draw-after-release', 'list-omits-holds',
  'read-reservation-newest-first', 'unknown-hold-not-offered', 'expiry-never', 'expiry-unswept-draw', 'expiry-list-stale',
  'balance-read-accumulates', 'credit-replay-applies', 'settle-replay-applies-twice', 'settle-replay-other-terms-applies',
  'reverse-replay-amount-zero', 'adjust-replay-applies', 'hold-replay-reserves-again', 'hold-reuse-keeps-first',
  'resize-same-target-applies', 'draw-replay-applies', 'release-twice', 'shared-txn-namespace',
  'draw-race', 'hold-race', 'settle-race',
  'reserved-counts-drawn', 'credit-legs-unbalanced', 'reverse-edits-original', 'totals-keep-reversed-spend', 'fractional-amounts',
  'immediate-reports-pending', 'deferred-omits-state', 'settle-record-pending', 'refusal-carries-state', 'hold-pending',
  'balance-no-period', 'period-leak', 'reservation-no-opened-in', 'settle-response-no-period',
  'no-code-on-errors', 'invalid-request-400', 'ok-false-refusals', 'generic-error-messages', 'funding-no-effect',
] as const;

/**
 * Faults only explore is meant to find: no scripted request reaches them. Each is a real race or
 * drift, not a scripted window: `racy-holds` checks available, yields, then reserves (two holds in
 * flight together both pass); `double-apply` checks for a replay, yields, then applies (two copies
 * of one settle together both apply); `drift` charges the payer one unit more on a settle whose
 * retail is a multiple of 7 units; `retry-refused` refuses a settle's replay that comes within
 * 250 ms of the first, as a retry after a lost answer does.
 */
export const EXPLORE_FAULTS = ['racy-holds', 'double-apply', 'drift', 'retry-refused'] as const;

/** One fault the fake can inject. */
export type Fault = (typeof FAULTS)[number] | (typeof EXPLORE_FAULTS)[number];

/** How to start the fake. */
export interface FakeOptions {
  /** Operations offered (and listed); default all of §6. */
  readonly operations?: readonly OperationName[];
  /** Declare periods (§12): `period` on the capability document and on every figure. */
  readonly periods?: boolean;
  readonly finality?: 'immediate' | 'deferred';
  /** Units the payer holds at start (put there from the fake's mint). */
  readonly prefunded?: number;
  readonly fault?: Fault;
}

/** A running fake: its base URL and how to stop it. */
export interface FakeBinding {
  readonly url: string;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;
interface Answer { status: number; body: Json }
interface Leg { account: string; delta: number; kind: string }
type Kind = 'credit' | 'settle' | 'adjust' | 'reverse' | 'draw';

interface Txn {
  txnId: string;
  kind: Kind;
  account: string;
  amount: number;
  legs: Leg[];
  opened_at: string;
  reversed_by: string | null;
  reverses: string | null;
  holdId: string | null;
  /** The request's terms, to tell a replay from a conflict. */
  terms: string;
  /** What the first call answered, for a replay. */
  answer: Json;
}

interface DrawRecord {
  hold_id: string; txn_id: string; ts: string; meter: string; amount: number; unit: string | null; count: number | null;
  per: number | null; per_unit: number | null; pass_through: boolean; upstream_receipt: string | null; capped: boolean;
}

interface Hold {
  hold_id: string; account: string; amount: number; drawn: number; status: 'open' | 'released';
  ref: string | null; memo: string | null; opened_at: string; expires_at: string;
  released_at: string | null; release_reason: string | null; draws: DrawRecord[];
  /** Part of the cap a fault keeps out of (positive) or adds to (negative) `reserved`. */
  uncounted: number;
}

const MINT = 'fake:mint';
const PLATFORM = 'fake:platform';

const isInt = (v: unknown): v is number => Number.isSafeInteger(v);
const isPos = (v: unknown): v is number => isInt(v) && v > 0;
const isText = (v: unknown): v is string => typeof v === 'string' && v !== '';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A refusal the handlers throw; the HTTP layer renders it as §7 prescribes (or as the fault breaks it). */
class Refusal extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

/** The ledger behind the fake: state, the operations, and the faults woven into them. */
class FakeLedger {
  readonly #ops: ReadonlySet<OperationName>;
  readonly #periods: boolean;
  readonly #finality: 'immediate' | 'deferred';
  readonly #fault: Fault | undefined;
  readonly #balances = new Map<string, number>();
  readonly #txns = new Map<string, Txn>();
  readonly #holds = new Map<string, Hold>();
  readonly #postings: { txnId: string; account: string; delta: number; kind: string; ts: string }[] = [];

  constructor(options: FakeOptions) {
    this.#ops = new Set(options.operations ?? OPERATIONS);
    this.#periods = options.periods ?? false;
    this.#finality = options.finality ?? 'immediate';
    this.#fault = options.fault;
    for (const account of [FAKE_FIXTURES.accounts.payer, FAKE_FIXTURES.accounts.payee, MINT, PLATFORM]) this.#balances.set(account, 0);
    if (options.prefunded) this.#post('genesis', [{ account: MINT, delta: -options.prefunded, kind: 'mint' }, { account: FAKE_FIXTURES.accounts.payer, delta: options.prefunded, kind: 'prefund' }]);
  }

  /** Whether `fault` is the one injected. */
  is(fault: Fault): boolean {
    return this.#fault === fault;
  }

  readonly #racers = new Map<string, () => void>();

  /**
   * The window of a race fault: a request that read the state waits here until a second one has
   * read it too (or 2 s pass), then both go on, so two parallel requests always act on the same
   * stale read, however loaded the machine is. The next arrival opens a new window.
   */
  async race(key: string): Promise<void> {
    const first = this.#racers.get(key);
    if (first !== undefined) {
      this.#racers.delete(key);
      first();
      return;
    }
    await new Promise<void>((resolve) => {
      this.#racers.set(key, resolve);
      setTimeout(() => {
        if (this.#racers.get(key) === resolve) this.#racers.delete(key);
        resolve();
      }, 2_000);
    });
  }

  /** The open period, a calendar month (`2026-03`), when periods are declared. */
  get period(): string {
    return new Date().toISOString().slice(0, 7);
  }

  /** Operations listed in the capability document. */
  listed(): OperationName[] {
    const ops = OPERATIONS.filter((op) => this.#ops.has(op));
    return this.is('caps-omits-settle') ? ops.filter((op) => op !== 'settle') : ops;
  }

  /** Whether an operation answers (it may be listed and still not answer, under a fault). */
  serves(op: OperationName): boolean {
    return this.#ops.has(op) && !(this.is('listed-op-not-served') && op === 'resize-hold');
  }

  /** The capability document (§5). */
  capabilities(): Json {
    const doc: Json = {
      contract: '1',
      implementation: 'holon-conformance test fake 1',
      unit: { code: this.is('caps-bad-unit') ? 'credits' : 'XTS', display: 'test unit', scale: 0, peg: null },
      operations: this.is('caps-unknown-operation') ? [...this.listed(), 'payout'] : this.listed(),
      finality: this.#finality,
      notifications: this.is('caps-no-poll') ? [] : ['poll'],
      funding: this.#ops.has('credit') && !this.is('caps-credit-without-funding') ? ['purchase'] : [],
      payout: false,
      negative_balance: true,
      limits: { min_amount: 1, max_amount: null },
      pending_max_seconds: null,
    };
    if (this.is('caps-missing-field')) delete doc.negative_balance;
    if (this.#periods) doc.period = { grain: 'month', current: this.period };
    if (this.is('caps-period-null')) doc.period = null;
    return doc;
  }

  // ---- expiry and figures (§6.2, §6.15, invariant 2) ----

  #live(hold: Hold): boolean {
    return hold.status === 'open' && (this.is('expiry-never') || Date.parse(hold.expires_at) > Date.now());
  }

  /** Releases every hold whose window closed (lazily, before a read or write that depends on it). */
  sweep(method: string): void {
    if (this.is('expiry-never') || this.is('expiry-list-stale') || (this.is('expiry-unswept-draw') && method !== 'GET')) return;
    for (const hold of this.#holds.values()) {
      if (hold.status === 'open' && !this.#live(hold)) this.#release(hold, 'expired');
    }
  }

  #reserved(account: string, reported: boolean): number {
    let sum = 0;
    for (const h of this.#holds.values()) {
      if (h.account !== account || !this.#live(h)) continue;
      sum += reported && this.is('reserved-counts-drawn') ? h.amount : h.amount - h.drawn - h.uncounted;
    }
    return sum;
  }

  /** What the account can still commit: balance less what live holds still commit (invariant 2). */
  available(account: string): number {
    return (this.#balances.get(account) ?? 0) - this.#reserved(account, false);
  }

  /** The §6.2 figures of an account. */
  figures(account: string): Json {
    const balance = this.#balances.get(account) ?? 0;
    const out: Json = {
      account,
      balance,
      available: this.available(account) - (this.is('available-not-balance') ? 1 : 0),
      reserved: this.#reserved(account, true),
      pending: 0,
    };
    if (this.is('balance-no-reserved')) delete out.reserved;
    if (this.#periods) out.period = this.period;
    return out;
  }

  #known(account: unknown, field: string): string {
    if (!isText(account)) throw new Refusal(422, 'invalid_request', `${field} must be a non-empty string`);
    if (!this.#balances.has(account) || account === MINT || account === PLATFORM) throw new Refusal(422, 'invalid_request', `there is no account ${account}`);
    return account;
  }

  // ---- reads ----

  resolveAccount(key: string): Answer {
    if (key === FAKE_FIXTURES.agent_key) {
      return ok({ agent: key, account: this.is('resolve-wrong-account') ? FAKE_FIXTURES.accounts.payee : FAKE_FIXTURES.accounts.payer });
    }
    if (this.is('resolve-unknown-404')) throw new Refusal(404, 'no_such_object', `no agent ${key}`);
    return ok({ agent: key, account: null });
  }

  readBalance(account: string): Answer {
    if (!this.#balances.has(account)) {
      throw this.is('unknown-account-not-offered') ? new Refusal(404, 'not_offered', 'not offered') : new Refusal(404, 'no_such_object', `there is no account ${account}`);
    }
    if (this.is('balance-read-accumulates')) this.#balances.set(account, (this.#balances.get(account) ?? 0) + 1);
    const out = this.figures(account);
    if (this.is('balance-no-period')) delete out.period;
    if (this.is('period-leak')) out.period = this.period;
    return ok(out);
  }

  readSummary(account: string): Answer {
    if (!this.#balances.has(account)) throw new Refusal(404, 'no_such_object', `there is no account ${account}`);
    const totals = { purchased: 0, adjusted: 0, spent: 0, earned: 0 };
    for (const t of this.#txns.values()) {
      const counts = this.is('totals-keep-reversed-spend') ? t.kind !== 'reverse' : t.kind !== 'reverse' && t.reversed_by === null;
      if (!counts || this.is('summary-zero-totals')) continue;
      for (const leg of t.legs.filter((l) => l.account === account)) {
        if (t.kind === 'credit') totals.purchased += leg.delta;
        else if (t.kind === 'adjust') totals.adjusted += leg.delta;
        else if (leg.delta < 0) totals.spent -= leg.delta;
        else totals.earned += leg.delta;
      }
    }
    const statement = this.#postings.filter((p) => p.account === account).slice(-30).reverse()
      .map((p) => ({ txn_id: p.txnId, kind: p.kind, delta: p.delta, ts: p.ts }));
    const out: Json = {
      ...this.figures(account),
      reservations: [...this.#holds.values()].filter((h) => h.account === account && h.status === 'open').map((h) => this.#record(h)),
      totals,
      funding: this.#ops.has('credit') ? ['purchase'] : [],
      statement,
    };
    if (this.is('summary-no-totals')) delete out.totals;
    return ok(out);
  }

  readSettlement(txnId: string): Answer {
    const t = this.#txns.get(txnId);
    if (t === undefined) {
      if (this.is('unknown-settlement-404')) throw new Refusal(404, 'no_such_object', `there is no transaction ${txnId}`);
      return ok({ txn_id: txnId, state: 'unknown', amount: null, account: null, opened_at: null, settled_at: null, failure: null, legs: [], reversed_by: null });
    }
    const edited = this.is('reverse-edits-original') && t.reversed_by !== null;
    const out: Json = {
      txn_id: t.txnId,
      state: this.is('settle-record-pending') && t.kind === 'settle' ? 'pending' : 'settled',
      amount: edited ? 0 : t.amount,
      account: t.account,
      opened_at: t.opened_at,
      settled_at: t.opened_at,
      failure: null,
      legs: edited ? [] : t.legs,
      reversed_by: this.is('reverse-no-reversed-by') ? null : t.reversed_by,
    };
    if (this.is('settlement-amount-is-rate') && t.kind === 'settle') out.amount = t.legs.find((l) => l.kind === 'earn')?.delta;
    if (this.#periods) out.period = this.period;
    return ok(out);
  }

  listReservations(account: string): Answer {
    if (!this.#balances.has(account)) throw new Refusal(404, 'no_such_object', `there is no account ${account}`);
    const holds = this.is('list-omits-holds') ? [] : [...this.#holds.values()].filter((h) => h.account === account);
    return ok({ ...this.figures(account), reservations: holds.map((h) => this.#record(h)) });
  }

  readReservation(holdId: string): Answer {
    const hold = this.#holds.get(holdId);
    if (hold === undefined) {
      if (this.is('unknown-hold-not-offered')) throw new Refusal(404, 'not_offered', 'not offered');
      throw new Refusal(404, 'no_such_object', `there is no reservation ${holdId}`);
    }
    const draws = hold.draws.map((d) => ({ ...d, count: this.is('draw-record-drops-count') ? null : d.count }));
    return ok({ ...this.#record(hold), draws: this.is('read-reservation-newest-first') ? draws.reverse() : draws });
  }

  #record(hold: Hold): Json {
    const { draws: _draws, uncounted: _uncounted, ...record } = hold;
    const out: Json = { ...record, status: this.is('expiry-list-stale') ? hold.status : (this.#live(hold) ? 'open' : 'released') };
    if (this.#periods) {
      out.period = out.status === 'open' ? this.period : null;
      if (!this.is('reservation-no-opened-in')) out.opened_in = hold.opened_at.slice(0, 7);
    }
    return out;
  }

  // ---- value-moving operations (§6.7 to §6.10, §6.13) ----

  /** A replay answer (whatever its terms), a conflict, or undefined when the id is new (§9; namespaces per §4). */
  #replay(txnId: string, kind: Kind): Json | undefined {
    const t = this.#txns.get(txnId);
    if (t === undefined) {
      if (this.is('shared-txn-namespace') && this.#holds.has(txnId)) return { ok: true, applied: false };
      return undefined;
    }
    if (t.kind !== kind) {
      if (this.is('shared-txn-namespace')) return { ok: true, applied: false };
      throw new Refusal(422, 'terms_conflict', `transaction ${txnId} is already a ${t.kind}`);
    }
    return { ...t.answer, applied: false };
  }

  #post(txnId: string, legs: Leg[]): void {
    const ts = new Date().toISOString();
    for (const leg of legs) {
      this.#balances.set(leg.account, (this.#balances.get(leg.account) ?? 0) + leg.delta);
      this.#postings.push({ txnId, account: leg.account, delta: leg.delta, kind: leg.kind, ts });
    }
  }

  #record_txn(txn: Omit<Txn, 'opened_at' | 'reversed_by'>): void {
    this.#post(txn.txnId, txn.legs);
    this.#txns.set(txn.txnId, { ...txn, opened_at: new Date().toISOString(), reversed_by: null });
  }

  /** The common fields of an accepted value-moving answer (§6, §10.2, §12.1). */
  accepted(op: Kind, extra: Json = {}): Json {
    const out: Json = { ok: true, applied: true, ...extra };
    if (this.#finality === 'deferred' && !this.is('deferred-omits-state')) out.state = 'settled';
    if (this.is('immediate-reports-pending') && op === 'settle') out.state = 'pending';
    if (this.#periods && !(this.is('settle-response-no-period') && op === 'settle')) out.period = this.period;
    return out;
  }

  credit(b: Json): Answer {
    if (!isText(b.txnId)) throw new Refusal(422, 'invalid_request', 'txnId is required');
    const account = this.#known(b.account, 'account');
    const amountOk = this.is('credit-accepts-zero') ? isInt(b.amount) && b.amount >= 0 : isPos(b.amount);
    if (!amountOk) throw new Refusal(422, 'invalid_request', `amount must be a positive integer, got ${JSON.stringify(b.amount)}`);
    const amount = b.amount as number;
    const terms = JSON.stringify([account, amount]);
    const replay = this.is('credit-replay-applies') ? undefined : this.#replay(b.txnId, 'credit');
    if (replay) return ok(replay);
    if (this.is('funding-no-effect')) return ok(this.accepted('credit'));
    const times = this.is('credit-double') ? 2 : 1;
    const legs = this.is('credit-legs-unbalanced')
      ? [{ account, delta: amount, kind: 'purchase' }]
      : [{ account: MINT, delta: -amount * times, kind: 'mint' }, { account, delta: amount * times, kind: 'purchase' }];
    const answer = this.accepted('credit');
    this.#record_txn({ txnId: b.txnId, kind: 'credit', account, amount, legs, reverses: null, holdId: null, terms, answer });
    return ok(answer);
  }

  async settle(b: Json): Promise<Answer> {
    if (!isText(b.txnId)) throw new Refusal(422, 'invalid_request', 'txnId is required');
    const caller = this.#known(b.caller, 'caller');
    const owner = this.#known(b.owner, 'owner');
    if (!isPos(b.rate) || !isPos(b.retail)) throw new Refusal(422, 'invalid_request', 'rate and retail must be positive integers');
    const { rate, retail } = b as { rate: number; retail: number };
    if (retail < rate && !this.is('settle-accepts-retail-below-rate')) throw new Refusal(422, 'invalid_request', `retail ${retail} is less than rate ${rate}`);
    if (retail === rate && this.is('settle-refuses-equal-rate')) throw new Refusal(422, 'invalid_request', 'no margin');
    const terms = JSON.stringify([caller, owner, rate, retail]);
    const replay = this.is('settle-replay-applies-twice') ? undefined : this.#replay(b.txnId, 'settle');
    if (replay && this.is('retry-refused') && Date.now() - Date.parse(this.#txns.get(b.txnId)?.opened_at ?? '') < 250) {
      throw new Refusal(422, 'terms_conflict', `settle ${b.txnId} is still in progress`);
    }
    if (replay && !(this.is('settle-replay-other-terms-applies') && this.#txns.get(b.txnId)?.terms !== terms)) return ok(replay);
    if (this.is('settle-race')) await this.race(`settle:${b.txnId}`);
    if (this.is('double-apply')) await sleep(3);
    if (this.is('drift') && retail % 7 === 0) this.#balances.set(caller, (this.#balances.get(caller) ?? 0) - 1);
    if (this.is('settle-refuses-insufficient') && this.available(caller) < retail) {
      throw new Refusal(422, 'insufficient_funds', `${caller} has ${this.available(caller)} available`);
    }
    const legs = [{ account: caller, delta: -(this.is('settle-charges-rate') ? rate : retail), kind: 'charge' }, { account: owner, delta: rate, kind: 'earn' }];
    if (retail > rate && !this.is('legs-unbalanced')) legs.push({ account: PLATFORM, delta: retail - rate, kind: 'margin' });
    const answer = this.accepted('settle');
    this.#record_txn({ txnId: b.txnId, kind: 'settle', account: caller, amount: retail, legs, reverses: null, holdId: null, terms, answer });
    return ok(answer);
  }

  adjust(b: Json): Answer {
    if (!isText(b.txnId)) throw new Refusal(422, 'invalid_request', 'txnId is required');
    const account = this.#known(b.account, 'account');
    const deltaOk = isInt(b.delta) && (b.delta !== 0 || this.is('adjust-accepts-zero'));
    if (!deltaOk) throw new Refusal(422, 'invalid_request', 'delta must be a non-zero integer');
    if (!isText(b.reason)) throw new Refusal(422, 'invalid_request', 'reason is required');
    const delta = this.is('adjust-ignores-sign') ? Math.abs(b.delta as number) : (b.delta as number);
    const terms = JSON.stringify([account, b.delta]);
    const replay = this.is('adjust-replay-applies') ? undefined : this.#replay(b.txnId, 'adjust');
    if (replay) return ok(replay);
    const answer = this.accepted('adjust');
    this.#record_txn({ txnId: b.txnId, kind: 'adjust', account, amount: Math.abs(delta), legs: [{ account: MINT, delta: -delta, kind: 'mint' }, { account, delta, kind: 'adjustment' }], reverses: null, holdId: null, terms, answer });
    return ok(answer);
  }

  reverse(b: Json): Answer {
    if (!isText(b.txnId) || !isText(b.reverses)) throw new Refusal(422, 'invalid_request', 'txnId and reverses are required');
    if (!isText(b.reason) && !this.is('reverse-without-reason')) throw new Refusal(422, 'invalid_request', 'a reason is required');
    const existing = this.#txns.get(b.txnId);
    if (existing?.kind === 'reverse' && existing.reverses === b.reverses) {
      if (this.is('reverse-draw-replay-restores-cap')) this.#giveCapBack(this.#txns.get(b.reverses));
      return ok({ ...existing.answer, applied: false, amount: this.is('reverse-replay-amount-zero') ? 0 : existing.amount });
    }
    if (existing !== undefined) throw new Refusal(422, 'terms_conflict', `transaction ${b.txnId} already exists`);
    const target = this.#txns.get(b.reverses);
    if (target === undefined) throw new Refusal(422, 'invalid_request', `there is no transaction ${b.reverses}`);
    if (target.kind === 'reverse' && !this.is('reverse-of-reverse')) throw new Refusal(422, 'not_reversible', `${b.reverses} is a reversal`);
    if (target.kind === 'adjust' && !this.is('reverse-of-adjust')) throw new Refusal(422, 'not_reversible', `${b.reverses} is an adjustment`);
    if (target.reversed_by !== null && !this.is('reverse-twice')) {
      throw new Refusal(422, 'already_reversed', this.is('reverse-refusal-unnamed') ? 'already reversed' : `${b.reverses} was already reversed by ${target.reversed_by}`);
    }
    const legs = target.legs.map((l) => ({ account: l.account, delta: -l.delta, kind: 'reversal' }));
    if (this.is('reverse-restores-rate') && target.kind === 'settle') {
      const earn = target.legs.find((l) => l.kind === 'earn')?.delta ?? 0;
      legs[0] = { account: target.account, delta: earn, kind: 'reversal' };
    }
    if (!this.is('reverse-draw-keeps-cap')) this.#giveCapBack(target);
    const answer = this.accepted('reverse', { amount: target.amount });
    this.#record_txn({ txnId: b.txnId, kind: 'reverse', account: target.account, amount: target.amount, legs, reverses: b.reverses, holdId: null, terms: b.reverses, answer });
    target.reversed_by = b.txnId;
    return ok(answer);
  }

  /** §6.9: a reversed draw gives its amount back to the cap of its hold while the hold is open (or as a fault breaks it). */
  #giveCapBack(target: Txn | undefined): void {
    const hold = target?.holdId == null ? undefined : this.#holds.get(target.holdId);
    if (target === undefined || hold === undefined || target.kind !== 'draw') return;
    if (this.#live(hold)) hold.drawn -= target.amount;
    else if (this.is('reverse-draw-reopens-released')) {
      hold.status = 'open';
      hold.drawn -= target.amount;
    } else if (this.is('reverse-draw-released-drawn')) hold.drawn -= target.amount;
  }

  // ---- reservations (§6.11 to §6.14) ----

  #hold(holdId: unknown): Hold {
    if (!isText(holdId)) throw new Refusal(422, 'invalid_request', 'holdId is required');
    const hold = this.#holds.get(holdId);
    if (hold === undefined) throw new Refusal(422, 'invalid_request', `there is no reservation ${holdId}`);
    return hold;
  }

  #holdAnswer(hold: Hold, extra: Json): Json {
    const out: Json = { ok: true, applied: true, reservation: this.#record(hold), available: this.available(hold.account), ...extra };
    if (this.is('hold-pending')) out.state = 'pending';
    return out;
  }

  async openHold(b: Json): Promise<Answer> {
    if (!isText(b.holdId)) throw new Refusal(422, 'invalid_request', 'holdId is required');
    const account = this.#known(b.account, 'account');
    if (!isPos(b.amount)) throw new Refusal(422, 'invalid_request', 'amount must be a positive integer');
    const amount = b.amount;
    let expires = typeof b.expiresAt === 'string' ? Date.parse(b.expiresAt) : Number.NaN;
    if (Number.isNaN(expires)) {
      if (!this.is('hold-accepts-bad-expiry')) throw new Refusal(422, 'invalid_request', 'expiresAt must be an ISO 8601 instant');
      expires = Date.now() + 600_000;
    }
    const existing = this.#holds.get(b.holdId);
    if (existing !== undefined) {
      if (this.is('hold-replay-reserves-again')) {
        existing.amount += amount;
        return ok(this.#holdAnswer(existing, {}));
      }
      if ((existing.account === account && existing.amount === amount) || this.is('hold-reuse-keeps-first')) {
        return ok(this.#holdAnswer(existing, { applied: false }));
      }
      throw new Refusal(422, 'terms_conflict', this.is('hold-conflict-unnamed') ? 'terms differ'
        : `hold ${b.holdId} exists for account ${existing.account} with amount ${existing.amount}`);
    }
    const available = this.available(account);
    if (this.is('hold-race')) await this.race(`hold:${account}`);
    if (this.is('racy-holds')) await sleep(3);
    if (amount > available && !this.is('hold-overcommits')) {
      const f = this.figures(account);
      throw new Refusal(422, 'insufficient_funds', this.is('hold-refusal-vague') ? 'insufficient funds'
        : `asked ${amount}, available ${available}, balance ${String(f.balance)}, reserved ${String(f.reserved)}`);
    }
    const now = new Date().toISOString();
    const hold: Hold = {
      hold_id: b.holdId, account, amount, drawn: 0, status: 'open', ref: typeof b.ref === 'string' ? b.ref : null,
      memo: typeof b.memo === 'string' ? b.memo : null, opened_at: now, expires_at: new Date(expires).toISOString(),
      released_at: null, release_reason: null, draws: [], uncounted: 0,
    };
    this.#holds.set(b.holdId, hold);
    if (this.is('hold-debits-balance')) this.#balances.set(account, (this.#balances.get(account) ?? 0) - amount);
    const answer = this.#holdAnswer(hold, {});
    if (this.is('hold-record-wrong-amount')) (answer.reservation as Json).amount = amount + 1;
    return ok(answer);
  }

  resizeHold(b: Json): Answer {
    const hold = this.#hold(b.holdId);
    if (!isPos(b.amount)) throw new Refusal(422, 'invalid_request', 'amount must be a positive integer');
    const expires = b.expiresAt === undefined ? hold.expires_at : typeof b.expiresAt === 'string' && !Number.isNaN(Date.parse(b.expiresAt)) ? new Date(b.expiresAt).toISOString() : null;
    if (expires === null) throw new Refusal(422, 'invalid_request', 'expiresAt must be an ISO 8601 instant');
    if (!this.#live(hold)) {
      if (!this.is('resize-revives-released')) throw new Refusal(422, 'closed', `reservation ${hold.hold_id} is released`);
      hold.status = 'open';
    }
    if (b.amount < hold.drawn && !this.is('resize-below-drawn')) throw new Refusal(422, 'invalid_request', `cannot shrink below the ${hold.drawn} drawn`);
    if (b.amount === hold.amount && expires === hold.expires_at) {
      return ok(this.#holdAnswer(hold, { applied: this.is('resize-same-target-applies'), delta: 0 }));
    }
    const delta = b.amount - hold.amount;
    if (delta > 0 && delta > this.available(hold.account) && !this.is('resize-overcommits')) {
      throw new Refusal(422, 'insufficient_funds', `raising by ${delta} needs ${delta} available; ${this.available(hold.account)} is`);
    }
    if ((delta > 0 && this.is('resize-raise-free')) || (delta < 0 && this.is('resize-reduce-keeps-reserved'))) hold.uncounted += delta;
    hold.amount = b.amount;
    if (!this.is('resize-ignores-window')) hold.expires_at = expires;
    return ok(this.#holdAnswer(hold, { delta }));
  }

  async draw(b: Json): Promise<Answer> {
    if (!isText(b.txnId)) throw new Refusal(422, 'invalid_request', 'txnId is required');
    const caller = this.#known(b.caller, 'caller');
    const owner = this.#known(b.owner, 'owner');
    const lines = Array.isArray(b.lines) ? (b.lines as Json[]) : null;
    if (lines === null || (lines.length === 0 && !this.is('draw-accepts-empty-lines'))) throw new Refusal(422, 'invalid_request', 'lines must hold at least one line');
    for (const l of lines) {
      const fields = [l?.count, l?.per, l?.per_unit].every((v) => v === undefined || isInt(v));
      if (!isText(l?.meter) || !isInt(l.amount) || l.amount < 0 || !fields) throw new Refusal(422, 'invalid_request', 'each line needs a meter and a non-negative integer amount');
      if (l.pass_through === true && !isText(l.upstream_receipt) && !this.is('draw-pass-through-unchecked')) {
        throw new Refusal(422, 'invalid_request', `pass-through line ${l.meter} names no upstream receipt`);
      }
    }
    const asked = lines.reduce((s, l) => s + (l.amount as number), 0);
    const existing = this.#txns.get(b.txnId);
    if (existing?.kind === 'draw' && existing.holdId === b.holdId && !this.is('draw-replay-applies')) {
      return ok({ ...existing.answer, applied: false, refused: asked - (existing.answer.billed as number) });
    }
    if (existing !== undefined && !this.is('draw-replay-applies')) throw new Refusal(422, 'terms_conflict', `transaction ${b.txnId} already exists`);
    const hold = this.#hold(b.holdId);
    const usable = this.is('expiry-unswept-draw') ? hold.status === 'open' : this.#live(hold) || (this.is('draw-after-release') && hold.status === 'released');
    if (!usable) throw new Refusal(422, 'closed', `reservation ${hold.hold_id} is closed`);
    if (caller !== hold.account && !this.is('draw-any-caller')) throw new Refusal(422, 'invalid_request', `${caller} does not own reservation ${hold.hold_id}`);
    let remaining = hold.amount - hold.drawn;
    if (this.is('draw-race')) await this.race(`draw:${b.holdId}`);
    const ts = new Date().toISOString();
    const stored: DrawRecord[] = lines.map((l) => {
      const amount = l.amount as number;
      const billed = this.is('draw-exceeds-cap') ? amount : Math.max(0, Math.min(amount, remaining));
      remaining -= billed;
      return {
        hold_id: hold.hold_id, txn_id: b.txnId as string, ts, meter: l.meter as string, amount: billed,
        unit: typeof l.unit === 'string' ? l.unit : null, count: isInt(l.count) ? l.count : null,
        per: isInt(l.per) ? l.per : this.is('draw-per-null') ? null : 1, per_unit: isInt(l.per_unit) ? l.per_unit : null,
        pass_through: l.pass_through === true, upstream_receipt: typeof l.upstream_receipt === 'string' ? l.upstream_receipt : null,
        capped: this.is('draw-capped-unmarked') ? false : billed < amount,
      };
    }).filter((d) => !(this.is('draw-drops-zero-lines') && d.amount === 0));
    const billed = stored.reduce((s, d) => s + d.amount, 0);
    hold.drawn += billed;
    hold.draws.push(...stored);
    const margin = this.is('draw-takes-margin') && billed > 0 ? 1 : 0;
    const legs = [{ account: caller, delta: -billed, kind: 'charge' }, { account: owner, delta: billed - margin, kind: 'earn' }];
    if (margin > 0) legs.push({ account: PLATFORM, delta: margin, kind: 'margin' });
    const left = this.is('draw-remaining-ignores-billed') ? hold.amount : hold.amount - hold.drawn;
    const answer = this.accepted('draw', {
      billed, refused: asked - billed, remaining: left, exhausted: left === 0,
      lines: stored.map(({ hold_id: _h, txn_id: _t, ts: _ts, ...line }) => line),
    });
    this.#record_txn({ txnId: b.txnId, kind: 'draw', account: caller, amount: billed, legs, reverses: null, holdId: hold.hold_id, terms: '', answer });
    return ok(answer);
  }

  #release(hold: Hold, reason: string): void {
    hold.status = 'released';
    hold.released_at = new Date().toISOString();
    hold.release_reason = reason;
  }

  releaseHold(b: Json): Answer {
    const hold = this.#hold(b.holdId);
    if (hold.status === 'released' && !this.is('release-twice')) return ok(this.#holdAnswer(hold, { applied: false, released: 0 }));
    let released = hold.amount - hold.drawn;
    if (this.is('release-returns-full-cap')) {
      released = hold.amount;
      this.#balances.set(hold.account, (this.#balances.get(hold.account) ?? 0) + hold.drawn);
    }
    this.#release(hold, typeof b.reason === 'string' ? b.reason : 'released');
    return ok(this.#holdAnswer(hold, { released }));
  }
}

function ok(body: Json): Answer {
  return { status: 200, body };
}

/** The routes of the contract: method, path pattern, the operation it serves. */
const READS: Record<string, OperationName> = {
  'account-for-agent': 'resolve-account', balance: 'read-balance', summary: 'read-summary', settlement: 'read-settlement',
  reservations: 'list-reservations', reservation: 'read-reservation',
};
const WRITES: Record<string, OperationName> = {
  purchase: 'credit', charge: 'settle', reverse: 'reverse', adjust: 'adjust', hold: 'open-hold', resize: 'resize-hold',
  draw: 'draw', release: 'release-hold',
};

/** Handles one request: gate, route, offered or not, body, operation; every refusal as §7 says. */
async function handle(ledger: FakeLedger, req: IncomingMessage): Promise<Answer> {
  const path = (req.url ?? '/').split('?')[0] as string;
  const forwarded = req.headers['x-forwarded-for'] !== undefined;
  const loopback = ['127.0.0.1', '::1', '::ffff:127.0.0.1'].includes(req.socket.remoteAddress ?? '');
  const gated = !loopback || (forwarded && !ledger.is('no-forwarded-gate'));
  if (req.method === 'GET' && path === '/healthz') {
    if (ledger.is('no-health')) throw new Refusal(404, 'no_such_route', 'no health here');
    if (ledger.is('health-gated') && gated) throw new Refusal(403, 'not_permitted', 'forwarded requests are refused');
    return ok({ ok: true });
  }
  if (gated) throw new Refusal(403, 'not_permitted', 'only local, unproxied callers may call this binding');
  if (req.method === 'GET' && path === '/internal/clearing/capabilities') return ok(ledger.capabilities());
  const read = /^\/internal\/ledger\/([a-z-]+)\/([^/]+)$/.exec(path);
  const write = /^\/internal\/ledger\/([a-z]+)$/.exec(path);
  const op = req.method === 'GET' && read ? READS[read[1] as string] : req.method === 'POST' && write ? WRITES[write[1] as string] : undefined;
  if (op === undefined) {
    throw ledger.is('unknown-route-not-offered') ? new Refusal(404, 'not_offered', 'not offered') : new Refusal(404, 'no_such_route', `${req.method} ${path} is not an operation of this contract`);
  }
  if (!ledger.serves(op)) {
    throw new Refusal(404, ledger.is('unlisted-op-no-code') ? '' : 'not_offered', `this binding does not offer ${op}`);
  }
  ledger.sweep(req.method ?? 'GET');
  if (read) {
    const raw = read[2] as string;
    const param = ledger.is('path-not-decoded') ? raw : decodeURIComponent(raw);
    switch (op) {
      case 'resolve-account':
        if (ledger.is('resolve-slow')) await sleep(300);
        return ledger.resolveAccount(param);
      case 'read-balance': return ledger.readBalance(param);
      case 'read-summary': return ledger.readSummary(param);
      case 'read-settlement': return ledger.readSettlement(param);
      case 'list-reservations': return ledger.listReservations(param);
      default: return ledger.readReservation(param);
    }
  }
  const body = await readBody(req, ledger);
  switch (op) {
    case 'credit': return ledger.credit(body);
    case 'settle': return ledger.settle(body);
    case 'reverse': return ledger.reverse(body);
    case 'adjust': return ledger.adjust(body);
    case 'open-hold': return ledger.openHold(body);
    case 'resize-hold': return ledger.resizeHold(body);
    case 'draw': return ledger.draw(body);
    default: return ledger.releaseHold(body);
  }
}

async function readBody(req: IncomingMessage, ledger: FakeLedger): Promise<Json> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    if (ledger.is('bad-json-500')) throw new Error('unexpected token');
    throw new Refusal(422, 'invalid_request', 'the body is not JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Refusal(422, 'invalid_request', 'the body must be a JSON object');
  return body as Json;
}

/** Renders a refusal as §7 says, or as the injected fault breaks it. */
function refusal(ledger: FakeLedger, error: Refusal): Answer {
  let status = error.status;
  const body: Json = { error: ledger.is('generic-error-messages') ? 'request failed' : error.message };
  if (error.code !== '' && !ledger.is('no-code-on-errors')) body.code = error.code;
  if (ledger.is('invalid-request-400') && error.code === 'invalid_request') status = 400;
  if (ledger.is('refusal-carries-state')) body.state = 'failed';
  if (ledger.is('ok-false-refusals') && status === 422) return { status: 200, body: { ok: false, ...body } };
  return { status, body };
}

function send(res: ServerResponse, ledger: FakeLedger, answer: Answer): void {
  let text = JSON.stringify(answer.body);
  if (ledger.is('fractional-amounts')) text = text.replace(/"balance":(-?\d+)/g, '"balance":$1.0');
  res.writeHead(answer.status, { 'content-type': 'application/json' });
  res.end(text);
}

/** Starts a fake binding on a free loopback port. */
export async function startFakeBinding(options: FakeOptions = {}): Promise<FakeBinding> {
  const ledger = new FakeLedger(options);
  const server = createServer((req, res) => {
    handle(ledger, req).then(
      (answer) => send(res, ledger, answer),
      (error: unknown) => send(res, ledger, error instanceof Refusal ? refusal(ledger, error)
        : { status: 500, body: { error: `internal: ${(error as Error).message}`, code: 'internal_error' } }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
