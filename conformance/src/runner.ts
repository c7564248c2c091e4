/**
 * Runs the kit against one binding: validate the config, read the capability document, run the
 * selected checks section by section, clean up, and answer the report.
 */
import pkg from '../package.json' with { type: 'json' };
import { MAX_FAILURE_REQUESTS, SECTIONS, type Check, type CheckResult, type Failure, type SectionName } from './check.ts';
import { CHECKS } from './checks/index.ts';
import { ConfigError, parseConfig, type ConformanceConfig } from './config.ts';
import { CheckContext, RunState, type FundingMode } from './context.ts';
import { CONTRACT_VERSION } from './contract.ts';
import { readDeclared, type Declared } from './declared.ts';
import { CheckFailed, Inconclusive, NotApplicable, type Verdict } from './expect.ts';
import { ExchangeLog } from './http.ts';
import { Wire, wireTarget, type Reply } from './wire.ts';

/** Longest a single check may take before it is failed, in milliseconds. */
const CHECK_TIMEOUT_MS = 60_000;

/** The binding did not answer the first request at all; the CLI exits 2. */
export class BindingUnreachable extends Error {
  override name = 'BindingUnreachable';
}

/**
 * The URL answers, but not as a clearing binding: its capability read (§5) is not 200 with a
 * JSON object listing `operations`. Running 100 checks against it would only report each one
 * failed, so the CLI exits 2 with this message instead.
 */
export class NotABinding extends Error {
  override name = 'NotABinding';
}

/** What the runner reports while it runs: the start, then one event per finished section. */
export type ProgressEvent =
  | { readonly kind: 'start'; readonly url: string; readonly run_prefix: string; readonly notes: readonly string[] }
  | { readonly kind: 'section'; readonly index: number; readonly of: number; readonly section: SectionName;
      readonly cites: string; readonly results: readonly CheckResult[]; readonly duration_ms: number };

/** Options of a run. */
export interface RunOptions {
  /** Check ids, section names or `prefix*` patterns; only matching checks run. */
  readonly only?: readonly string[];
  readonly onProgress?: (event: ProgressEvent) => void;
}

/** Counts of a run's outcomes. */
export interface Totals {
  readonly passed: number;
  readonly failed: number;
  readonly failed_must: number;
  readonly failed_should: number;
  readonly skipped: number;
  readonly warned: number;
}

/** Everything one run found; the text, JSON and JUnit reports all render this. */
export interface ConformanceReport {
  readonly kit: { readonly name: string; readonly version: string };
  /** The version of the clearing contract the checks hold the binding to. */
  readonly contract: { readonly name: 'clearing-contract'; readonly version: string };
  readonly url: string;
  /** Prefix of every identifier the run created in the binding. */
  readonly run_prefix: string;
  readonly started_at: string;
  readonly duration_ms: number;
  /** What the binding declared (§5). */
  readonly binding: {
    readonly contract: unknown;
    readonly implementation: unknown;
    readonly finality: unknown;
    readonly periods: boolean;
    readonly operations: readonly string[];
  };
  readonly funding: FundingMode;
  /** Facts about the run a reader needs (funding, clean-up). */
  readonly notes: readonly string[];
  readonly results: readonly CheckResult[];
  readonly totals: Totals;
  /** 0 when every MUST check passed, 1 otherwise. */
  readonly exit_code: 0 | 1;
}

/**
 * The checks selected by `only` (all when absent), in run order. An entry matches a check id,
 * a section name, or ids starting with it when it ends in `*`. Throws ConfigError for an entry
 * that matches nothing.
 */
export function selectChecks(only?: readonly string[]): readonly Check[] {
  if (only === undefined || only.length === 0) return CHECKS;
  const matches = (entry: string, check: Check): boolean => entry === check.id || entry === check.section
    || (entry.endsWith('*') && check.id.startsWith(entry.slice(0, -1)));
  for (const entry of only) {
    if (!CHECKS.some((check) => matches(entry, check))) throw new ConfigError(`--only: ${entry} matches no check`);
  }
  return CHECKS.filter((check) => only.some((entry) => matches(entry, check)));
}

/**
 * Runs the conformance kit. `input` is a config object as in the config file; it is validated
 * first. Throws ConfigError for an invalid config or selection, BindingUnreachable when the
 * capability read gets no answer at all and NotABinding when what answers is not a clearing
 * binding; every other problem is a check result.
 */
export async function runConformance(input: unknown, options: RunOptions = {}): Promise<ConformanceReport> {
  const config = parseConfig(input);
  const checks = selectChecks(options.only);
  const started = performance.now();
  const started_at = new Date().toISOString();
  const log = new ExchangeLog();
  const declared = await readBinding(config, log);
  const state = new RunState(config, declared, log);
  await requireFixtureAccounts(config, state.newWire());
  const notes = [fundingNote(state)];
  if (declared.doc.contract !== CONTRACT_VERSION) {
    notes.push(`the binding declares contract ${JSON.stringify(declared.doc.contract)}; this kit checks clearing-contract version ${CONTRACT_VERSION}`);
  }
  const startFigures = state.funding === 'prefunded' ? await payerBalance(state) : null;
  if (startFigures !== null) notes.push(`at start ${config.fixtures.accounts.payer} holds a balance of ${startFigures.payer}`);
  options.onProgress?.({ kind: 'start', url: config.url, run_prefix: state.prefix, notes });

  const results: CheckResult[] = [];
  const sections = SECTIONS.filter((s) => checks.some((c) => c.section === s.name));
  for (const [index, section] of sections.entries()) {
    const sectionStart = performance.now();
    const mine: CheckResult[] = [];
    for (const check of checks.filter((c) => c.section === section.name)) mine.push(await execute(check, state));
    results.push(...mine);
    options.onProgress?.({
      kind: 'section', index: index + 1, of: sections.length, section: section.name, cites: section.cites,
      results: mine, duration_ms: Math.round(performance.now() - sectionStart),
    });
  }
  notes.push(...await cleanUp(state, startFigures));

  const totals = countOutcomes(results);
  return {
    kit: { name: pkg.name, version: pkg.version },
    contract: { name: 'clearing-contract', version: CONTRACT_VERSION },
    url: config.url,
    run_prefix: state.prefix,
    started_at,
    duration_ms: Math.round(performance.now() - started),
    binding: {
      contract: declared.doc.contract,
      implementation: declared.doc.implementation,
      finality: declared.doc.finality,
      periods: declared.periods,
      operations: [...declared.operations],
    },
    funding: state.funding,
    notes,
    results,
    totals,
    exit_code: totals.failed_must > 0 ? 1 : 0,
  };
}

/** Runs one check and turns how it ended into a result. */
async function execute(check: Check, state: RunState): Promise<CheckResult> {
  const started = performance.now();
  const result = (outcome: CheckResult['outcome'], reason: string | null, failure: CheckResult['failure'] = null): CheckResult => ({
    id: check.id, section: check.section, cite: check.cite, level: check.level, title: check.title,
    outcome, reason, failure, duration_ms: Math.round(performance.now() - started),
  });
  const missing = (check.needs ?? []).filter((op) => !state.declared.operations.has(op));
  if (missing.length > 0) {
    return result('skip', `the binding does not offer ${missing.join(', ')} (its absence is checked by capabilities.unlisted-not-offered)`);
  }
  const wire = state.newWire();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the check did not finish within ${CHECK_TIMEOUT_MS / 1000} s`)), CHECK_TIMEOUT_MS);
  });
  try {
    await Promise.race([check.run(new CheckContext(state, wire)), timeout]);
    return result('pass', null);
  } catch (error) {
    if (error instanceof CheckFailed) return result('fail', null, failureOf(error.verdict, wire));
    if (error instanceof Inconclusive) return result('warn', error.message);
    if (error instanceof NotApplicable) return result('skip', error.message);
    return result('fail', null, failureOf({
      message: `the check stopped on an unexpected error: ${(error as Error).message}`,
      expected: 'answers the check can read',
      got: String((error as Error).stack ?? error),
      exchanges: wire.exchanges().slice(-3),
    }, wire));
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A failed check's verdict with every request its wire sent, in the order sent (by sequence
 * number: racing requests are recorded as they finish), the first {@link MAX_FAILURE_REQUESTS}.
 */
function failureOf(verdict: Verdict, wire: Wire): Failure {
  const sent = [...wire.exchanges()].sort((a, b) => a.seq - b.seq);
  return { ...verdict, requests: sent.slice(0, MAX_FAILURE_REQUESTS), requests_sent: sent.length };
}

/** Counts outcomes; a failed SHOULD counts as failed but not as failed_must. */
export function countOutcomes(results: readonly CheckResult[]): Totals {
  const count = (p: (r: CheckResult) => boolean): number => results.filter(p).length;
  return {
    passed: count((r) => r.outcome === 'pass'),
    failed: count((r) => r.outcome === 'fail'),
    failed_must: count((r) => r.outcome === 'fail' && r.level === 'MUST'),
    failed_should: count((r) => r.outcome === 'fail' && r.level === 'SHOULD'),
    skipped: count((r) => r.outcome === 'skip'),
    warned: count((r) => r.outcome === 'warn'),
  };
}

/** How the run funds the payer, as the report states it. */
function fundingNote(state: RunState): string {
  const payer = state.config.fixtures.accounts.payer;
  switch (state.funding) {
    case 'credit': return `funding: the kit credits ${payer} itself through credit, under run-unique transaction ids`;
    case 'adjust': return `funding: the kit funds ${payer} itself through adjust, under run-unique transaction ids`;
    case 'prefunded': return `funding: the binding offers neither credit nor adjust; the kit relies on the ${state.config.fixtures.prefunded} units prefunded in ${payer}, `
      + `settling back from ${state.config.fixtures.accounts.payee} what the run paid there when a check needs it`;
  }
}

/**
 * The capability read (§5) that starts every run: what the binding declares. Throws
 * BindingUnreachable when nothing answers, and NotABinding when the answer is not a capability
 * document (not 200, or not a JSON object listing `operations`): a gateway, a web server, a
 * binding that refuses the kit.
 */
export async function readBinding(config: ConformanceConfig, log: ExchangeLog): Promise<Declared> {
  const reply = await new Wire(wireTarget(config), log).capabilities();
  if (reply.status === null) {
    // An https binding whose certificate a private CA signed is unreachable until the kit trusts that CA.
    const tlsHint = config.url.startsWith('https:') && config.tls?.ca === undefined ? '; if a CA of your own signed its certificate, give it (tls.ca in the config, or --ca)' : '';
    throw new BindingUnreachable(`cannot reach the binding at ${config.url}: ${reply.exchange.transport_error}${tlsHint}`);
  }
  const declared = reply.status === 200 ? readDeclared(reply.body) : null;
  if (declared !== null) return declared;
  const hint = reply.status === 401 || reply.status === 403
    ? 'it refused the kit: run the kit on the binding\'s host (§3 gate), give it the binding\'s authentication in `headers`, or, for a binding behind mutual TLS, a client certificate its CA signed (tls.cert and tls.key in the config, or --cert and --key)'
    : 'check `url` in the config: it must be the binding\'s base URL (a Holon gateway\'s own URL is not its binding\'s)';
  throw new NotABinding(`${config.url} is not a clearing binding: GET /internal/clearing/capabilities answered ${answerOf(reply)}, `
    + `where a binding answers 200 with its capability document listing \`operations\` (clearing-contract §5); ${hint}`);
}

/** A short account of an answer for a message: status, content type and the start of the body. */
function answerOf(reply: Reply): string {
  const text = reply.exchange.response_body;
  const type = reply.exchange.response_headers['content-type'] ?? 'no content type';
  return `${reply.status} (${type}) ${JSON.stringify(text.length > 120 ? `${text.slice(0, 120)}…` : text)}`;
}

/**
 * The two fixture accounts must exist before the run: a binding answering 404 `no_such_object`
 * for one is missing its set-up, not failing the contract, so the run stops with a ConfigError
 * (exit 2) that says what to create instead of reporting every check as failed.
 */
export async function requireFixtureAccounts(config: ConformanceConfig, wire: Wire): Promise<void> {
  const { payer, payee } = config.fixtures.accounts;
  for (const [role, account] of [['payer', payer], ['payee', payee]] as const) {
    const reply = await wire.readBalance(account);
    if (reply.status === 404 && (reply.body as { code?: unknown } | undefined)?.code === 'no_such_object') {
      throw new ConfigError(`fixtures.accounts.${role}: the binding has no account ${account} (read-balance answered 404 no_such_object); create it, and link fixtures.agent_key to the payer, before the run`);
    }
  }
}

/** The payer's and the payee's balances, or null when read-balance does not answer them. */
async function payerBalance(state: RunState): Promise<{ payer: number; payee: number } | null> {
  const wire = state.newWire();
  const { payer, payee } = state.config.fixtures.accounts;
  const [a, b] = [await wire.readBalance(payer), await wire.readBalance(payee)];
  const balance = (body: unknown): number | null => {
    const value = (body as { balance?: unknown } | undefined)?.balance;
    return Number.isSafeInteger(value) ? (value as number) : null;
  };
  const pa = balance(a.body);
  const pb = balance(b.body);
  return pa === null || pb === null ? null : { payer: pa, payee: pb };
}

/**
 * Releases every hold the run opened (release is idempotent, §6.14) and, on a prefunded binding,
 * settles back from payee to payer what the run moved between them, so the prefunded units last
 * for the next run. Answers notes saying what it did.
 */
async function cleanUp(state: RunState, start: { payer: number; payee: number } | null): Promise<string[]> {
  const notes: string[] = [];
  const wire = state.newWire();
  if (state.declared.operations.has('release-hold')) {
    for (const holdId of state.holds) await wire.releaseHold({ holdId, reason: 'holon-conformance clean-up' });
    if (state.holds.size > 0) notes.push(`clean-up: released every hold the run asked to open (${state.holds.size})`);
  }
  const end = start === null ? null : await payerBalance(state);
  if (start !== null && end !== null) {
    const back = Math.min(start.payer - end.payer, end.payee - start.payee);
    if (back > 0) {
      const { payer, payee } = state.config.fixtures.accounts;
      const reply = await wire.settle({ txnId: `${state.prefix}-give-back`, caller: payee, owner: payer, rate: back, retail: back, memo: 'holon-conformance: give back' });
      notes.push(`clean-up: settled ${back} back from ${payee} to ${payer} to keep the prefunded units for the next run (${reply.status ?? 'no answer'})`);
    }
  }
  return notes;
}
