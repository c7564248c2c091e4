/**
 * The evaluation runner (gateway §7 "Evaluation at publish time"): runs an agent version on the
 * suite of each capability it claims (`eval-suites.ts`), one case at a time, straight through
 * the version's runtime: no mandate, no hold, no settlement, so nothing is ever billed; the
 * author's server does the work. Results are stored per (version, capability) in
 * `hosted_evaluations`: public cases in detail (input, expected, what the agent answered),
 * private (holdout) cases as pass/fail only; {@link readEvaluations} reads them for the
 * catalogue and the author's view.
 *
 * `evaluateVersion` works on any listed version, shipped or published; publishing calls it in
 * the background (`void evaluateVersion(…)`) once a version is listed.
 */
import { readFile } from 'node:fs/promises';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { agentRef, type ListedAgent } from '../gateway/registry.ts';
import type { AgentAccess } from '../gateway/agent-access.ts';
import type { RunOutcome } from '../runtimes/types.ts';
import type { FileLink } from '../runtimes/types.ts';
import { casePasses, fixturesOf, loadSuite, replaceStrings, type EvalCase, type SuiteSource } from './eval-suites.ts';
import { attachFiles, MAX_FILE_BYTES, MAX_LIVE_FILE_BYTES, storeFile } from './files.ts';

/** What the runner needs: the database, the runtimes the gateway uses (the guarded client for published agents), the suites' source. */
export interface EvaluationDeps {
  db: Knex;
  runtimeFor: AgentAccess['runtimeFor'];
  /** The author's endpoint credential of a version (published agents), sent as on a call (gateway §6 "Authentication"). */
  credentialFor: AgentAccess['credentialFor'];
  source: SuiteSource;
  logger: Logger;
  /** How fixture files are linked (the gateway's link key and public origin); absent, a case naming a fixture fails. */
  files?: { key: Buffer; origin: () => string };
  /** The files' clock, ms since the epoch (default `Date.now`): the gateway's, so its links verify. */
  clock?: () => number;
}

/**
 * The owner of evaluation fixtures while a case runs: no account can have it (a handle has no
 * `:`), so no caller's root mandate is ever issued by it and no call can pass a fixture
 * (gateway §7 "Files": hidden cases stay hidden from calls).
 */
export const EVAL_FILES_OWNER = 'holon:evals';

/** The largest answer stored with a public case, in characters of JSON (64 KiB); a larger one is stored as its size. */
export const MAX_STORED_ANSWER_CHARS = 65_536;

/** What the agent answered to one case. */
export type CaseAnswer = { output: unknown } | { error: string; message: string } | { omitted_chars: number };

/** One case's result: every field for a public case; `name` and `pass` only for a private one. */
export interface CaseResult {
  name: string;
  pass: boolean;
  input?: unknown;
  expect?: EvalCase['expect'];
  got?: CaseAnswer;
}

/** One (version, capability) evaluation as stored (a type, not an interface, so it fits the document's open `evaluations` objects). */
export type EvaluationView = {
  agent: string;
  version: string;
  capability: string;
  suite: 'public' | 'private';
  status: 'running' | 'done' | 'failed';
  passed: number;
  total: number;
  cases: CaseResult[];
  /** Why the evaluation failed as a whole (an unreadable suite), else null. */
  error: string | null;
  started_at: string;
  finished_at: string | null;
};

/** An answer as stored: outputs over {@link MAX_STORED_ANSWER_CHARS} are replaced by their size. */
function stored(got: Got): CaseAnswer {
  if (!('output' in got)) return got;
  const chars = JSON.stringify(got.output)?.length ?? 0;
  return chars > MAX_STORED_ANSWER_CHARS ? { omitted_chars: chars } : got;
}

/** A case's outcome: the agent's output or the error it ended with. */
type Got = { output: unknown } | { error: string; message: string };

/**
 * Runs one case: its fixtures (checked when the suite was loaded) stored as platform files
 * ({@link EVAL_FILES_OWNER}) for this run only, their handles put in the input and their links
 * given to the agent; deleted afterwards, whatever happened.
 */
async function runCase(deps: EvaluationDeps, agent: ListedAgent, capability: string, c: EvalCase): Promise<Got> {
  const fixtures = fixturesOf(deps.source, capability, c.input);
  if (fixtures.size === 0) return runWith(deps, agent, capability, c, c.input, {});
  if (!deps.files) return { error: 'gateway_error', message: 'this runner keeps no files: a case naming a fixture cannot run' };
  const ids: string[] = [];
  try {
    const handles = new Map<string, string>();
    for (const [name, file] of fixtures) {
      const stored = await storeFile(deps.db, { owner: EVAL_FILES_OWNER, content_type: 'application/octet-stream', bytes: await readFile(file), now_ms: (deps.clock ?? Date.now)() }, { max_file_bytes: MAX_FILE_BYTES, max_live_bytes: MAX_LIVE_FILE_BYTES });
      ids.push(stored.id);
      handles.set(name, stored.handle);
    }
    const input = replaceStrings(c.input, handles);
    const attached = await attachFiles(deps.db, deps.files, input, EVAL_FILES_OWNER, (deps.clock ?? Date.now)());
    if (!attached.ok) return { error: attached.code, message: attached.message };
    return await runWith(deps, agent, capability, c, input, attached.links);
  } finally {
    if (ids.length > 0) await deps.db('hosted_files').whereIn('id', ids).delete();
  }
}

/** What the agent answered, judged as a call would be: input checked first, output against `interface.output`. */
async function runWith(deps: EvaluationDeps, agent: ListedAgent, capability: string, c: EvalCase, input: unknown, files: Record<string, FileLink>): Promise<Got> {
  const { manifest, check } = agent.loaded;
  const wrongInput = check.input(input);
  if (wrongInput) return { error: 'rejected_input', message: `the case's input does not match ${agentRef(manifest)}'s interface: ${wrongInput.join('; ')}` };
  const outcome: RunOutcome = await deps.runtimeFor(agent).run({
    target: { id: manifest.id, version: manifest.version, runtime: { kind: manifest.runtime.kind, endpoint: manifest.runtime.endpoint ?? undefined, tool: manifest.runtime.tool ?? undefined }, dir: agent.dir ?? undefined },
    input,
    files,
    call_id: `eval:${agentRef(manifest)}:${capability}:${c.name}`,
    max_cost: null,
    credential: await deps.credentialFor(agent),
    signal: AbortSignal.timeout(manifest.runtime.timeout_s * 1000),
    delegate: () => Promise.reject(new Error('an agent under evaluation cannot delegate: its suite runs it alone')),
  });
  if (outcome.kind !== 'output') return { error: outcome.code, message: outcome.message };
  const wrongOutput = check.output(outcome.output);
  if (wrongOutput) return { error: 'invalid_output', message: `the output does not match the interface: ${wrongOutput.join('; ')}` };
  return { output: outcome.output };
}

/** Writes an evaluation row (insert or replace). */
async function save(db: Knex, view: EvaluationView): Promise<void> {
  const row = { ...view, cases: JSON.stringify(view.cases) };
  await db('hosted_evaluations').insert(row).onConflict(['agent', 'version', 'capability']).merge();
}

/**
 * Evaluates `agent` on the suite of each capability it claims that has one (none: nothing is
 * stored). Each evaluation is stored `running` first, then `done` with its cases, or `failed`
 * with the reason when its suite cannot be read. Never throws for the agent's behaviour (a case
 * the agent fails is a failed case); throws only when the database fails. Answers the stored
 * evaluations.
 */
export async function evaluateVersion(deps: EvaluationDeps, agent: ListedAgent): Promise<EvaluationView[]> {
  const { id, version, capabilities } = agent.loaded.manifest;
  const results: EvaluationView[] = [];
  for (const capability of capabilities) {
    const view: EvaluationView = { agent: id, version, capability, suite: deps.source.suite, status: 'running', passed: 0, total: 0, cases: [], error: null, started_at: new Date().toISOString(), finished_at: null };
    let cases: EvalCase[] | null;
    try {
      cases = await loadSuite(deps.source, capability);
    } catch (error) {
      deps.logger.error({ err: error, agent: `${id}@${version}`, capability }, 'an evaluation suite cannot be read');
      Object.assign(view, { status: 'failed', error: (error as Error).message, finished_at: new Date().toISOString() });
      await save(deps.db, view);
      results.push(view);
      continue;
    }
    if (cases === null) continue;
    view.total = cases.length;
    await save(deps.db, view);
    for (const c of cases) {
      const got = await runCase(deps, agent, capability, c);
      const pass = casePasses(c.expect, got);
      view.passed += pass ? 1 : 0;
      view.cases.push(deps.source.suite === 'public' ? { name: c.name, pass, input: c.input, expect: c.expect, got: stored(got) } : { name: c.name, pass });
    }
    Object.assign(view, { status: 'done', finished_at: new Date().toISOString() });
    await save(deps.db, view);
    results.push(view);
  }
  return results;
}

/** The stored evaluations of `agent` (every version, or `version`), by version then capability. */
export async function readEvaluations(db: Knex, agent: string, version?: string): Promise<EvaluationView[]> {
  const query = db('hosted_evaluations').where({ agent }).orderBy(['version', 'capability']);
  if (version !== undefined) query.where({ version });
  return (await query.select()).map((row) => ({
    agent: row.agent,
    version: row.version,
    capability: row.capability,
    suite: row.suite,
    status: row.status,
    passed: Number(row.passed),
    total: Number(row.total),
    cases: typeof row.cases === 'string' ? JSON.parse(row.cases) : row.cases,
    error: row.error,
    started_at: new Date(row.started_at).toISOString(),
    finished_at: row.finished_at === null ? null : new Date(row.finished_at).toISOString(),
  }));
}
