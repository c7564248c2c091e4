/**
 * What a hosted gateway's operator switched on (gateway §7 "Operating": "a setting that only
 * disables a feature must never stop the gateway"): GitHub sign-in and publishing need a GitHub
 * OAuth app, endpoint credentials need `HOLON_FILE_SECRET`. `GET /v0/features` answers
 * {@link featuresOf}, so the console offers only what is on; the operations of a feature that is
 * off answer 503 with the same reason sentence, then what to do instead.
 */
import type { components } from '../../generated/gateway/types.ts';
import type { HostedSettings } from './settings.ts';

/** The `Features` schema of `openapi/gateway.yaml`: each feature `{ on }`, or `{ on: false, reason }`. */
export type Features = components['schemas']['Features'];

/** The `Feature` schema: one feature. */
export type Feature = components['schemas']['Feature'];

/** Why GitHub sign-in is off (503 `github_signin_off`). */
export const GITHUB_SIGN_IN_OFF = 'sign in with GitHub is off on this gateway: its operator has not set HOLON_GITHUB_CLIENT_ID and HOLON_GITHUB_CLIENT_SECRET';

/** Why publishing is off (503 `publishing_off`). */
export const PUBLISHING_OFF = 'publishing is off on this gateway: it has no GitHub app (its operator has not set HOLON_GITHUB_CLIENT_ID and HOLON_GITHUB_CLIENT_SECRET)';

/** Why endpoint credentials are off (503 `credentials_unavailable`). */
export const CREDENTIALS_OFF = 'endpoint credentials are off on this gateway: its operator has not set HOLON_FILE_SECRET';

/** A feature on, or off with its reason. */
function feature(on: boolean, reason: string): Feature {
  return on ? { on } : { on, reason };
}

/** The features of a gateway with `settings`; fixed for the life of the process, as the settings are. */
export function featuresOf(settings: Pick<HostedSettings, 'github' | 'file_secret'>): Features {
  return {
    github_sign_in: feature(settings.github !== null, GITHUB_SIGN_IN_OFF),
    publishing: feature(settings.github !== null, PUBLISHING_OFF),
    credentials: feature(settings.file_secret !== null, CREDENTIALS_OFF),
  };
}
