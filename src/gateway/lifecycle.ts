/**
 * The life of a call (gateway §1): resolve ─► check input ─► admit ─► reserve ─► run ─► check
 * output ─► settle ─► receipt. Each step is a method below, in that order. Input is checked
 * before admission (DESIGN open point 5, gateway §7 "Limits": nothing is held for approval, and
 * nothing reserved, for an input the agent would refuse), so an input that is both invalid and
 * unadmitted answers 422. Amounts are integer micro-units of the root mandate's currency.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { checkAttenuation } from '../contracts/attenuation.ts';
import { checkCall, type Admission } from '../contracts/check-call.ts';
import { ContractError } from '../contracts/errors.ts';
import { GATEWAY_ERROR_CODES } from '../contracts/manifest.ts';
import { lineageChain } from '../contracts/lineage.ts';
import { parseAgentRef, resolveVersion } from '../contracts/resolve.ts';
import { rootMandateOf, validateMandate } from '../contracts/mandate.ts';
import { formatMoney, parseMoney, type Micros } from '../contracts/money.ts';
import { chargeFor, worstCase, type Outcome, type WorstCase } from '../contracts/pricing.ts';
import { splitCharge, splitLines } from '../contracts/split.ts';
import type { Runtime, RunOutcome, Delegate, FileLink } from '../runtimes/types.ts';
import type { GatewayErrorCode } from '../../generated/gateway/server.ts';
import { agentCode, HttpError } from '../http/errors.ts';
import { createApproval, inputHash, type ApprovalRow } from './approvals.ts';
import { rankingRate, readMeasured } from './catalogue.ts';
import { ClearingRefused, type ClearingPort } from './clearing.ts';
import { deriveSubMandate, slotFor, subBudget } from './delegation.ts';
import { budgetOf, closeParams, closeReservation, reserveParams, subMandateParams, type BudgetFigures, type StoredMandate } from './mandates.ts';
import { MandateCache } from './mandate-cache.ts';
import { BACKLOG_RETRY_AFTER_S, intentsParams, type Intent, type Outbox } from './outbox.ts';
import { agentRef, type ListedAgent, type Registry } from './registry.ts';
import { costView, now, readReceipt, readReceiptDurably, receiptParams, SAVE_RECEIPT, treeOf, type Receipt, type ReceiptError, type ReceiptTree } from './receipts.ts';
import { FINISH_CALL, MANDATE_WRITES, RESERVE_CALL } from './call-writes.ts';
import { MandateWriteGroups } from './mandate-groups.ts';
import { ReceiptIds } from './receipt-ids.ts';
import { PhaseClock } from './server-timing.ts';
import { signReceiptTree, type SignedReceiptTree } from './signatures.ts';
import type { Signer } from '../signing/signer.ts';
import { rawQuery, transactionRunner, type NamedStatement } from '../db/raw-sql.ts';
import { inTransaction } from '../db/transaction.ts';
import { DatabaseUnavailable } from '../db/unavailable.ts';
import { noteReceipt } from '../observe/log-context.ts';
import { countCall } from '../observe/metrics.ts';
import { annotate, inSpan } from '../observe/trace.ts';

/** A call as `POST /v0/calls` takes it (gateway §5); `max_cost` is a decimal string in the mandate's currency. */
export interface CallRequest {
  mandate: string;
  agent?: string;
  capability?: string;
  input: unknown;
  max_cost?: string;
}

/** The run a downstream call is made from (gateway §3). */
interface ParentRun {
  receipt: string;
  orchestrator: ListedAgent;
  /** The derived sub-mandate the downstream calls run under. */
  sub: StoredMandate;
  /** Who pays the downstream calls: the original payer (`passthrough`) or the orchestrator's account (`included`). */
  payer: string;
  mode: 'passthrough' | 'included';
}

/** The answer of a call: the HTTP status of gateway §5 and the body. */
export interface CallResult {
  http: 200 | 202 | 403 | 404 | 422 | 502 | 503;
  receipt: Receipt;
  output?: unknown;
  error?: ReceiptError;
  approval?: ApprovalRow;
  /** What the payer paid for this call and its passthrough downstream calls. */
  total_micros: Micros;
  /** Seconds the caller should wait before trying again (`Retry-After`), on a 503 that will pass. */
  retry_after_s?: number;
  /** The call's phases as a `Server-Timing` value, when the gateway records them (`server-timing.ts`); root calls only. */
  server_timing?: string;
}

/**
 * Written in every transaction that writes a call's receipt, with the HTTP status the call will
 * answer (null while it runs), so what a composition records about the call (the hosted
 * gateway's idempotency claim, gateway §7 "Idempotent calls") is committed with the receipt or
 * not at all. Throwing refuses the write: the transaction rolls back and the error leaves `call`.
 */
export type ReceiptRecorder = (trx: Knex.Transaction, receipt: Receipt, http: CallResult['http'] | null) => Promise<void>;

/** Options of one call. */
export interface CallOptions {
  parent?: ParentRun;
  /** Reuse this receipt id (the held receipt of an approval being run). */
  receipt?: string;
  /** The approval this run was granted by. */
  approved?: ApprovalRow;
  /** Recorded with this call's receipt (not its downstream calls'). */
  record?: ReceiptRecorder;
}

/** What the gateway needs to run calls. */
export interface GatewayDeps {
  db: Knex;
  registry: Registry;
  clearing: ClearingPort;
  outbox: Outbox;
  /** The runtime that runs `agent` (a published agent's goes through the hosted gateway's guarded client). */
  runtimeFor: (agent: ListedAgent) => Runtime;
  /** The author's endpoint credential sent to `agent` (gateway §6 "Authentication"), or null. */
  credentialFor: (agent: ListedAgent) => Promise<string | null>;
  logger: Logger;
  /** This gateway's id (`gateway_identity`), part of every transaction and hold id it gives the binding. */
  gateway_id: string;
  /** This process's lease id (`gateway_processes`), recorded on every call it runs (issue 12 §4). */
  process_id: number;
  /** Record each root call's phases for a `Server-Timing` header (`HOLON_SERVER_TIMING`); default off. */
  server_timing?: boolean;
  /** Signs every receipt tree the gateway answers (issue 23 §2): the gateway's key, listed at `/.well-known/jwks.json`. */
  signer: Signer;
}

/**
 * What a composition that keeps files (the hosted gateway, gateway §7 "Files") gives the call
 * pipeline: the signed links for the `holon://files/…` handles of an input, when `owner` (the
 * issuer of the call's root mandate) owns every one; else the refusal, whose code the receipt
 * carries (`file_not_found`, `too_many_files`), never billed.
 */
export type FileAttacher = (input: unknown, owner: string) => Promise<FilesAttached>;

/** The answer of a {@link FileAttacher}: the links keyed by handle, or why the call is refused. */
export type FilesAttached = { ok: true; links: Record<string, FileLink> } | { ok: false; code: 'file_not_found' | 'too_many_files'; message: string };

/** How long a hold outlives the run's timeout, so settlement can draw on it after a slow finish. */
const HOLD_MARGIN_MS = 10 * 60 * 1000;

/** How long a call whose closing commit's answer was lost waits for the database to say whether it committed, in milliseconds (issue 27 §2). */
export const LOST_ANSWER_WAIT_MS = 15_000;

/** How often it asks meanwhile, in milliseconds. */
const LOST_ANSWER_RETRY_MS = 250;

/** SQLSTATE foreign_key_violation. */
const FOREIGN_KEY_VIOLATION = '23503';

/** The answer of a call whose receipt restart recovery closed before the call could: 502 with that receipt, nothing billed (issue 12 §4). */
function closedByRecovery(closed: Receipt): CallResult {
  return { http: 502, receipt: closed, error: closed.error ?? undefined, total_micros: 0 };
}

/** The state of a call while its steps run. */
interface Call {
  id: string;
  started_ms: number;
  request: CallRequest;
  options: CallOptions;
  mandate: StoredMandate;
  receipt: Receipt;
  max_cost_micros: Micros | null;
  agent?: ListedAgent;
  worst?: Extract<WorstCase, { ok: true }>;
  /** The input's file links (gateway §6 `_meta["holon/files"]`). */
  files?: Record<string, FileLink>;
  /** The phases' wall times, when recorded (a root call under `server_timing`). */
  clock: PhaseClock | null;
}

/** A refusal that ends a call before it runs: its receipt status, HTTP status and error. */
class Stop extends Error {
  constructor(
    readonly status: Receipt['status'],
    readonly http: CallResult['http'],
    readonly code: GatewayErrorCode,
    message: string,
    readonly retry_after_s?: number,
  ) {
    super(message);
  }
}

/** Runs one named stage of gateway §1 (`resolve`, `check input`, `admit`, `reserve`, `run`, `check output`, `settle`) in its span. */
function stage<T>(name: string, work: () => Promise<T> | T): Promise<T> {
  return inSpan(name, { attributes: { 'holon.stage': name } }, work);
}

/** A request's `max_cost` in micro-units: null when absent, undefined when malformed (it then matches no approval). */
function maxCostMicros(max_cost: string | undefined): Micros | null | undefined {
  if (max_cost === undefined) return null;
  try {
    return parseMoney(max_cost, 'max_cost');
  } catch {
    return undefined;
  }
}

/** The gateway's call pipeline. */
export class Gateway {
  /** Set by the hosted composition ({@link useFiles}); absent, file handles are plain strings. */
  private files: FileAttacher | null = null;
  /** This process's writes on mandate rows, grouped per mandate (issue 21 §2). */
  private readonly groups: MandateWriteGroups;
  private readonly receiptIds: ReceiptIds;
  /** The root mandates this process read, kept a few seconds (issue 21 §1). */
  private readonly mandates: MandateCache;

  constructor(private readonly deps: GatewayDeps) {
    this.groups = new MandateWriteGroups(deps.db);
    this.receiptIds = new ReceiptIds(deps.db);
    this.mandates = new MandateCache(deps.db);
  }

  /** Makes every call check and link the files its input names (gateway §7 "Files"); set once, before the gateway serves. */
  useFiles(attacher: FileAttacher): void {
    this.files = attacher;
  }

  /** This process's lease id: the owner recorded on the calls it runs. */
  get process_id(): number {
    return this.deps.process_id;
  }

  /** The measured record of `ids` (or every agent), read from the database: the same in every process. */
  measured(ids?: readonly string[]): ReturnType<typeof readMeasured> {
    return readMeasured(this.deps.db, ids);
  }

  /** The identity of a call's work at the binding: `<gateway>:<receipt>` (clearing-contract §9, §13). */
  work(receipt: string): string {
    return `${this.deps.gateway_id}:${receipt}`;
  }

  /**
   * Runs one call through every step of gateway §1 and answers with its receipt. Throws
   * HttpError 404 `no_such_mandate` when the mandate does not exist (there is nothing to write a
   * receipt under), and for a derived sub-mandate named by anyone but the open run it was
   * derived for (gateway §3, issue 8 §1.1); every other outcome is a `CallResult`.
   */
  async call(request: CallRequest, options: CallOptions = {}): Promise<CallResult> {
    // One span per call (issue 22 §2), its stages below it; ids, agent, outcome and cost only, never input or output (§4).
    return inSpan('holon call', { attributes: { 'holon.mandate': request.mandate } }, async () => {
      const result = await this.callOnce(request, options);
      const { receipt } = result;
      const own_micros = receipt.billed ? parseMoney(receipt.cost.own) : 0;
      countCall({ status: receipt.status, code: receipt.error?.code ?? null, agent: receipt.agent, own_micros, currency: receipt.currency });
      annotate({ 'holon.agent': receipt.agent ?? '', 'holon.outcome': receipt.status, 'holon.cost': receipt.cost.total, 'holon.currency': receipt.currency, ...(receipt.error ? { 'error.type': receipt.error.code } : {}) });
      return result;
    });
  }

  /** {@link call}'s steps, inside its span. */
  private async callOnce(request: CallRequest, options: CallOptions): Promise<CallResult> {
    const clock = this.deps.server_timing && !options.parent ? new PhaseClock() : null;
    const derived = options.parent?.sub;
    const loaded = derived?.id === request.mandate ? null : await this.mandates.get(request.mandate);
    const mandate = loaded ?? (derived?.id === request.mandate ? derived : null);
    if (!mandate) throw new HttpError(404, 'no_such_mandate', `there is no mandate ${request.mandate}: check its id (issuer/name) against the mandates you were given`);
    const id = options.receipt ?? (await this.receiptIds.next(this.deps.process_id));
    noteReceipt(id);
    annotate({ 'holon.receipt.id': id });
    clock?.mark('mandate');
    const call: Call = {
      id,
      clock,
      started_ms: Date.now(),
      request,
      options,
      mandate,
      max_cost_micros: null,
      receipt: {
        id,
        parent: options.parent?.receipt ?? null,
        mandate: mandate.id,
        caller: mandate.mandate.grantee,
        agent: null,
        capability: request.capability ?? null,
        status: 'running',
        approval: options.approved?.id ?? null,
        worst_case: null,
        currency: mandate.mandate.budget.currency,
        payer: options.parent?.payer ?? mandate.payer,
        sub_mandate: null,
        billed: false,
        cost: costView(0, 0),
        splits: [],
        children: [],
        duration_ms: 0,
        error: null,
        created_at: now(),
      },
    };
    const result = await this.steps(call);
    if (clock) result.server_timing = clock.header();
    return result;
  }

  /**
   * The steps of gateway §1 after the mandate read: a refusal (`Stop`) ends them with its receipt.
   * A run under an approval is first matched against it ({@link checkApproved}), before anything
   * is written under the approval's held receipt.
   */
  private async steps(call: Call): Promise<CallResult> {
    if (call.options.approved) this.checkApproved(call.request, call.options.approved);
    try {
      this.parseRequest(call);
      await stage('resolve', () => this.resolve(call));
      await stage('check input', () => {
        this.checkInput(call);
        return this.files ? this.checkFiles(this.files, call) : undefined;
      });
      const pending = await stage('admit', () => this.admit(call));
      if (pending) return pending;
      return await this.reserveAndRun(call);
    } catch (error) {
      if (!(error instanceof Stop)) throw error;
      return this.stop(call, error);
    }
  }

  /**
   * Writes the receipt of a call refused before it ran (nothing reserved, nothing billed); the
   * agent never ran, so its measured record (`call_events`) does not count it.
   */
  private async stop(call: Call, stop: Stop): Promise<CallResult> {
    call.receipt.status = stop.status;
    call.receipt.error = { code: stop.code, message: stop.message };
    call.receipt.duration_ms = Date.now() - call.started_ms;
    await this.writeCall(call, stop.http, SAVE_RECEIPT, receiptParams(call.receipt, this.rootMandate(call), { measured: false }));
    return { http: stop.http, receipt: call.receipt, error: call.receipt.error, total_micros: 0, ...(stop.retry_after_s === undefined ? {} : { retry_after_s: stop.retry_after_s }) };
  }

  private rootMandate(call: Call): string {
    return rootMandateOf(call.mandate.id);
  }

  /**
   * Runs `write`, one statement that writes the call's receipt with whatever goes with it, and,
   * in the same transaction, what `options.record` records with the receipt. The transaction is
   * `within` when the caller writes more in it (the approval and its held receipt), else a new
   * one; without a recorder nor `within` the statement is its own transaction (one round trip),
   * or, for a write on the mandate's row ({@link MANDATE_WRITES}) while another of the same
   * mandate is at the database, one of a group's transaction (`mandate-groups.ts`). Answers the row `write` answered when the receipt was written, else null (and nothing is
   * recorded).
   */
  private async writeCall<P extends string>(
    call: Call,
    http: CallResult['http'] | null,
    write: NamedStatement<P>,
    params: Record<P, unknown>,
    within?: Knex.Transaction,
  ): Promise<Record<string, any> | null> {
    const { db } = this.deps;
    const values = write.values(params);
    const record = call.options.record;
    if (!record && !within) {
      const rows = MANDATE_WRITES.has(write.statement) ? await this.groups.write(call.mandate.id, write.statement, values) : await rawQuery(db, write.statement, values);
      return rows[0] ?? null;
    }
    const inTransaction = async (trx: Knex.Transaction) => {
      const [row] = await transactionRunner(trx)(write.statement, values);
      if (!row) return null;
      await record?.(trx, call.receipt, http);
      return row;
    };
    return within ? inTransaction(within) : db.transaction(inTransaction);
  }

  /** Exactly one of `agent` and `capability`; `max_cost` a decimal string. 422 `invalid_request` otherwise. */
  private parseRequest(call: Call): void {
    const { agent, capability, max_cost } = call.request;
    if ((agent === undefined) === (capability === undefined)) {
      throw new Stop('rejected_input', 422, 'invalid_request', 'a call names exactly one of agent and capability');
    }
    if (max_cost !== undefined) {
      try {
        call.max_cost_micros = parseMoney(max_cost, 'max_cost');
      } catch (error) {
        throw new Stop('rejected_input', 422, 'invalid_request', (error as Error).message);
      }
    }
  }

  /**
   * §1 "Resolve": a name picks the highest listed version in range; a capability, the best
   * implementer the mandate allows. A run under an approval runs the exact version approved
   * (the request was matched against it first: {@link checkApproved}).
   */
  private async resolve(call: Call): Promise<void> {
    const { registry } = this.deps;
    const ref = call.options.approved?.agent ?? call.request.agent;
    if (ref !== undefined) {
      let listed: ListedAgent | null;
      try {
        listed = registry.resolve(ref);
      } catch (error) {
        throw new Stop('rejected_input', 422, 'invalid_request', (error as Error).message);
      }
      if (!listed) throw new Stop('denied', 404, 'no_such_agent', registry.missing(ref));
      call.agent = listed;
    } else {
      call.agent = await this.bestImplementer(call, call.request.capability!);
    }
    call.receipt.agent = agentRef(call.agent.loaded.manifest);
  }

  /**
   * Ranks every implementer of `capability` by cost per successful run (its worst case over
   * `rankingRate`) and takes the cheapest the mandate admits, skipping those that do not fit the
   * delegation slot. Ties go to the lower id.
   */
  private async bestImplementer(call: Call, capability: string): Promise<ListedAgent> {
    const candidates = this.deps.registry.implementers(capability);
    if (candidates.length === 0) throw new Stop('denied', 404, 'no_such_agent', `no listed agent implements ${capability}`);
    const measured = await this.measured(candidates.map((agent) => agent.loaded.manifest.id));
    const ranked: Array<{ agent: ListedAgent; score: number }> = [];
    let first: string | null = null;
    for (const agent of candidates) {
      const wc = worstCase(agent.loaded.manifest, call.mandate.mandate.budget, call.max_cost_micros);
      const refusal = wc.ok ? this.slotRefusal(call, agent, wc.worst_case_micros, capability) : null;
      const admission = checkCall(call.mandate.mandate, agent.loaded.manifest, wc, this.context(call, capability, agent, Number.MAX_SAFE_INTEGER));
      const reason = refusal ?? (admission.decision === 'deny' ? admission.reason : null);
      if (reason !== null) {
        first ??= reason;
        continue;
      }
      ranked.push({ agent, score: (wc as { worst_case_micros: number }).worst_case_micros / rankingRate(measured, agent.loaded.manifest.id) });
    }
    if (ranked.length === 0) throw new Stop('denied', 403, 'no_allowed_implementer', `no implementer of ${capability} is allowed: ${first}`);
    ranked.sort((a, b) => a.score - b.score || a.agent.loaded.manifest.id.localeCompare(b.agent.loaded.manifest.id));
    return ranked[0].agent;
  }

  /** §1 step 3: the input against `interface.input` (patterns on RE2). Rejected: nothing reserved or billed. */
  private checkInput(call: Call): void {
    const problems = call.agent!.loaded.check.input(call.request.input);
    if (problems) throw new Stop('rejected_input', 422, 'rejected_input', `the input does not match ${call.receipt.agent}'s interface: ${problems.join('; ')}`);
  }

  /**
   * Gateway §7 "Files": a caller passes only its own files, the owner being the issuer of the
   * root mandate, delegated calls included. Checked before admission (nothing is held for
   * approval with someone else's file) and again when an approved call runs, which also signs
   * fresh links. Someone else's, a deleted or an unknown file: the call fails 404
   * `file_not_found` (receipt `failed`: §7 "the call fails with `file_not_found`"; 404 as for
   * anything out of the caller's scope), never billed, the agent never called. More handles than
   * the bound: 422 `too_many_files`, `rejected_input` like any input the gateway refuses.
   */
  private async checkFiles(files: FileAttacher, call: Call): Promise<void> {
    const root = this.rootMandate(call);
    const issuer = root === call.mandate.id ? call.mandate.mandate.issuer : (await this.mandates.get(root))!.mandate.issuer;
    const attached = await files(call.request.input, issuer);
    if (!attached.ok) throw attached.code === 'file_not_found' ? new Stop('failed', 404, attached.code, attached.message) : new Stop('rejected_input', 422, attached.code, attached.message);
    call.files = attached.links;
  }

  private context(call: Call, capability: string | null, agent: ListedAgent, remaining_micros: Micros) {
    return { now_ms: Date.now(), remaining_micros, capability, published: agent.published, delegated: call.options.parent !== undefined };
  }

  /** Inside a delegated run: the call must match a declared `calls` entry and its worst case fit that entry's `max_cost` (§3). */
  private slotRefusal(call: Call, agent: ListedAgent, worst_case_micros: Micros, capability: string | null): string | null {
    const parent = call.options.parent;
    if (!parent) return null;
    const { id, version } = agent.loaded.manifest;
    const slot = slotFor(parent.orchestrator.loaded.manifest, call.mandate, { id, version, capability });
    if (!slot) return `${agentRef(parent.orchestrator.loaded.manifest)} declares no call to ${capability ?? `${id}@${version}`}`;
    if (worst_case_micros > slot.max_cost_micros) {
      return `worst case ${formatMoney(worst_case_micros)} of ${id}@${version} exceeds the declared max_cost ${formatMoney(slot.max_cost_micros)} ${call.receipt.currency}`;
    }
    return null;
  }

  /**
   * §1 "Admit": checkCall against what remains of the budget. `deny` stops with 403; `approve`
   * holds the call as a pending approval (202) unless this is the run of an approved approval
   * (matched against it before any step: {@link checkApproved}).
   *
   * What remains is read only when the answer depends on it beyond "allow" (issue 21 §1: no
   * read on a billed call's path). An allowed call's worst case is checked against the budget
   * where it is reserved, under the mandate row's lock, and refused there with the same 403
   * `over_budget`; a call that would be held for approval, or refused, is checked against the
   * figures first, so a call over budget is refused, not held. A refusal that comes between
   * admission and the reservation goes through {@link refuse}, which reads the figures first.
   */
  private async admit(call: Call): Promise<CallResult | null> {
    const agent = call.agent!;
    const manifest = agent.loaded.manifest;
    const wc = worstCase(manifest, call.mandate.mandate.budget, call.max_cost_micros);
    const admitWith = (remaining_micros: Micros) => checkCall(call.mandate.mandate, manifest, wc, this.context(call, call.request.capability ?? null, agent, remaining_micros));
    let admission: Admission = admitWith(Number.MAX_SAFE_INTEGER);
    if (admission.decision !== 'allow') admission = admitWith((await this.figures(call)).remaining_micros);
    if (wc.ok) call.receipt.worst_case = formatMoney(wc.worst_case_micros);
    if (admission.decision === 'deny') throw new Stop('denied', 403, admission.code, admission.reason);
    const worst = wc as Extract<WorstCase, { ok: true }>;
    call.worst = worst;
    const slot = this.slotRefusal(call, agent, worst.worst_case_micros, call.request.capability ?? null);
    if (slot !== null) await this.refuse(call, new Stop('denied', 403, 'outside_declared_calls', slot));
    if (admission.decision === 'approve' && call.options.approved?.status !== 'approved') {
      // The approval and its held receipt in one transaction: neither exists without the other.
      const approval = await this.deps.db.transaction(async (trx) => {
        const created = await createApproval(trx, {
          mandate: call.mandate.id,
          agent: call.receipt.agent!,
          input: call.request.input,
          max_cost_micros: call.max_cost_micros,
          worst_case_micros: worst.worst_case_micros,
          reason: admission.reason,
          receipt: call.id,
        });
        call.receipt.status = 'pending_approval';
        call.receipt.approval = created.id;
        call.receipt.duration_ms = Date.now() - call.started_ms;
        await this.writeCall(call, 202, SAVE_RECEIPT, receiptParams(call.receipt, this.rootMandate(call)), trx);
        return created;
      });
      return { http: 202, receipt: call.receipt, approval, total_micros: 0 };
    }
    return null;
  }

  /**
   * Throws HttpError 409 `approval_mismatch` unless `request` is the call `approval` holds (§1
   * "Admit", §7 "Approvals": bound to the mandate, the exact agent version, the input's hash and
   * `max_cost`): the same mandate, an `agent` whose range admits the approved version (or a
   * `capability` it implements), an input with the same canonical hash (`inputHash`), and the
   * same `max_cost` in micro-units (or none on both). The sentence names every difference.
   * Reads and writes nothing, so a refused call leaves the approval (and a grant) as it was.
   */
  checkApproved(request: CallRequest, approval: ApprovalRow): void {
    const differences: string[] = [];
    if (request.mandate !== approval.mandate) differences.push(`it is under mandate ${approval.mandate}, this call names ${request.mandate}`);
    if (!this.namesApproved(request, approval)) differences.push(`it is for ${approval.agent}, this call names ${request.agent ?? request.capability ?? 'no agent'}`);
    const hash = inputHash(request.input);
    if (hash !== approval.input_sha256) differences.push(`it is for the input with SHA-256 ${approval.input_sha256}, this input's is ${hash}`);
    if (maxCostMicros(request.max_cost) !== approval.max_cost_micros) {
      differences.push(`it is for max_cost ${approval.max_cost_micros === null ? 'none' : formatMoney(approval.max_cost_micros)}, this call sends ${request.max_cost ?? 'none'}`);
    }
    if (differences.length === 0) return;
    throw new HttpError(
      409,
      'approval_mismatch',
      `approval ${approval.id} was given for another call: ${differences.join('; ')}. Nothing ran and the approval is unchanged: send the call it holds with approval ${approval.id}, or this call without approval to ask again`,
    );
  }

  /** Whether the request's `agent` range admits the approved version, or its `capability` is one the approved version implements. */
  private namesApproved(request: CallRequest, approval: ApprovalRow): boolean {
    const { id, range: version } = parseAgentRef(approval.agent);
    if (request.agent !== undefined && request.capability === undefined) {
      try {
        return parseAgentRef(request.agent).id === id && resolveVersion(request.agent, [version!]) === version;
      } catch {
        return false;
      }
    }
    if (request.capability !== undefined && request.agent === undefined) return this.deps.registry.manifestOf(approval.agent)?.capabilities.includes(request.capability) ?? false;
    return false;
  }

  /**
   * §1 "Reserve" then everything after: the worst case in the mandate's budget (a row, under a
   * lock on the mandate) and a hold on the payer's account; then run, check output, settle.
   * A passthrough downstream call opens no hold: the orchestrator's hold already covers its cap.
   */
  private async reserveAndRun(call: Call): Promise<CallResult> {
    const { clearing } = this.deps;
    const manifest = call.agent!.loaded.manifest;
    const worst = call.worst!;
    const parent = call.options.parent;
    const holdId = parent?.mode === 'passthrough' || worst.worst_case_micros === 0 ? null : `hold:${this.work(call.id)}`;
    const backlog = worst.worst_case_micros > 0 ? await this.backlogRefusal() : null;
    if (backlog) await this.refuse(call, backlog);

    let subDocument: Record<string, any> | null = null;
    if (manifest.calls.length > 0) {
      const budget_micros = subBudget(call.mandate, manifest, worst.listed_micros, worst.worst_case_micros);
      subDocument = deriveSubMandate(call.mandate, manifest, call.id, budget_micros);
      const widening = checkAttenuation(call.mandate.mandate, validateMandate(subDocument));
      if (widening) await this.refuse(call, new Stop('denied', 403, 'attenuation', `the sub-mandate of ${call.receipt.agent} would widen ${call.mandate.id}: ${widening.field}: ${widening.reason}`));
      call.receipt.sub_mandate = subDocument.id;
    }

    const payer = manifest.downstream?.mode === 'included' ? manifest.id.split('/')[0] : call.receipt.payer;
    const { stored: sub, params: subParams } = subMandateParams(subDocument ? { document: subDocument, parent: call.mandate.id, payer } : null);
    call.clock?.mark('admit');
    const reserved = await stage('reserve', () =>
      this.writeCall(call, null, RESERVE_CALL, {
        ...reserveParams(call.mandate, call.id, worst.worst_case_micros),
        ...subParams,
        ...receiptParams(call.receipt, this.rootMandate(call), { running: { hold_id: holdId, process: this.deps.process_id } }),
      }),
    );
    call.clock?.mark('reserve');
    if (!reserved) throw this.overBudget(call, await this.figures(call));

    if (holdId) {
      const expires = new Date(Date.now() + manifest.runtime.timeout_s * 1000 + HOLD_MARGIN_MS);
      try {
        await clearing.openHold(holdId, call.receipt.payer, worst.worst_case_micros, expires, call.id);
      } catch (error) {
        const refused = error instanceof ClearingRefused;
        // Unreachable means the outcome is unknown (the answer may be what was lost): the hold may
        // exist, so its release is queued like any other (issue 8 §1.3); release is idempotent.
        await this.abandon(call, refused ? null : { holdId, unknown_until: expires });
        throw refused
          ? new Stop('denied', 403, error.code === 'insufficient_funds' ? 'insufficient_funds' : 'hold_refused', (error as Error).message)
          : new Stop('failed', 503, 'clearing_unavailable', `${(error as Error).message}; nothing was reserved or billed, try again shortly`);
      }
    }

    if (holdId) call.clock?.mark('hold');
    try {
      return await this.runAndSettle(call, sub, holdId);
    } catch (error) {
      this.deps.logger.error({ err: error, receipt: call.id }, 'gateway error during a call');
      await this.abandon(call, holdId === null ? null : { holdId });
      // A failed closing transaction may have filled in the charge already: none of it was written.
      Object.assign(call.receipt, { status: 'failed', billed: false, splits: [], cost: costView(0, parseMoney(call.receipt.cost.downstream)) });
      call.receipt.error = { code: 'gateway_error', message: 'the gateway failed while running this call; nothing was billed and the hold was released' };
      call.receipt.duration_ms = Date.now() - call.started_ms;
      // Fenced like the finish: a receipt restart recovery (or a closing commit whose answer was lost) closed stays as it is.
      if (await this.writeCall(call, 502, SAVE_RECEIPT, receiptParams(call.receipt, this.rootMandate(call), { only_running: true }))) {
        return { http: 502, receipt: call.receipt, error: call.receipt.error, total_micros: 0 };
      }
      const closed = (await readReceipt(this.deps.db, call.id))!;
      const answer: ReceiptError = closed.billed
        ? { code: 'gateway_error', message: `the call ${closed.status} and was billed, but the gateway lost its answer while writing it; receipt ${closed.id} has what was charged` }
        : (closed.error ?? call.receipt.error);
      return { http: 502, receipt: closed, error: answer, total_micros: 0 };
    }
  }

  /**
   * The receipt of a call whose closing statement's answer was lost, read durably
   * (`readReceiptDurably`: never from an old primary's commits the new one will not have), tried
   * for up to {@link LOST_ANSWER_WAIT_MS} while the database cannot answer (a failover: the engine
   * promotes the standby in seconds), every {@link LOST_ANSWER_RETRY_MS}; null when it never could.
   */
  private async readAfterLostAnswer(id: string): Promise<Receipt | null> {
    const until = Date.now() + LOST_ANSWER_WAIT_MS;
    for (;;) {
      try {
        return await readReceiptDurably(this.deps.db, id, Math.max(until - Date.now(), LOST_ANSWER_RETRY_MS));
      } catch {
        if (Date.now() + LOST_ANSWER_RETRY_MS > until) return null;
        await sleep(LOST_ANSWER_RETRY_MS);
      }
    }
  }

  /** What remains of the call's mandate's budget now (one read; only a call refused, or to be held, needs it: {@link admit}). */
  private figures(call: Call): Promise<BudgetFigures> {
    return budgetOf(this.deps.db, call.mandate.id, call.mandate.mandate.budget.total_micros);
  }

  /** The refusal 403 `over_budget` of a call whose worst case exceeds what remains of its mandate's budget (`figures`, as read). */
  private overBudget(call: Call, figures: BudgetFigures): Stop {
    const { currency } = call.receipt;
    return new Stop('denied', 403, 'over_budget', `worst case ${formatMoney(call.worst!.worst_case_micros)} ${currency} exceeds the remaining budget ${formatMoney(figures.remaining_micros)} ${currency} of mandate ${call.mandate.id}; its issuer can grant a larger budget (GET /v0/mandates/{id} shows what is spent and reserved)`);
  }

  /**
   * Throws `refusal`, a refusal after admission (a delegation slot, the settlement backlog, a
   * widening sub-mandate), unless the call is over budget: then 403 `over_budget`, as gateway §1
   * "Admit" answers before anything else. An allowed call's budget is checked where it is
   * reserved ({@link admit}: no read on its path), so a refusal before that reads the figures
   * first; only a refused call pays for the read.
   */
  private async refuse(call: Call, refusal: Stop): Promise<never> {
    const figures = await this.figures(call);
    throw call.worst!.worst_case_micros > figures.remaining_micros ? this.overBudget(call, figures) : refusal;
  }

  /**
   * Issue 12 §3: a call that may be charged adds settlement intents; while more than the outbox's
   * `max_pending` are waiting to be posted, it is refused 503 `settlement_backlog` with
   * `Retry-After`, before anything is reserved, so the backlog stays bounded under any load.
   * Answers that refusal, or null.
   */
  private async backlogRefusal(): Promise<Stop | null> {
    const backlog = await this.deps.outbox.backlog();
    if (!backlog) return null;
    return new Stop(
      'failed',
      503,
      'settlement_backlog',
      `${backlog.pending} settlements are waiting to be posted, more than the bound of ${backlog.max_pending} (HOLON_OUTBOX_MAX_PENDING); nothing was reserved or billed, try again in ${BACKLOG_RETRY_AFTER_S} s`,
      BACKLOG_RETRY_AFTER_S,
    );
  }

  /**
   * Releases a call's reservation and, through the outbox, its hold: nothing was billed.
   * `unknown_until`: whether open-hold took effect is unknown, and the hold would expire then.
   */
  private async abandon(call: Call, hold: { holdId: string; unknown_until?: Date } | null): Promise<void> {
    // Again after a deadlock: restart recovery may be closing another call of the same mandate.
    await inTransaction(this.deps.db, async (trx) => {
      await closeReservation(trx, call.id, null);
      if (hold) {
        const body = { holdId: hold.holdId, reason: 'call ended without a charge', ...(hold.unknown_until ? { unknown_until: hold.unknown_until.toISOString() } : {}) };
        await this.deps.outbox.write(trx, [{ operation: 'release-hold', receipt: call.id, body }]);
      }
    }).catch((error: unknown) => {
      // The intent's receipt is gone: a failover to a standby that never got the reservation
      // (asynchronous replication) lost this call. Unavailable, not a bug; its hold, if the binding
      // opened one, ends at its expiry.
      if ((error as { code?: string }).code === FOREIGN_KEY_VIOLATION) throw new DatabaseUnavailable(`the database no longer holds call ${call.id}: a failover lost its reservation`);
      throw error;
    });
    if (hold) this.deps.outbox.postReceipt(call.id);
  }

  /** §1 steps 5 to 8: run with the hard timeout, check output, settle, finalize the receipt. */
  private async runAndSettle(call: Call, sub: StoredMandate | null, holdId: string | null): Promise<CallResult> {
    const agent = call.agent!;
    const manifest = agent.loaded.manifest;
    const worst = call.worst!;
    const children: Array<Promise<CallResult>> = [];
    // The sub-mandate is usable only while this run is open (issue 8 §1.1): a call made after the
    // run ended would escape the settlement below, which counts it against the root mandate.
    let open = true;
    const delegate: Delegate = async (target, input, options) => {
      if (!sub) throw new Error(`${call.receipt.agent} declares no calls: it cannot delegate`);
      if (!open) throw new Error(`the run of ${call.receipt.agent} has ended: its sub-mandate ${sub.id} takes no more calls`);
      const request: CallRequest = { mandate: sub.id, input, ...(typeof target === 'string' ? { agent: target } : target), ...(options?.max_cost ? { max_cost: options.max_cost } : {}) };
      const mode = manifest.downstream?.mode === 'included' ? 'included' : 'passthrough';
      // Registered before the first await, so a run that times out meanwhile still waits for this call (§3).
      const pending = this.receiptIds.next(this.deps.process_id).then((id) => {
        call.receipt.children.push(id);
        return this.call(request, { receipt: id, parent: { receipt: call.id, orchestrator: agent, sub: sub!, payer: sub!.payer, mode } });
      });
      children.push(pending);
      const result = await pending;
      const receipt = result.receipt.id;
      return result.http === 200
        ? { ok: true, output: result.output, receipt }
        : { ok: false, error: result.error ?? { code: result.receipt.status, message: result.receipt.status }, receipt };
    };

    const credential = await this.deps.credentialFor(agent);
    const signal = AbortSignal.timeout(manifest.runtime.timeout_s * 1000);
    // Delegated calls start inside this span: they are its children (issue 22 §2).
    const outcome: RunOutcome = await stage('run', () =>
      this.deps.runtimeFor(agent).run({
        target: { id: manifest.id, version: manifest.version, runtime: { kind: manifest.runtime.kind, endpoint: manifest.runtime.endpoint ?? undefined, tool: manifest.runtime.tool ?? undefined }, dir: agent.dir ?? undefined },
        input: call.request.input,
        call_id: call.id,
        max_cost: worst.agent_cap ? { amount: formatMoney(worst.agent_cap.amount_micros), currency: worst.agent_cap.currency } : null,
        credential,
        files: call.files,
        signal,
        delegate,
      }),
    );
    open = false;
    // §3: a run is not settled until all its downstream calls have, including those still in flight after a timeout.
    const settledChildren = await Promise.all(children);
    call.clock?.mark('run');
    // What this call's payer paid for them: passthrough children only (an `included` orchestrator pays its own).
    const downstream_micros = settledChildren.filter((child) => child.receipt.payer === call.receipt.payer).reduce((sum, child) => sum + child.total_micros, 0);

    const { billing, error, output } = await stage('check output', () => this.judge(outcome, agent));
    let own_micros = 0;
    try {
      own_micros = chargeFor(manifest, billing, { units: outcome.kind === 'failure' || outcome.units === null ? [] : [outcome.units], quote: outcome.kind === 'failure' ? null : outcome.quote }, call.mandate.mandate.budget, call.max_cost_micros).cost_micros;
    } catch (failure) {
      if (!(failure instanceof ContractError)) throw failure;
      return stage('settle', () => this.finish(call, holdId, { own_micros: 0, downstream_micros, error: { code: 'agent_error', message: failure.message }, succeeded: false }));
    }
    return stage('settle', () => this.finish(call, holdId, { own_micros, downstream_micros, error, output, succeeded: error === null }));
  }

  /** The run's outcome as billing and the receipt see it (gateway §2 table, §1 step 6). */
  private judge(outcome: RunOutcome, agent: ListedAgent): { billing: Outcome; error: ReceiptError | null; output?: unknown } {
    if (outcome.kind === 'failure') return { billing: { kind: 'failed' }, error: { code: outcome.code, message: outcome.message } };
    if (outcome.kind === 'error') {
      // An agent reporting one of the gateway's own codes would make its receipt lie about who failed: it is an agent error.
      if (GATEWAY_ERROR_CODES.has(outcome.code)) return { billing: { kind: 'failed' }, error: { code: 'agent_error', message: `the agent reported the gateway's own code ${outcome.code}: ${outcome.message}` } };
      return { billing: { kind: 'agent_error', code: outcome.code }, error: { code: agentCode(outcome.code), message: outcome.message } };
    }
    const problems = agent.loaded.check.output(outcome.output);
    if (problems) return { billing: { kind: 'failed' }, error: { code: 'invalid_output', message: `the output does not match ${agentRef(agent.loaded.manifest)}'s interface: ${problems.join('; ')}` } };
    return { billing: { kind: 'output_valid' }, error: null, output: outcome.output };
  }

  /**
   * §1 "Settle" and the receipt, in one database transaction: the receipt, the budget
   * reservation closed at what was spent, the measured record, and the settlement intents (the
   * charge split into fee, creator share and royalties; the hold's release), posted afterwards.
   */
  private async finish(
    call: Call,
    holdId: string | null,
    result: { own_micros: Micros; downstream_micros: Micros; error: ReceiptError | null; output?: unknown; succeeded: boolean },
  ): Promise<CallResult> {
    const manifest = call.agent!.loaded.manifest;
    const chain = lineageChain(manifest, (ref) => this.deps.registry.manifestOf(ref));
    const split = splitCharge(result.own_micros, chain);
    const intents: Intent[] = [];
    if (result.own_micros > 0) {
      intents.push({
        operation: 'settle',
        receipt: call.id,
        body: { txnId: `settle:${this.work(call.id)}`, caller: call.receipt.payer, owner: split.levels[0].account, retail: result.own_micros, rate: result.own_micros - split.platform_fee_micros, ref: call.id, memo: call.receipt.agent! },
      });
      split.levels.forEach((level, index) => {
        if (level.royalty_micros === 0) return;
        intents.push({
          operation: 'settle',
          receipt: call.id,
          body: { txnId: `royalty:${this.work(call.id)}:${index + 1}`, caller: level.account, owner: split.levels[index + 1].account, retail: level.royalty_micros, rate: level.royalty_micros, ref: call.id, memo: `royalty to ${split.levels[index + 1].agent}` },
        });
      });
    }
    if (holdId) intents.push({ operation: 'release-hold', receipt: call.id, body: { holdId, reason: 'call settled' } });

    Object.assign(call.receipt, {
      status: result.succeeded ? 'succeeded' : 'failed',
      billed: result.own_micros > 0,
      cost: costView(result.own_micros, result.downstream_micros),
      splits: result.own_micros > 0 ? splitLines(split).map((line) => ({ to: line.to, amount: formatMoney(line.amount_micros) })) : [],
      error: result.error,
      duration_ms: Date.now() - call.started_ms,
    });
    const total_micros = result.own_micros + result.downstream_micros;
    const http = result.succeeded ? 200 : 502;
    // Fenced (issue 12 §4): a receipt no longer `running` was closed by restart recovery, which
    // took this process for dead and released the budget and the hold: nothing may be billed now.
    // The statement claims the intents for this process to post once it commits, saving a round trip (issue 12 §3).
    const claim = intents.length > 0 ? this.deps.outbox.claimForPosting() : null;
    let written: Record<string, any> | null;
    try {
      written = await this.writeCall(call, http, FINISH_CALL, {
        ...receiptParams(call.receipt, this.rootMandate(call), { only_running: true }),
        ...intentsParams(intents, claim?.lease_ms ?? null),
        ...closeParams(call.id, total_micros),
      });
    } catch (error) {
      claim?.unknown(call.id);
      // The statement's answer was lost (a connection broken by a failover, issue 27 §2): it may
      // have committed. The books decide; only a receipt still `running` was not closed.
      const stored = await this.readAfterLostAnswer(call.id);
      if (stored === null || stored.status === 'running') throw error;
      const ours = stored.status === call.receipt.status && (stored.error?.code ?? null) === (call.receipt.error?.code ?? null);
      if (!ours) return closedByRecovery(stored);
      this.deps.logger.warn({ receipt: call.id }, "a call's closing commit went through although its answer was lost");
      return { http, receipt: stored, output: result.output, error: result.error ?? undefined, total_micros };
    }
    call.clock?.mark('finish');
    if (!written) {
      claim?.cancel();
      const closed = (await readReceipt(this.deps.db, call.id))!;
      this.deps.logger.error({ receipt: call.id }, 'a call finished after restart recovery closed it: its outcome is not billed');
      return closedByRecovery(closed);
    }
    if (claim) claim.post(written.claimed, intents.filter((intent) => intent.operation === 'settle').length);
    else if (intents.length > 0) this.deps.outbox.postReceipt(call.id);
    return { http, receipt: call.receipt, output: result.output, error: result.error ?? undefined, total_micros };
  }

  /** The tree of a finished call's receipt, each receipt signed (issue 23 §2: every receipt the gateway answers carries its `jws`). */
  async tree(receipt: Receipt): Promise<SignedReceiptTree> {
    return signReceiptTree(this.deps.db, this.deps.signer, await treeOf(this.deps.db, receipt));
  }

  /**
   * Receipt trees as a list answers them (`GET /v0/receipts`, the MCP `read_receipts`), each
   * signed; at most a page of them (`RECEIPT_PAGE.max` roots of `receipts.ts`), signed one after another.
   */
  async signed(trees: readonly ReceiptTree[]): Promise<SignedReceiptTree[]> {
    const signed: SignedReceiptTree[] = [];
    for (const tree of trees) signed.push(await signReceiptTree(this.deps.db, this.deps.signer, tree));
    return signed;
  }
}
