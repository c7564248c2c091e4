/**
 * `holon-conformance explore`: generates histories of contract operations with fast-check, runs
 * each against the binding (through the fault proxy when faults are on), checks every answer and
 * the figures after every step against the model, and on a failure lets fast-check shrink the
 * history to the shortest that still fails. The report is a ConformanceReport with one result per
 * property (section `explore`), so the JSON and JUnit outputs are the scripted run's.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import pkg from '../../package.json' with { type: 'json' };
import type { CheckResult, Failure } from '../check.ts';
import { parseConfig, type ConformanceConfig } from '../config.ts';
import { CONTRACT_VERSION } from '../contract.ts';
import type { Declared } from '../declared.ts';
import { ExchangeLog, type Exchange } from '../http.ts';
import { countOutcomes, readBinding, requireFixtureAccounts, type ConformanceReport } from '../runner.ts';
import { Wire, wireTarget } from '../wire.ts';
import { HistoryFailed, HistoryInconclusive, runHistory } from './history.ts';
import type { PropertyId } from './model.ts';
import { historyArbitrary, type History } from './ops.ts';
import { DEFAULT_FAULT_PERCENT, startFaultProxy, type FaultKind, type FaultProxy } from './proxy.ts';

/** The properties explore reports, with the rule each holds the binding to and where the contract says it. */
export const PROPERTIES: readonly { readonly id: PropertyId; readonly cite: string; readonly title: string }[] = [
  { id: 'explore.answers', cite: '§6, §7.2', title: 'every answer is one the contract allows for the operations in flight, in some order' },
  { id: 'explore.once', cite: '§9', title: 'every transaction and hold id takes effect at most once; a replay says applied false, a retry is never refused' },
  { id: 'explore.no-overcommit', cite: '§6.11, §6.12, §8.2', title: 'holds together never commit more than was available, however they race' },
  { id: 'explore.within-cap', cite: '§6.13, §8.4, §8.5', title: 'draws together never bill a hold beyond its cap' },
  { id: 'explore.figures', cite: '§6.2, §8.1, §8.2, §8.6', title: 'after every step, balance, available and reserved are what the accepted history implies' },
];

/** Most steps in one generated history. */
export const MAX_STEPS = 24;
/** Longest explore shrinks a failure after the search budget, by default, in milliseconds. */
export const DEFAULT_SHRINK_MS = 60_000;
/** Most requests one explore run sends, by default. */
export const DEFAULT_MAX_REQUESTS = 500_000;

/** Options of an explore run. */
export interface ExploreOptions {
  /** fast-check's seed; the same seed generates the same histories and fault schedule. Random when absent. */
  readonly seed?: number;
  /** How long to search for a failing history, in milliseconds. */
  readonly budget_ms: number;
  /** How long a failure may be shrunk after it is found, in milliseconds (default 60 000). */
  readonly shrink_ms?: number;
  /** Most operations in flight together, 1..16. */
  readonly concurrency: number;
  readonly faults: readonly FaultKind[];
  /** Chance in percent that a request meets each fault named (default 8). */
  readonly fault_percent?: number;
  /** Most requests the run sends (default 500 000). */
  readonly max_requests?: number;
  readonly onProgress?: (line: string) => void;
}

/** What explore adds to the report: how to replay it, what it sent, and the faults injected. */
export interface ExploreSummary {
  readonly seed: number;
  readonly histories: number;
  readonly requests: number;
  readonly concurrency: number;
  readonly faults: readonly FaultKind[];
  readonly injected: Readonly<Record<string, number>>;
  /** The command line that replays this run exactly (for a deterministic binding). */
  readonly replay: string;
  /** The shortest failing history's request count, or null when nothing failed. */
  readonly shortest_failing_requests: number | null;
}

/** Stops the search once the budget is spent; fast-check sees a failure and explore reads it as the end. */
class SearchOver extends Error {
  override name = 'SearchOver';
}

interface Found { readonly error: HistoryFailed; readonly history: History }

/** Runs explore against the binding `input` (a config object); answers the report. */
export async function runExplore(input: unknown, options: ExploreOptions): Promise<ConformanceReport & { readonly explore: ExploreSummary }> {
  const config = parseConfig(input);
  if (!Number.isSafeInteger(options.concurrency) || options.concurrency < 1 || options.concurrency > 16) {
    throw new RangeError(`--concurrency must be an integer from 1 to 16, got ${options.concurrency}`);
  }
  const seed = options.seed ?? randomBytes(4).readUInt32BE() % 2_147_483_647;
  const started = performance.now();
  const started_at = new Date().toISOString();
  const declared = await readBinding(config, new ExchangeLog());
  await requireFixtureAccounts(config, new Wire(wireTarget(config), new ExchangeLog()));
  const base = `hx-${Date.now().toString(36)}-${randomBytes(2).toString('hex')}`;
  const faultFlags = options.faults.length === 0 ? '' : ` --faults ${options.faults.join(',')}${options.fault_percent === undefined ? '' : ` --fault-rate ${options.fault_percent}`}`;
  const replay = `holon-conformance explore --seed ${seed} --concurrency ${options.concurrency}${faultFlags}`;
  options.onProgress?.(`holon-conformance explore → ${config.url}: seed ${seed}, concurrency ${options.concurrency}, faults ${options.faults.join(',') || 'none'}, budget ${options.budget_ms / 1000} s (identifiers prefixed ${base})`);
  const notes: string[] = [];
  let results: CheckResult[];
  let histories = 0;
  let requests = 0;
  // Written inside fast-check's property, read after it: a holder, so the compiler does not narrow it.
  const seen: { found: Found | null } = { found: null };
  let proxy: FaultProxy | null = null;
  const unsupported = declared.finality !== 'immediate'
    ? `explore models immediate finality (§10); this binding declares ${JSON.stringify(declared.doc.finality)}` : null;
  if (unsupported !== null) {
    results = PROPERTIES.map((p) => result(p, 'skip', unsupported, null, 0));
  } else {
    proxy = options.faults.length > 0
      ? await startFaultProxy(config.url, options.faults, { seed, percent: options.fault_percent ?? DEFAULT_FAULT_PERCENT, prefix: new RegExp(`${base}-\\d+-`, 'g') }, config.tls)
      : null;
    try {
      const maxRequests = options.max_requests ?? DEFAULT_MAX_REQUESTS;
      const searchEnds = Date.now() + options.budget_ms;
      let inconclusive: string | null = null;
      const property = fc.asyncProperty(historyArbitrary({ offered: declared.operations, concurrency: options.concurrency, unit: declared.min_amount, maxSteps: MAX_STEPS }), async (history) => {
        if (seen.found === null && (Date.now() > searchEnds || requests > maxRequests)) throw new SearchOver();
        histories += 1;
        try {
          requests += await runHistory(history, target(config, declared, proxy, `${base}-${histories}`));
        } catch (error) {
          if (error instanceof HistoryFailed) {
            // fast-check adopts a failing candidate and shrinks from it: the last failure is the shortest.
            seen.found = { error, history };
            requests += error.steps.flat().length;
            options.onProgress?.(`  history ${histories} failed at ${error.steps.flat().length} requests: ${error.message}`);
          }
          if (error instanceof HistoryInconclusive) {
            inconclusive = error.message;
            return;
          }
          throw error;
        }
      });
      const details = await fc.check(property, {
        seed, numRuns: Number.MAX_SAFE_INTEGER, plugins: [fc.interruptAfterTimeLimit(options.budget_ms + (options.shrink_ms ?? DEFAULT_SHRINK_MS))],
      });
      const failure = seen.found;
      if (details.failed && failure === null && !(details.errorInstance instanceof SearchOver)) throw details.errorInstance;
      const ms = Math.round(performance.now() - started);
      results = PROPERTIES.map((p) => {
        if (failure !== null && failure.error.mismatch.property === p.id) return result(p, 'fail', null, failureOf(failure, config, replay), ms);
        return result(p, 'pass', null, null, ms);
      });
      if (inconclusive !== null) notes.push(`a history proved nothing: ${inconclusive}`);
      if (failure !== null) notes.push(`shrunk to ${failure.error.steps.flat().length} requests in ${(failure.error.steps.length)} steps; replay with: ${replay}`);
    } finally {
      await proxy?.close();
    }
  }
  const totals = countOutcomes(results);
  const shortest = seen.found;
  return {
    kit: { name: pkg.name, version: pkg.version },
    contract: { name: 'clearing-contract', version: CONTRACT_VERSION },
    url: config.url,
    run_prefix: base,
    started_at,
    duration_ms: Math.round(performance.now() - started),
    binding: { contract: declared.doc.contract, implementation: declared.doc.implementation, finality: declared.doc.finality, periods: declared.periods, operations: [...declared.operations] },
    funding: declared.operations.has('credit') ? 'credit' : declared.operations.has('adjust') ? 'adjust' : 'prefunded',
    notes,
    results,
    totals,
    exit_code: totals.failed_must > 0 ? 1 : 0,
    explore: {
      seed, histories, requests, concurrency: options.concurrency, faults: options.faults,
      injected: proxy?.injected ?? {}, replay,
      shortest_failing_requests: shortest === null ? null : shortest.error.steps.flat().length,
    },
  };
}

function target(config: ConformanceConfig, declared: Declared, proxy: FaultProxy | null, prefix: string) {
  const log = new ExchangeLog();
  const wire = (url: string): Wire => new Wire(wireTarget(config, url), log);
  return { config, declared, wire: wire(proxy?.url ?? config.url), direct: wire(config.url), prefix };
}

function result(p: (typeof PROPERTIES)[number], outcome: CheckResult['outcome'], reason: string | null, failure: Failure | null, duration_ms: number): CheckResult {
  return { id: p.id, section: 'explore', cite: p.cite, level: 'MUST', title: p.title, outcome, reason, failure, duration_ms };
}

/** The shortest failing history as a failure: every request in order, those sent together marked, addressed to the binding itself. */
function failureOf(found: Found, config: ConformanceConfig, replay: string): Failure {
  const { mismatch, steps } = found.error;
  const direct = (e: Exchange): Exchange => ({ ...e, url: config.url + new URL(e.url).pathname });
  return {
    message: `${mismatch.message} (replay: ${replay})`,
    expected: mismatch.expected,
    got: mismatch.got,
    exchanges: [direct(mismatch.sent.reply.exchange)],
    requests: steps.flat().map(direct),
    requests_sent: steps.flat().length,
    steps: steps.map((s) => s.map(direct)),
  };
}
