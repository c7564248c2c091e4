/**
 * The demo (gateway §7 "Extra endpoints", `POST /v0/demo/{ns}/{name}`; issue 10 §9): a free try
 * of one of the platform's own cheap agents for the public site. Only a shipped agent (never a
 * published one: a visitor's input must not reach an author's server unasked) that delegates
 * nothing and lists at most `DEMO_MAX_PRICE_MICROS` per run; a narrowed input; at most
 * `DEMO_PER_VISITOR_PER_HOUR` tries per visitor and `DEMO_PER_HOUR` in all. The agent runs
 * through its runtime directly, outside the call lifecycle: no mandate, no hold, no receipt, no
 * settlement (not billed), no `call_events` row (not measured). CORS for `HOLON_SITE_URL` only.
 */
import type Koa from 'koa';
import { worstCase } from '../contracts/pricing.ts';
import { agentCode, HttpError } from '../http/errors.ts';
import { agentRef, type ListedAgent, type Registry } from '../gateway/registry.ts';
import type { Runtime } from '../runtimes/types.ts';
import { clientAddress, consume, rateCounter, type RateStore } from './limits.ts';

/** The dearest list price an agent may have to be in the demo: 0.01 EUR per run, in micro-units. */
export const DEMO_MAX_PRICE_MICROS = 10_000;

/** The largest demo input: 4096 bytes of JSON (UTF-8). */
export const DEMO_MAX_INPUT_BYTES = 4096;

/** The longest string anywhere in a demo input: 2000 characters (short results, small samples). */
export const DEMO_MAX_STRING_CHARS = 2000;

/** Tries per visitor (client address) per hour. */
export const DEMO_PER_VISITOR_PER_HOUR = 10;

/** Tries per hour, all visitors together. */
export const DEMO_PER_HOUR = 600;

/** The demo's HTTP path prefix (CORS applies to it alone). */
export const DEMO_PATH = '/v0/demo/';

/** Why `agent` is not in the demo, or null when it is. */
function notInDemo(agent: ListedAgent): string | null {
  const manifest = agent.loaded.manifest;
  if (agent.published) return 'published agents are not in the demo: only the platform\'s own';
  if (manifest.calls.length > 0) return 'agents that delegate are not in the demo';
  const wc = worstCase(manifest, { currency: 'EUR', fx: {} }, null);
  if (!wc.ok || wc.worst_case_micros > DEMO_MAX_PRICE_MICROS) return `only agents listed at 0.01 EUR per run or less are in the demo`;
  return null;
}

/** Refuses an input beyond the demo's bounds (422 `demo_input_too_large`, naming the bound) or holding a file handle. */
function narrowInput(input: unknown): void {
  const refuse = (message: string) => new HttpError(422, 'demo_input_too_large', `${message}; the demo takes short inputs only (call the agent with a key for more)`);
  if (Buffer.byteLength(JSON.stringify(input) ?? '', 'utf8') > DEMO_MAX_INPUT_BYTES) throw refuse(`the input is over ${DEMO_MAX_INPUT_BYTES} bytes of JSON`);
  const walk = (value: unknown): void => {
    if (typeof value === 'string') {
      if (value.length > DEMO_MAX_STRING_CHARS) throw refuse(`a string is over ${DEMO_MAX_STRING_CHARS} characters`);
      if (value.includes('holon://files/')) throw refuse('file handles are not taken: the demo runs on the sample inputs of the page');
    } else if (Array.isArray(value)) value.forEach(walk);
    else if (value !== null && typeof value === 'object') Object.values(value).forEach(walk);
  };
  walk(input);
}

/** What the demo needs. */
export interface DemoDeps {
  registry: Registry;
  runtimeFor: (kind: ListedAgent['loaded']['manifest']['runtime']['kind']) => Runtime;
  trust_proxy: boolean;
  /** Where the tries are counted (all processes together on Postgres: `limits.ts`). */
  store: RateStore | null;
}

/** The demo handler: `(ns, name, input, ctx)` → `{agent, output, billed: false}`; throws the HttpErrors of `openapi/gateway.yaml`. */
export function demoRunner(deps: DemoDeps) {
  const perVisitor = rateCounter(deps.store, 'demo-visitor', DEMO_PER_VISITOR_PER_HOUR, 3600);
  const overall = rateCounter(deps.store, 'demo', DEMO_PER_HOUR, 3600);
  let runs = 0;
  return async (ns: string, name: string, input: unknown, ctx: Koa.Context) => {
    const ref = `${ns}/${name}`;
    let agent: ListedAgent | null;
    try {
      agent = deps.registry.resolve(ref);
    } catch (error) {
      throw new HttpError(422, 'invalid_request', (error as Error).message);
    }
    if (!agent) throw new HttpError(404, 'no_such_agent', deps.registry.missing(ref));
    const excluded = notInDemo(agent);
    if (excluded) throw new HttpError(404, 'not_in_demo', `${ref} is not in the demo: ${excluded}`);
    narrowInput(input);
    const problems = agent.loaded.check.input(input);
    if (problems) throw new HttpError(422, 'rejected_input', `the input does not match ${agentRef(agent.loaded.manifest)}'s interface: ${problems.join('; ')}`);
    // Counted only for a try that will run: a malformed request costs the visitor nothing.
    await consume(ctx, perVisitor, clientAddress(ctx, deps.trust_proxy), 'of the demo from this address');
    await consume(ctx, overall, 'all', 'of the demo in all');
    const manifest = agent.loaded.manifest;
    const outcome = await deps.runtimeFor(manifest.runtime.kind).run({
      target: { id: manifest.id, version: manifest.version, runtime: { kind: manifest.runtime.kind, endpoint: manifest.runtime.endpoint ?? undefined, tool: manifest.runtime.tool ?? undefined }, dir: agent.dir ?? undefined },
      input,
      call_id: `demo-${++runs}`,
      max_cost: null,
      credential: null,
      signal: AbortSignal.timeout(manifest.runtime.timeout_s * 1000),
      delegate: async () => {
        throw new Error('a demo run cannot delegate');
      },
    });
    // A declared error answers with the agent's own code (`AgentErrorCode`), a runtime failure with the gateway's.
    if (outcome.kind !== 'output') throw new HttpError(502, outcome.kind === 'error' ? agentCode(outcome.code) : outcome.code, `${agentRef(manifest)} failed: ${outcome.message}; nothing was billed`);
    const invalid = agent.loaded.check.output(outcome.output);
    if (invalid) throw new HttpError(502, 'invalid_output', `the output does not match ${agentRef(manifest)}'s interface: ${invalid.join('; ')}`);
    return { agent: agentRef(manifest), output: outcome.output, billed: false as const };
  };
}

/**
 * CORS of the demo (gateway §7: "CORS for `HOLON_SITE_URL` only"): a request from the site's
 * origin gets `Access-Control-Allow-Origin` for it, and its preflight a 204; any other origin
 * gets no CORS header (the host gate refuses it 403 before it reaches a handler). Without a site
 * URL no origin is allowed.
 */
export function demoCors(site_url: string | null): Koa.Middleware {
  const site = site_url === null ? null : new URL(site_url).origin;
  return async (ctx, next) => {
    if (!ctx.path.startsWith(DEMO_PATH) || site === null || ctx.get('origin') !== site) return next();
    ctx.vary('Origin');
    ctx.set('Access-Control-Allow-Origin', site);
    if (ctx.method !== 'OPTIONS') return next();
    ctx.set('Access-Control-Allow-Methods', 'POST');
    ctx.set('Access-Control-Allow-Headers', 'content-type');
    ctx.set('Access-Control-Max-Age', '600');
    ctx.status = 204;
  };
}
