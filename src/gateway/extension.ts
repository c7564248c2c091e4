/**
 * The hooks a composition above the gateway extends it through, so the gateway never imports
 * what is built above it (the composition root `src/serve/` plugs in the MCP server of `src/mcp/`
 * and, for the hosted gateway of gateway §7, the hosted layer of `src/hosted/`). Beside
 * `ReceiptRecorder` (`lifecycle.ts`), which records with a call's receipt, these are the only
 * doors: {@link GatewayParts} is what a composition is handed once the gateway is ready,
 * {@link GatewayAppExtension} what it adds to the gateway's app (`app.ts`).
 */
import type Koa from 'koa';
import type { Logger } from 'pino';
import type { Database } from '../db/index.ts';
import type { HostGateOptions } from '../http/host-gate.ts';
import type { OperationId } from '../../generated/gateway/server.ts';
import type { MountedHandler } from '../http/mount.ts';
import type { AgentAccess } from './agent-access.ts';
import type { ClearingPort } from './clearing.ts';
import type { GatewayHandlers } from './handlers.ts';
import type { Gateway } from './lifecycle.ts';
import type { Outbox } from './outbox.ts';
import type { Registry } from './registry.ts';
import type { Signer } from '../signing/signer.ts';

/** A ready gateway's parts, as a composition is handed them before the gateway listens. */
export interface GatewayParts {
  database: Database;
  gateway: Gateway;
  registry: Registry;
  clearing: ClearingPort;
  outbox: Outbox;
  logger: Logger;
  /** How the gateway runs an agent version (a published one through its guarded client), for runs outside a call: evaluations. */
  agents: AgentAccess;
  /** The gateway's signer (issue 23): its key signs mandates, receipts and journal checkpoints. */
  signer: Signer;
}

/**
 * What one composition adds to the gateway's app; every hook is optional. The app takes a list
 * of them, in order (e.g. the hosted layer, then the MCP server): their middleware run in that
 * order after the gate and before the routes, every `onUnexpected` and `recover` is called, and
 * the first `handlers`, `log_principal` and `cross_origin` given are used (only the hosted layer
 * builds a handler table; the MCP server adds none).
 */
export interface GatewayAppExtension {
  /** Middleware run before the routes, e.g. resolving the principal, or serving `/mcp`. */
  middleware?: Koa.Middleware[];
  /** The handler table mounted instead of the gateway's own, built over them (e.g. scoping each operation); an operation it leaves out is not offered. */
  handlers?(defaults: GatewayHandlers): Partial<Record<OperationId, MountedHandler>>;
  /** Paths whose DNS-rebinding refusal is a JSON-RPC error (`HostGateOptions.rpc_paths`), e.g. `/mcp`. */
  rpc_paths?: readonly string[];
  /** Called after an unexpected failure (answered 500) is logged, e.g. to stop the process when the database failed. */
  onUnexpected?: (error: unknown) => void;
  /**
   * Restart recovery of what the composition keeps per call (issue 12 §4): called at start-up
   * (`unowned`: also what no process claimed) and at every heartbeat with the dead processes' ids.
   */
  recover?: (dead: readonly number[], unowned: boolean) => Promise<unknown>;
  /** Names the principal of a request in its log line (a key prefix, never a key). */
  log_principal?: (ctx: Koa.Context) => string;
  /** Web origins the DNS-rebinding gate lets through on some paths (`HostGateOptions.cross_origin`). */
  cross_origin?: HostGateOptions['cross_origin'];
}
