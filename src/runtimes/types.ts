/**
 * One interface for every runtime kind (gateway §6): `dev` (agent.mjs in-process), `mcp`
 * (the Holon MCP agent profile over Streamable HTTP) and `webhook`. A runtime only runs the
 * agent and reports what happened; billing, validation and receipts are the gateway's
 * (gateway §1 "Run", §2).
 */
import type { GatewayErrorCode } from '../../generated/gateway/server.ts';

/** What a runtime needs to know about the agent it runs (from its manifest, gateway §6). */
export interface RuntimeTarget {
  /** `ns/name`. */
  id: string;
  /** The exact version being run. */
  version: string;
  /** `runtime` of the manifest: `kind`, and for remote kinds `endpoint` and (mcp) `tool`. */
  runtime: { kind: 'dev' | 'mcp' | 'webhook' | 'container' | 'a2a'; endpoint?: string; tool?: string };
  /** For `dev`: the directory holding `holon.yaml` and `agent.mjs`. */
  dir?: string;
}

/** The caller's ceiling for this run, in the agent's own currency (gateway §2 "Caller cap"), as a decimal string. */
export interface MaxCost {
  amount: string;
  currency: string;
}

/**
 * A signed download link for one `holon://files/<id>` handle of the input (gateway §6, hosted
 * only): valid 15 minutes; the agent checks `size` (bytes) and `sha256` (hex) after download.
 */
export interface FileLink {
  url: string;
  content_type: string;
  size: number;
  sha256: string;
  /** When the link stops working (ISO 8601). */
  expires: string;
}

/** A downstream call made by a running agent (`ctx.call`, gateway §3): resolved and billed by the gateway. */
export type Delegate = (
  target: string | { agent?: string; capability?: string },
  input: unknown,
  options?: { max_cost?: string },
) => Promise<DelegateResult>;

/** What `ctx.call` answers: the child's output when it succeeded, else its error, with the child's receipt id. */
export type DelegateResult =
  | { ok: true; output: unknown; receipt: string }
  | { ok: false; error: { code: string; message: string }; receipt: string };

/** One run. */
export interface RunRequest {
  target: RuntimeTarget;
  /** The input, already validated against `interface.input`. */
  input: unknown;
  /** The receipt id of this call (`x-holon-call`). */
  call_id: string;
  /** Set when the caller set `max_cost` (gateway §6: `_meta["holon/max_cost"]`). */
  max_cost: MaxCost | null;
  /**
   * Links to the files the input names, keyed by handle (`_meta["holon/files"]` for MCP agents);
   * absent or empty when the input names none or the gateway keeps no files (dev gateway).
   */
  files?: Readonly<Record<string, FileLink>>;
  /** The author's endpoint credential, sent as a Bearer token; never the caller's (DESIGN open point 13). */
  credential: string | null;
  /** Aborted at the hard timeout (`runtime.limits.timeout_s`); the runtime must stop the agent. */
  signal: AbortSignal;
  /** `ctx.call` for agents that delegate (dev runtime), bound to the derived sub-mandate. */
  delegate: Delegate;
}

/**
 * What happened. `output`: the agent answered (not yet validated against `interface.output`).
 * `error`: the agent reported a failure with a code (billing follows `interface.errors`).
 * `failure`: the runtime could not get an answer (never billed: gateway §2).
 * `units` and `quote` are what the agent reported for `per_unit` / `quote` pricing.
 */
export type RunOutcome =
  | { kind: 'output'; output: unknown; units: number | null; quote: string | null }
  | { kind: 'error'; code: string; message: string; units: number | null; quote: string | null }
  | { kind: 'failure'; code: RuntimeFailureCode; message: string };

/** Runtime failures, never billed (gateway §2 "Undeclared error, crash, timeout"); codes of the gateway's `ErrorCode` enum. */
export type RuntimeFailureCode = Extract<GatewayErrorCode, 'timeout' | 'agent_error' | 'runtime_unavailable'>;

/** A runtime kind's implementation. Never throws for agent misbehaviour: it answers a `RunOutcome`. */
export interface Runtime {
  run(request: RunRequest): Promise<RunOutcome>;
}
