/**
 * The ids a request's log lines carry (issue 22 §3): request id, trace id and, once known, the
 * receipt id, kept for the request's async work and added to every line by a pino mixin
 * ({@link logFields}). Kept apart from the tracing SDK so a logger costs no OpenTelemetry import.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import pino, { type Logger, type LoggerOptions } from 'pino';

/** The ids of the request being served, as its log lines carry them. */
export interface RequestIds {
  request_id: string;
  trace_id: string | null;
  receipt: string | null;
}

/** The ids of the request being served, for its async work (`requests.ts` runs each request inside it). */
export const requestIds = new AsyncLocalStorage<RequestIds>();

/** The fields a log line written while serving a request carries (pino `mixin`): `request_id`, `trace_id`, `receipt` when known. */
export function logFields(): Record<string, string> {
  const ids = requestIds.getStore();
  if (!ids) return {};
  const fields: Record<string, string> = { request_id: ids.request_id };
  if (ids.trace_id) fields.trace_id = ids.trace_id;
  if (ids.receipt) fields.receipt_id = ids.receipt;
  return fields;
}

/** Names the request's receipt (the first call it runs: its root call) for its later log lines. */
export function noteReceipt(receipt: string): void {
  const ids = requestIds.getStore();
  if (ids && ids.receipt === null) ids.receipt = receipt;
}

/** A pino logger whose lines carry the request's ids ({@link logFields}); `destination` defaults to stdout. */
export function requestLogger(options: LoggerOptions, destination?: pino.DestinationStream): Logger {
  return pino({ ...options, mixin: logFields }, destination as pino.DestinationStream);
}
