/**
 * What every view of the console is given: the typed client under the signed-in human key, the
 * account (`GET /v0/me`), what the operator switched on (`GET /v0/features`), and how to report
 * an outcome or a refusal in the page's live region.
 */
import { HolonError, type Features, type HolonClient, type Me } from '../../../../clients/src/index.ts';
import { h } from './dom.ts';

/** A view's surroundings. */
export interface ConsoleContext {
  holon: HolonClient;
  me: Me;
  /** What this gateway offers (read once at start): a view shows only the controls of features that are on. */
  features: Features;
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

/**
 * One line saying why the features among `names` that are off are off (the gateway's reason
 * sentences, e.g. "Publishing is off on this gateway: …"), or null when all of them are on.
 */
export function featuresOff(features: Features, names: ReadonlyArray<keyof Features>): HTMLElement | null {
  const reasons = names.filter((name) => !features[name].on).map((name) => features[name].reason ?? `${name} is off on this gateway`);
  if (reasons.length === 0) return null;
  return h('p', { class: 'hint', 'data-testid': 'features-off' }, reasons.map((reason) => `${reason.charAt(0).toUpperCase()}${reason.slice(1)}.`).join(' '));
}
