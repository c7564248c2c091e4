/**
 * Refusals as values: a handler throws an `HttpError`, the error middleware answers it as the
 * `{error, code}` body of clearing-contract §7 (and of the gateway's `/v0` API). Its code is
 * typed by the documents' `ErrorCode` enums (generated from `openapi/*.yaml`), so a code that
 * is in neither document does not compile.
 */
import type { ClearingErrorCode } from '../../generated/clearing/server.ts';
import type { GatewayErrorCode } from '../../generated/gateway/server.ts';

/**
 * Codes the reference binding adds to the clearing-contract §7.2 vocabulary (its last paragraph
 * lets a binding add its own): 503 `overloaded`, more writes waiting for the ledger than its bound;
 * 503 `database_unavailable`, its database takes no writes now (a failover, issue 27 §2).
 */
export type BindingOwnCode = 'overloaded' | 'database_unavailable';

/** Every code a server of this repository may answer: the gateway's enum, the clearing contract's, the reference binding's own. */
export type ErrorCode = GatewayErrorCode | ClearingErrorCode | BindingOwnCode;

/**
 * A code an agent declares in its manifest's `interface.errors` and reported for a run
 * (`AgentErrorCode` in `openapi/gateway.yaml`): the hosted demo answers it as its 502's code.
 * Only {@link agentCode} makes one, so a plain string is never taken for it by mistake.
 */
export type AgentCode = string & { readonly agentDeclared: unique symbol };

/** Marks `code`, reported by an agent for a run, as the agent's own code. */
export const agentCode = (code: string): AgentCode => code as AgentCode;

/** A refusal with its HTTP status, its machine code (clearing-contract §7.2, the gateway's `ErrorCode`) and a specific sentence (§7.4). */
export class HttpError extends Error {
  readonly status: number;
  readonly code: ErrorCode | AgentCode;
  /** Extra machine-readable fields merged into the error body (e.g. the figures of an insufficient-funds refusal). */
  readonly details: Record<string, unknown>;

  constructor(status: number, code: ErrorCode | AgentCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }

  /** The error body: `{error, code, ...details}`. */
  body(): Record<string, unknown> {
    return { error: this.message, code: this.code, ...this.details };
  }
}

/** 422 `invalid_request`: missing, malformed or contradictory arguments (clearing-contract §7.2). */
export const invalidRequest = (message: string, details?: Record<string, unknown>) =>
  new HttpError(422, 'invalid_request', message, details);

/** 404 `no_such_object`: the operation is offered, the object it names does not exist (§7.2). */
export const noSuchObject = (message: string) => new HttpError(404, 'no_such_object', message);
