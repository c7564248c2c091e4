/**
 * The guarded HTTP client of the hosted gateway (gateway §7 "Network safety"): every request to
 * a published agent's endpoint, MCP or webhook, goes through it, and so does the publish-time
 * check of `runtime.endpoint`.
 *
 * The check sits on the connection itself (undici's `connect` hook), not on the URL: for each new
 * connection the host is read as an IP literal (decimal, octal, hex, trailing dot included) or
 * resolved, every address it resolves to must be public ({@link refusalOf}), and the socket is
 * then opened to that exact address (pinned: no second lookup a rebinding name could answer
 * differently). The address the socket reports once connected is checked again. A name that was
 * public at publish time and private at call time (DNS rebinding) is refused at call time, before
 * any packet leaves. Redirects are never followed. Shipped agents (`agents/`, `examples/`) do not
 * use this client: the gateway picks it by where a listed version came from, not by its URL.
 *
 * `HOLON_ALLOW_PRIVATE_ENDPOINTS=1` lifts the address check, and only it, for local development
 * (gateway §7: "lifts it"): a loopback or private endpoint can then be drafted, published and
 * called. It never lifts the https rule (gateway §7 "Publishing agents": `runtime.endpoint` is
 * `https`): a draft is a manifest to publish, so it is held to the same rule. Production refuses
 * to start with it (`settings.ts`).
 */
import { lookup } from 'node:dns/promises';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { HttpError } from '../http/errors.ts';
import type { Fetch } from '../runtimes/http.ts';
import { literalAddress, refusalOf } from './addresses.ts';

/** The longest `runtime.endpoint` accepted, in characters. */
export const MAX_ENDPOINT_CHARS = 2048;

/** How long resolving an endpoint's host may take, in ms; past it the endpoint is refused. */
export const RESOLVE_TIMEOUT_MS = 5000;

/** A resolver: every address `hostname` resolves to (IPv4 and IPv6). Injectable so tests never use the machine's DNS. */
export type Resolve = (hostname: string) => Promise<string[]>;

/** Options of the guarded client and of {@link assertPublicEndpoint}. */
export interface EgressOptions {
  /** Lift the address check (default {@link privateEndpointsAllowed}). */
  allow_private?: boolean;
  /** The resolver (default: the system's, `dns.lookup` with every address). */
  resolve?: Resolve;
  /** Certificate authorities (PEM) trusted instead of Node's bundled ones (default: Node's); a private CA, or the tests' own. */
  ca?: string;
}

/** A connection the guard refused: the host, the address and its range. Nothing was sent to it. */
export class EndpointRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EndpointRefused';
  }
}

/** Whether `HOLON_ALLOW_PRIVATE_ENDPOINTS=1` is set outside production (gateway §7 "Operating"). */
export function privateEndpointsAllowed(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.HOLON_ALLOW_PRIVATE_ENDPOINTS === '1' && env.NODE_ENV !== 'production';
}

/** The system resolver: every address of `hostname`, as the OS gives them. */
const systemResolve: Resolve = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/** `promise`, or a rejection once {@link RESOLVE_TIMEOUT_MS} passed. */
function boundedResolve(resolve: Resolve, hostname: string): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new EndpointRefused(`${hostname} did not resolve within ${RESOLVE_TIMEOUT_MS} ms`)), RESOLVE_TIMEOUT_MS);
  });
  return Promise.race([resolve(hostname), expired]).finally(() => clearTimeout(timer));
}

const refusedAddress = (host: string, address: string, range: string) =>
  new EndpointRefused(
    `${host === address ? address : `${host} resolves to ${address}, which`} is a ${range} address: a published agent's endpoint must reach only public addresses (gateway §7 "Network safety")`,
  );

/**
 * The one address a connection to `host` uses: the literal itself, or the first address it
 * resolves to. Unless `allow_private`, every one of them must be public. Throws
 * {@link EndpointRefused} for a non-public address (any of them), a name that does not resolve,
 * or a resolver slower than the bound.
 */
export async function addressOf(host: string, resolve: Resolve, allow_private = false): Promise<string> {
  const literal = literalAddress(host);
  let addresses: string[];
  if (literal !== null) addresses = [literal];
  else {
    try {
      addresses = await boundedResolve(resolve, host);
    } catch (error) {
      if (error instanceof EndpointRefused) throw error;
      throw new EndpointRefused(`${host} does not resolve (${(error as { code?: string }).code ?? (error as Error).message})`);
    }
  }
  if (addresses.length === 0) throw new EndpointRefused(`${host} does not resolve to any address`);
  for (const address of allow_private ? [] : addresses) {
    const range = refusalOf(address);
    if (range !== null) throw refusedAddress(host, address, range);
  }
  return addresses[0];
}

/**
 * An undici dispatcher whose every new connection is pinned to the address {@link addressOf}
 * answers, and checked unless `allow_private` (see the module comment). A refused connection
 * fails with {@link EndpointRefused} before any socket is opened.
 */
export function guardedDispatcher(options: EgressOptions = {}): Agent {
  const allow = options.allow_private ?? privateEndpointsAllowed();
  const resolve = options.resolve ?? systemResolve;
  const connector = buildConnector(options.ca === undefined ? {} : { ca: options.ca });
  return new Agent({
    connect(target, callback) {
      const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
      addressOf(host, resolve, allow).then(
        (address) =>
          // `host` (name and port) stays as it was: TLS still sends the name and checks the certificate against it.
          connector({ ...target, hostname: address }, (error, socket) => {
            if (error !== null) return callback(error, null);
            const range = allow ? null : refusalOf(socket.remoteAddress ?? '');
            if (range === null) return callback(null, socket);
            socket.destroy();
            callback(refusedAddress(host, socket.remoteAddress ?? 'no address', range), null);
          }),
        (error: Error) => callback(error, null),
      );
    },
  });
}

/**
 * A fetch over {@link guardedDispatcher} that never follows a redirect (a 3xx is answered as is,
 * its target never contacted). A refused connection rejects like any network failure (a
 * `TypeError` whose `cause` is the {@link EndpointRefused}).
 */
export function guardedFetch(options: EgressOptions = {}): Fetch {
  const dispatcher = guardedDispatcher(options);
  return ((input: Parameters<Fetch>[0], init?: RequestInit) =>
    undiciFetch(input as Parameters<typeof undiciFetch>[0], { ...(init as Parameters<typeof undiciFetch>[1]), redirect: 'manual', dispatcher })) as unknown as Fetch;
}

/**
 * The publish-time check of a `runtime.endpoint` (gateway §7 "Publishing agents"): an `https`
 * URL of at most {@link MAX_ENDPOINT_CHARS} characters, without credentials, whose host is a public
 * address or resolves only to public addresses. With `allow_private` (development), private
 * addresses pass; `http` never does. Throws HttpError 422 `endpoint_refused` naming what is wrong.
 */
export async function assertPublicEndpoint(url: string, options: EgressOptions = {}): Promise<void> {
  const refuse = (why: string) => new HttpError(422, 'endpoint_refused', `runtime.endpoint ${JSON.stringify(url.slice(0, 200))} is refused: ${why}`);
  if (url.length > MAX_ENDPOINT_CHARS) throw refuse(`it is longer than ${MAX_ENDPOINT_CHARS} characters`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw refuse('it is not a URL');
  }
  if (parsed.username !== '' || parsed.password !== '') throw refuse('it carries credentials; set the token with `holon credential set` instead');
  if (parsed.protocol !== 'https:') throw refuse('it must be an https URL (HOLON_ALLOW_PRIVATE_ENDPOINTS lifts the address check only)');
  if (options.allow_private ?? privateEndpointsAllowed()) return;
  try {
    await addressOf(parsed.hostname.replace(/^\[(.*)\]$/, '$1'), options.resolve ?? systemResolve);
  } catch (error) {
    if (error instanceof EndpointRefused) throw refuse(error.message);
    throw error;
  }
}
