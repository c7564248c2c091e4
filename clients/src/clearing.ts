/**
 * `@holon/client/clearing`: the typed client of the clearing contract (`openapi/clearing.yaml`),
 * for operators and binding authors. `createClearingClient` configures the generated client; pass
 * it to the generated functions, which then resolve with `{ data }` and throw `HolonError` /
 * `HolonUnreachable` like the gateway client: `await readBalance({ client, path: { account } })`.
 */
import { createClient, createConfig, type Client } from '../../generated/clearing/client/client/index.js';
import { clientConfig, toHolonError, type ClientOptions } from './errors.js';

export * from '../../generated/clearing/client/index.js';
/** The generated default client (base URL from the document's `servers`); `createClearingClient` is the configured one. */
export { client } from '../../generated/clearing/client/client.gen.js';
export { HolonError, HolonUnreachable, type ClientOptions, type HolonErrorBody } from './errors.js';

/** A generated clearing client for the binding at `options.baseUrl`, throwing on any non-2xx answer. Throws a `TypeError` for a URL without an http(s) scheme. */
export function createClearingClient(options: ClientOptions): Client {
  const client = createClient(createConfig(clientConfig(options)));
  client.interceptors.error.use(toHolonError);
  return client;
}
