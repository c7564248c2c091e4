/**
 * The run's shared state (run prefix, funding mode, holds to clean up) and the per-check
 * context a check works through: its wire, run-unique identifiers, funding and balance figures.
 */
import { randomBytes } from 'node:crypto';
import type { DrawLineRequest } from '../../generated/clearing/client/types.gen.ts';
import type { ConformanceConfig } from './config.ts';
import type { OperationName } from './contract.ts';
import type { Declared } from './declared.ts';
import { answered, applied, asObject, ensure, fail, gotOf, Inconclusive, isInt, NotApplicable, type Json } from './expect.ts';
import type { Figures } from './figures.ts';
import type { Exchange, ExchangeLog } from './http.ts';
import { Wire, wireTarget, type Reply } from './wire.ts';

/**
 * How the kit puts value in the payer's account: through credit or adjust under run-unique
 * transaction ids, or not at all (relying on `fixtures.prefunded`).
 */
export type FundingMode = 'credit' | 'adjust' | 'prefunded';

/** State shared by every check of one run. */
export class RunState {
  readonly config: ConformanceConfig;
  /** The capability document's planning view. */
  readonly declared: Declared;
  readonly log: ExchangeLog;
  /** Prefix of every identifier this run creates, e.g. `hc-lq2x9a-3f1c`. */
  readonly prefix: string;
  readonly funding: FundingMode;
  /** Every hold this run asked to open (any check, any wire), released at the end of the run. */
  readonly holds = new Set<string>();
  #counter = 0;

  constructor(config: ConformanceConfig, declared: Declared, log: ExchangeLog) {
    this.config = config;
    this.declared = declared;
    this.log = log;
    this.prefix = `hc-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
    const ops = declared.operations;
    this.funding = ops.has('credit') ? 'credit' : ops.has('adjust') ? 'adjust' : 'prefunded';
  }

  /** A fresh wire recording into this run's log. */
  newWire(): Wire {
    return new Wire({ ...wireTarget(this.config), onHold: (holdId) => this.holds.add(holdId) }, this.log);
  }

  /** A run-unique identifier such as `hc-lq2x9a-3f1c-settle-7`. */
  nextId(kind: string): string {
    this.#counter += 1;
    return `${this.prefix}-${kind}-${this.#counter}`;
  }
}

/** Options of `CheckContext.openHold`. */
export interface HoldOptions {
  /** Window length; default 10 minutes. */
  readonly expiresInMs?: number;
  readonly account?: string;
}

/** What one check works through. Everything it sends is recorded on `wire`. */
export class CheckContext {
  readonly wire: Wire;
  readonly #run: RunState;

  constructor(run: RunState, wire: Wire) {
    this.#run = run;
    this.wire = wire;
  }

  /** The binding's declaration (§5). */
  get declared(): Declared {
    return this.#run.declared;
  }

  /** Whether the binding lists `op` in `operations` (§5). */
  offers(op: OperationName): boolean {
    return this.declared.operations.has(op);
  }

  /** The run's validated config. */
  get config(): ConformanceConfig {
    return this.#run.config;
  }

  /** The account the kit pays from and holds against (`fixtures.accounts.payer`). */
  get payer(): string {
    return this.#run.config.fixtures.accounts.payer;
  }

  /** The earning account of every settlement and draw (`fixtures.accounts.payee`). */
  get payee(): string {
    return this.#run.config.fixtures.accounts.payee;
  }

  /** How this run funds the payer. */
  get funding(): FundingMode {
    return this.#run.funding;
  }

  /** Every exchange of the run so far, oldest first (for run-wide checks). */
  runExchanges(): readonly Exchange[] {
    return this.#run.log.all();
  }

  /** A run-unique identifier for a transaction or hold. */
  id(kind: string): string {
    return this.#run.nextId(kind);
  }

  /**
   * `n` units scaled to the binding's smallest amount (`limits.min_amount`). Throws
   * Inconclusive when the result exceeds `limits.max_amount`.
   */
  amount(n: number): number {
    const value = n * this.declared.min_amount;
    const max = this.declared.max_amount;
    if (max !== null && value > max) {
      throw new Inconclusive(`the check needs an amount of ${value}, above limits.max_amount ${max}`);
    }
    return value;
  }

  /** An ISO 8601 instant `ms` milliseconds from now. */
  expiresAt(ms: number): string {
    return new Date(Date.now() + ms).toISOString();
  }

  /** Reads an account's figures; fails the check when read-balance does not answer them (§6.2). */
  async figures(account: string): Promise<Figures> {
    const reply = await this.wire.readBalance(account);
    const body = answered(reply, `read-balance ${account}`);
    const pending = body.pending ?? 0;
    ensure(isInt(body.balance) && isInt(body.available) && isInt(body.reserved) && isInt(pending),
      `read-balance ${account}: figures are not integers`,
      'integer balance, available and reserved; pending integer or absent (§6.2)', gotOf(reply), reply);
    return { balance: body.balance, available: body.available, reserved: body.reserved, pending, reply };
  }

  /**
   * Makes sure the payer has at least `need` available, funding the difference through credit or
   * adjust under a run-unique id. With neither offered it relies on the prefunded units: those the
   * run already paid to the payee are settled back (payee to payer, no margin), and when they do
   * not cover `need` it throws Inconclusive. Answers the payer's figures afterwards.
   */
  async ensureAvailable(need: number): Promise<Figures> {
    const before = await this.figures(this.payer);
    if (before.available >= need) return before;
    const short = need - before.available;
    let reply: Reply;
    if (this.funding === 'credit') {
      reply = await this.wire.credit({ txnId: this.id('fund'), account: this.payer, amount: short, ref: 'holon-conformance funding' });
    } else if (this.funding === 'adjust') {
      reply = await this.wire.adjust({ txnId: this.id('fund'), account: this.payer, delta: short, reason: 'holon-conformance funding' });
    } else {
      const payee = await this.figures(this.payee);
      if (payee.available < short) {
        throw new Inconclusive(`the payer ${this.payer} has ${before.available} available and this check needs ${need}; the binding offers `
          + `neither credit nor adjust, and the prefunded units (config prefunded: ${this.config.fixtures.prefunded}) are used up`);
      }
      reply = await this.wire.settle({ txnId: this.id('recycle'), caller: this.payee, owner: this.payer, rate: short, retail: short, memo: 'holon-conformance: prefunded units back to the payer' });
    }
    if (reply.status !== 200 || (reply.body as Json | undefined)?.applied !== true) {
      throw new Inconclusive(`funding the payer through ${this.funding} failed (${gotOf(reply)}), so the check could not set up its case`);
    }
    const after = await this.figures(this.payer);
    if (after.available < need) {
      // A funding left pending (§10) is not yet available: the binding said so, and proved nothing wrong.
      if ((reply.body as Json | undefined)?.state === 'pending') {
        throw new Inconclusive(`funding ${short} through ${this.funding} is pending (§10), so the payer has ${after.available} available, short of ${need}`);
      }
      fail(`${this.funding} of ${short} was answered as applied, yet the payer's available did not rise by it`,
        `available ${before.available} + ${short} = ${before.available + short} after the funding answered applied (§6.2, §6.7)`,
        `available ${after.available}`, before.reply, reply, after.reply);
    }
    return after;
  }

  /** Opens a hold on the payer (or `options.account`); fails the check unless it is applied (§6.11). */
  async openHold(amount: number, options: HoldOptions = {}): Promise<{ holdId: string; body: Json; reply: Reply }> {
    const holdId = this.id('hold');
    const reply = await this.wire.openHold({
      holdId, account: options.account ?? this.payer, amount,
      expiresAt: this.expiresAt(options.expiresInMs ?? 600_000), ref: 'holon-conformance',
    });
    return { holdId, body: applied(reply, `open-hold ${holdId} of ${amount}`, true), reply };
  }

  /** Makes sure the payer has `amount` available (see `ensureAvailable`), then opens a hold of `amount` on it (see `openHold`). */
  async openFundedHold(amount: number): Promise<{ holdId: string; body: Json; reply: Reply }> {
    await this.ensureAvailable(amount);
    return this.openHold(amount);
  }

  /** Settles `retail` from payer to payee (`rate` defaults to retail); fails unless applied (§6.8). */
  async settle(retail: number, rate = retail): Promise<{ txnId: string; body: Json; reply: Reply }> {
    const txnId = this.id('settle');
    const reply = await this.wire.settle({ txnId, caller: this.payer, owner: this.payee, rate, retail, memo: 'holon-conformance' });
    return { txnId, body: applied(reply, `settle ${txnId} (retail ${retail}, rate ${rate})`, true), reply };
  }

  /** Draws `lines` against a payer's hold for the payee; fails unless applied (§6.13). */
  async draw(holdId: string, lines: DrawLineRequest[]): Promise<{ txnId: string; body: Json; reply: Reply }> {
    const txnId = this.id('draw');
    const reply = await this.wire.draw({ holdId, txnId, caller: this.payer, owner: this.payee, lines });
    return { txnId, body: applied(reply, `draw ${txnId} on ${holdId}`, true), reply };
  }

  /** Reads a settlement record and fails unless it answers 200 with an object (§6.4). */
  async settlement(txnId: string): Promise<{ body: Json; reply: Reply }> {
    const reply = await this.wire.readSettlement(txnId);
    return { body: answered(reply, `read-settlement ${txnId}`), reply };
  }

  /** An account's totals from read-summary; fails unless they are an object (§6.3). */
  async totals(account: string): Promise<{ totals: Json; reply: Reply }> {
    const reply = await this.wire.readSummary(account);
    const totals = asObject(answered(reply, `read-summary ${account}`).totals);
    if (totals === null) fail(`read-summary ${account} carries no totals`, '`totals`, an object (§6.3)', gotOf(reply), reply);
    return { totals, reply };
  }

  /** Fails unless the binding has no record of `txnId`: the refusal `refusal` applied nothing (§6.4, §7.4). */
  async ensureUnknown(txnId: string, what: string, refusal: Reply): Promise<void> {
    const { body, reply } = await this.settlement(txnId);
    ensure(body.state === 'unknown', `${what} was refused, yet ${txnId} is on record`,
      'state "unknown": a refusal applies nothing', gotOf(reply), refusal, reply);
  }

  /**
   * Reads a hold's record: read-reservation when offered, else the record in list-reservations.
   * Throws NotApplicable when neither is offered, and fails when the hold cannot be found.
   */
  async reservation(holdId: string, account = this.payer): Promise<{ record: Json; reply: Reply }> {
    if (this.offers('read-reservation')) {
      const reply = await this.wire.readReservation(holdId);
      return { record: answered(reply, `read-reservation ${holdId}`), reply };
    }
    if (!this.offers('list-reservations')) {
      throw new NotApplicable('the binding offers neither read-reservation nor list-reservations, so a hold cannot be read');
    }
    const reply = await this.wire.listReservations(account);
    const list = answered(reply, `list-reservations ${account}`).reservations;
    const record = Array.isArray(list) ? list.find((r) => (r as Json | null)?.hold_id === holdId) : undefined;
    if (record === undefined) fail(`list-reservations ${account} does not list hold ${holdId}`, `a record with hold_id ${holdId} (§6.5)`, gotOf(reply), reply);
    return { record: record as Json, reply };
  }
}
