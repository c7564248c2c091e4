/**
 * `GET /metrics` (issue 22 §1): the Prometheus text exposition of this process's metrics
 * (`metrics.ts`). On the gateway's own port it is answered before any rate limit or principal,
 * readable with the admin key when one is given (the hosted gateway), else by loopback peers
 * only, unproxied (the dev gateway, and the reference binding). A separate listener
 * ({@link startMetricsListener}, `--metrics-port`) answers it alone, with no key, on loopback
 * by default.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Middleware } from 'koa';
import { isLoopback, proxyHeader } from '../http/access.ts';
import { HttpError } from '../http/errors.ts';
import { exposition } from './metrics.ts';

/** The path metrics are answered at. */
export const METRICS_PATH = '/metrics';

/** The longest `Authorization` header read, in characters: a longer one is refused unread. */
const MAX_AUTHORIZATION_CHARS = 1024;

/** Who may read `/metrics` on the app's port: holders of `key`, or with `key` null loopback peers only. */
export interface MetricsAccess {
  key: string | null;
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Throws 401 `key_required` / `invalid_key` unless the request presents `key` as a bearer token (compared in constant time). */
function requireKey(header: string, key: string): void {
  if (header === '') throw new HttpError(401, 'key_required', 'GET /metrics needs the admin key: send `Authorization: Bearer <HOLON_ADMIN_KEY>`, or scrape the --metrics-port listener');
  const match = header.length <= MAX_AUTHORIZATION_CHARS ? /^Bearer (\S+)$/i.exec(header) : null;
  if (!match || !timingSafeEqual(digest(match[1]), digest(key))) throw new HttpError(401, 'invalid_key', 'GET /metrics needs the admin key; the key sent is not it');
}

/** Throws 403 `not_permitted` unless the peer is loopback and no proxy header came with the request. */
function requireLocal(peer: string | undefined, headers: Record<string, unknown>): void {
  const proxied = proxyHeader(headers);
  if (!isLoopback(peer) || proxied !== null) {
    throw new HttpError(403, 'not_permitted', `GET /metrics is answered to an unproxied local caller only (peer ${peer ?? 'unknown'}${proxied ? `, proxy header ${proxied}` : ''}): scrape from this machine, or use the --metrics-port listener`);
  }
}

/** Koa middleware answering `GET /metrics` under `access`; every other request passes on. */
export function metricsRoute(access: MetricsAccess): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== METRICS_PATH || ctx.method !== 'GET') return next();
    if (access.key !== null) requireKey(ctx.get('authorization'), access.key);
    else requireLocal(ctx.req.socket.remoteAddress, ctx.req.headers);
    const { text, content_type } = await exposition();
    ctx.type = content_type;
    ctx.body = text;
  };
}

/** A running metrics listener. */
export interface MetricsListener {
  url: string;
  close(): Promise<void>;
}

/**
 * Starts a listener answering only `GET /metrics` (404 otherwise), with no key: bind it where
 * only the scraper reaches (`host`, default 127.0.0.1). `port` 0 picks a free one.
 */
export async function startMetricsListener(port: number, host = '127.0.0.1'): Promise<MetricsListener> {
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== METRICS_PATH) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`only GET ${METRICS_PATH} is served here\n`);
      return;
    }
    exposition().then(
      ({ text, content_type }) => res.writeHead(200, { 'content-type': content_type }).end(text),
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('the metrics could not be collected\n'),
    );
  });
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject).listen(port, host));
  const { address, port: bound } = server.address() as AddressInfo;
  return {
    url: `http://${address.includes(':') ? `[${address}]` : address}:${bound}${METRICS_PATH}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
