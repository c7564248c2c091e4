/**
 * Building `RunOutcome`s the same way in every runtime (gateway §6): failure outcomes with a
 * bounded message, the timeout outcome, and the error codes an agent may report.
 */
import type { RunOutcome, RuntimeFailureCode } from './types.ts';

/** Agent-written text kept in a message (error messages, text blocks), in characters. */
export const MESSAGE_MAX_CHARS = 1000;

/** `text` cut to {@link MESSAGE_MAX_CHARS}, marked with `…` when cut. */
export function clip(text: string): string {
  return text.length <= MESSAGE_MAX_CHARS ? text : `${text.slice(0, MESSAGE_MAX_CHARS)}…`;
}

/** A runtime failure (never billed, gateway §2). */
export function failure(code: RuntimeFailureCode, message: string): RunOutcome {
  return { kind: 'failure', code, message };
}

/** The run was stopped at its hard timeout (`runtime.limits.timeout_s`, gateway §1 step 5). */
export function timedOut(): RunOutcome {
  return failure('timeout', 'the agent did not answer before the hard timeout (runtime.limits.timeout_s); it was told to stop');
}

/** Whether `value` is a plain JSON object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
