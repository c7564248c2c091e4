/**
 * How the hosted gateway reaches its authors' endpoints (gateway §6 "Authentication", §7 "Network
 * safety"): one guarded client for every call to a published agent and every draft, the
 * publish-time endpoint check with the same settings, and the author's endpoint credential of an
 * agent. The gateway core receives it as its `published` access; shipped agents never use it.
 */
import type { Knex } from 'knex';
import type { PublishedAccess } from '../gateway/agent-access.ts';
import { credentialKey, readCredential, type CredentialKey } from './credentials.ts';
import { assertPublicEndpoint, guardedFetch, type EgressOptions } from './egress.ts';
import type { HostedSettings } from './settings.ts';

/** The hosted gateway's access to authors' endpoints. */
export interface EndpointAccess extends PublishedAccess {
  /** The key endpoint credentials are sealed with; null without `HOLON_FILE_SECRET` (credentials are off). */
  key: CredentialKey | null;
  /** The publish-time check of a `runtime.endpoint` under the same settings as the client; throws 422 `endpoint_refused`. */
  check(url: string): Promise<void>;
}

/**
 * The access of a hosted gateway with `settings` (`HOLON_FILE_SECRET`, `HOLON_ALLOW_PRIVATE_ENDPOINTS`);
 * `egress.resolve` replaces the system resolver and `egress.ca` Node's certificate authorities (tests).
 */
export function endpointAccess(settings: Pick<HostedSettings, 'file_secret' | 'allow_private_endpoints'>, egress: Pick<EgressOptions, 'resolve' | 'ca'> = {}): EndpointAccess {
  const options: EgressOptions = { ...egress, allow_private: settings.allow_private_endpoints };
  const key = settings.file_secret === null ? null : credentialKey(settings.file_secret);
  return {
    fetch: guardedFetch(options),
    key,
    check: (url) => assertPublicEndpoint(url, options),
    credential: async (db: Knex, agent: string) => (key === null ? null : readCredential(db, key, agent)),
  };
}
