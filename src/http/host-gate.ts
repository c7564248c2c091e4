/**
 * The gateway's DNS-rebinding gate (MCP 2025-11-25, Streamable HTTP "Security Warning"; the same
 * rule guards `/v0`, whose calls spend money): a web page the user visits must not be able to
 * drive the gateway through the user's browser.
 *
 * - `Host` must name the gateway: one of the names it listens under (for a loopback listener
 *   `127.0.0.1:PORT`, `localhost:PORT` and `[::1]:PORT`) or a configured public name. A page whose
 *   own name was re-pointed at 127.0.0.1 (DNS rebinding) sends its own name, and is refused.
 * - `Origin`, when present (browsers send it; other clients do not), must be `http(s)://` one of
 *   those names; `Origin: null` is refused too.
 * - A gateway listening on loopback also refuses a peer that is not loopback.
 *
 * A refusal is 403 `not_permitted` with a sentence naming the header, its value and what to
 * configure; on the paths of `rpc_paths` (`/mcp`) the body is a JSON-RPC error without an id,
 * as the MCP specification suggests. Paths in `open` (the health check) are outside the gate.
 */
import { networkInterfaces } from 'node:os';
import type { Middleware } from 'koa';
import ipaddr from 'ipaddr.js';
import { isLoopback } from './access.ts';
import type { ErrorCode } from './errors.ts';

/** Options of {@link hostGate}. */
export interface HostGateOptions {
  /** The names the gateway answers to, each `host[:port]` or a URL whose host is taken ({@link normalizeHost}). */
  hosts: readonly string[];
  /** Refuse peers that are not loopback (the gateway listens on loopback). */
  loopback_peers_only: boolean;
  /** Paths outside the gate, e.g. `/healthz`. */
  open: readonly string[];
  /** Paths whose refusal is a JSON-RPC error body (`/mcp`); elsewhere `{error, code}`. */
  rpc_paths: readonly string[];
  /** Other web origins (`https://site.example`) allowed on the paths under `path_prefix` only (the hosted demo, for the public site). */
  cross_origin?: { path_prefix: string; origins: readonly string[] };
}

/**
 * `value` (`host[:port]`, or a URL such as `https://holon.example.com`) as the lower-case
 * `host[:port]` an HTTP client sends in `Host`, the default port left out; null when it is not
 * a host name or address. IPv6 addresses are bracketed (`[::1]:4000`).
 */
export function normalizeHost(value: string): string | null {
  const text = value.trim();
  const isUrl = text.includes('://');
  // A bare name carries nothing but host and port.
  if (text === '' || (!isUrl && /[\s/?#@\\]/.test(text))) return null;
  try {
    const url = new URL(isUrl ? text : `http://${text}`);
    if (url.username || url.password || url.hostname === '') return null;
    return url.host.toLowerCase();
  } catch {
    return null;
  }
}

/** `address:port` as it appears in a `Host` header (IPv6 bracketed), normalized. */
function hostOf(address: string, port: number): string {
  return normalizeHost(address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`)!;
}

/**
 * The names a server listening on `address:port` answers to: for a loopback address, the
 * loopback names (`127.0.0.1`, `localhost`, `[::1]`) and the address itself; for an unspecified
 * address (`0.0.0.0`, `::`), those and every address of this machine's interfaces; otherwise
 * the address itself. Each with `port`.
 */
export function listenHosts(address: string, port: number): string[] {
  const loopbackNames = ['127.0.0.1', 'localhost', '::1'].map((name) => hostOf(name, port));
  const parsed = ipaddr.isValid(address) ? ipaddr.process(address) : null;
  const range = parsed?.range();
  if (range === 'loopback') return [...new Set([...loopbackNames, hostOf(address, port)])];
  if (range === 'unspecified') {
    const local = Object.values(networkInterfaces())
      .flat()
      .filter((entry) => entry !== undefined)
      .map((entry) => hostOf(entry.address.replace(/%.*$/, ''), port));
    return [...new Set([...loopbackNames, ...local])];
  }
  return [hostOf(address, port)];
}

/** The comma-separated public names of `HOLON_ALLOWED_HOSTS` (e.g. `holon.example.com,https://x.example`), empty when unset. */
export function allowedHostsFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.HOLON_ALLOWED_HOSTS ?? '').split(',').map((name) => name.trim()).filter(Boolean);
}

/**
 * Koa middleware enforcing the gate described above. Throws at construction when a name of
 * `hosts` is not a host (a configuration error, named). Never throws per request: a refusal is
 * an answer.
 */
export function hostGate(options: HostGateOptions): Middleware {
  const allowed = new Set<string>();
  for (const name of options.hosts) {
    const host = normalizeHost(name);
    if (host === null) throw new Error(`allowed host ${JSON.stringify(name)} is not a host name, host:port or URL`);
    allowed.add(host);
  }
  const hint = 'name it with --allowed-hosts or HOLON_ALLOWED_HOSTS if it is this gateway';
  return async (ctx, next) => {
    if (options.open.includes(ctx.path)) return next();
    const refuse = (message: string) => {
      ctx.status = 403;
      ctx.body = options.rpc_paths.includes(ctx.path)
        ? { jsonrpc: '2.0', error: { code: -32000, message }, id: null }
        : { error: message, code: 'not_permitted' satisfies ErrorCode };
    };
    const peer = ctx.req.socket.remoteAddress;
    if (options.loopback_peers_only && !isLoopback(peer)) {
      return refuse(`this gateway listens on loopback and answers only local callers; the peer ${peer} is not loopback (listen elsewhere with --host)`);
    }
    const rawHost = ctx.req.headers.host;
    const host = rawHost === undefined ? null : normalizeHost(rawHost);
    if (host === null || !allowed.has(host)) {
      return refuse(`Host ${JSON.stringify(rawHost ?? '')} is not a name of this gateway (DNS rebinding protection); ${hint}`);
    }
    const origin = ctx.req.headers.origin;
    const crossOrigin = options.cross_origin !== undefined && ctx.path.startsWith(options.cross_origin.path_prefix) && options.cross_origin.origins.includes(origin ?? '');
    if (origin !== undefined && !originAllowed(origin, allowed) && !crossOrigin) {
      return refuse(`Origin ${JSON.stringify(origin)} is not this gateway: requests from other web pages are refused; ${hint}`);
    }
    return next();
  };
}

/** Whether `origin` is `http(s)://` one of `allowed`. */
function originAllowed(origin: string, allowed: ReadonlySet<string>): boolean {
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && allowed.has(url.host.toLowerCase());
  } catch {
    return false;
  }
}
