/**
 * What every view of the console is given: the typed client under the signed-in human key, the
 * account (`GET /v0/me`), and how to report an outcome or a refusal in the page's live region.
 */
import { HolonError, type HolonClient, type Me } from '../../../../clients/src/index.ts';

/** A view's surroundings. */
export interface ConsoleContext {
  holon: HolonClient;
  me: Me;
  /** Announces a sentence in the status region (`role="status"`, or `role="alert"` for a refusal). */
  notify(message: string, kind?: 'ok' | 'error'): void;
  /** Reads the account again and redraws the current view. */
  refresh(): Promise<void>;
}

/** A refusal as a sentence: the gateway's own sentence and code for a `HolonError`, else the error's message. */
export function describeError(error: unknown): string {
  if (error instanceof HolonError) return `${error.body.error} (${error.code})`;
  return error instanceof Error ? error.message : String(error);
}
