/**
 * Refusals as values: a handler throws an `HttpError`, the error middleware answers it as the
 * `{error, code}` body of clearing-contract §7 (and of the gateway's `/v0` API).
 */

/** A refusal with its HTTP status, its machine code (clearing-contract §7.2) and a specific sentence (§7.4). */
export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  /** Extra machine-readable fields merged into the error body (e.g. the figures of an insufficient-funds refusal). */
  readonly details: Record<string, unknown>;

  constructor(status: number, code: string, message: string, details: Record<string, unknown> = {}) {
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
