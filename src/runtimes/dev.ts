/**
 * The dev runtime (gateway §6 "Dev runtime"): runs `agent.mjs`, found next to the agent's
 * `holon.yaml` (`target.dir`), in the gateway's own process. The module's default export is
 * `async function run(input, ctx)` with
 *
 * - `ctx.call(target, input, options?)`: a downstream call through the gateway (`request.delegate`,
 *   gateway §3); refused once the run is over, so a timed-out agent cannot keep spending;
 * - `ctx.units(n)`: units consumed, an integer ≥ 0; several calls add up;
 * - `ctx.quote(x)`: the price of this run, a decimal string or a number; the last call wins;
 * - `ctx.error(code, message?)`: an Error carrying a declared code, to be thrown;
 * - `ctx.signal`: aborted at the hard timeout;
 * - `ctx.max_cost`: the caller's cap in the agent's currency, `{amount, currency}` or `null`
 *   (what an MCP agent gets as `_meta["holon/max_cost"]`).
 *
 * Outcomes: the returned value → `output`; a thrown `ctx.error` → `error` with its code; any other
 * throw, or a return value that is not JSON → `failure agent_error`; the signal firing →
 * `failure timeout` at once, whether or not the agent stops. Input and output cross as JSON
 * copies, as they would over the wire. No sandbox: the code runs in-process (gateway §8).
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AgentError, agentError, createReport, type ReportTotals } from './agent-context.mjs';
import { clip, failure, timedOut } from './outcome.ts';
import type { Delegate, MaxCost, RunOutcome, RunRequest, Runtime } from './types.ts';

/** The `ctx` an `agent.mjs` receives. */
export interface DevContext {
  call: Delegate;
  units(n: number): void;
  quote(x: string | number): void;
  error(code: string, message?: string): Error;
  signal: AbortSignal;
  max_cost: MaxCost | null;
}

/** An `agent.mjs` default export. */
type AgentRun = (input: unknown, ctx: DevContext) => unknown;

/** The dev runtime: one instance serves every dev agent; modules are imported once and cached by Node. */
export function createDevRuntime(): Runtime {
  return {
    async run(request) {
      const loaded = await loadAgent(request.target.dir);
      if ('kind' in loaded) return loaded;
      return runAgent(loaded.run, request);
    },
  };
}

/** Imports `dir/agent.mjs`: its default export, or the failure outcome that explains why not. */
async function loadAgent(dir: string | undefined): Promise<{ run: AgentRun } | RunOutcome> {
  if (dir === undefined) return failure('runtime_unavailable', 'a dev agent needs target.dir, the directory of its holon.yaml');
  const file = join(dir, 'agent.mjs');
  try {
    await access(file);
  } catch {
    return failure('runtime_unavailable', `no agent.mjs next to holon.yaml in ${dir}`);
  }
  try {
    const module = (await import(pathToFileURL(file).href)) as { default?: unknown };
    if (typeof module.default === 'function') return { run: module.default as AgentRun };
    return failure('agent_error', `${file} has no default export function run(input, ctx)`);
  } catch (error) {
    return failure('agent_error', `${file} failed to load: ${clip(String(error))}`);
  }
}

/** Runs one call of a loaded agent; answers at the abort signal even if the agent ignores it. */
async function runAgent(run: AgentRun, request: RunRequest): Promise<RunOutcome> {
  const { signal } = request;
  if (signal.aborted) return timedOut();
  const report = createReport();
  let over = false;
  const ctx: DevContext = {
    call: (target, input, options) =>
      over ? Promise.reject(new Error('ctx.call after the run ended: not sent')) : request.delegate(target, input, options),
    units: report.units,
    quote: report.quote,
    error: agentError,
    signal,
    max_cost: request.max_cost,
  };
  let onAbort = () => {};
  const aborted = new Promise<RunOutcome>((resolve) => {
    onAbort = () => resolve(timedOut());
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([settle(run, request.input, ctx, report.totals), aborted]);
  } finally {
    over = true;
    signal.removeEventListener('abort', onAbort);
  }
}

/** Awaits the agent and turns what it returned or threw into an outcome. */
async function settle(run: AgentRun, input: unknown, ctx: DevContext, totals: () => ReportTotals): Promise<RunOutcome> {
  try {
    const output = jsonCopy(await run(jsonCopy(input), ctx));
    if (output === undefined) return failure('agent_error', 'agent.mjs returned a value that is not JSON (undefined, a function, a BigInt or a cycle)');
    return { kind: 'output', output, ...totals() };
  } catch (error) {
    if (error instanceof AgentError) return { kind: 'error', code: error.code, message: clip(error.message), ...totals() };
    return failure('agent_error', `agent.mjs threw: ${clip(error instanceof Error ? error.message : String(error))}`);
  }
}

/** `value` through JSON, as it would cross the wire; `undefined` when it is not JSON. */
function jsonCopy(value: unknown): unknown {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}
