/**
 * The loopback gate of clearing-contract §3: a request is answered only when its peer is a
 * loopback address and it carries no proxy header (`Forwarded`, any `X-Forwarded-*`, `X-Real-IP`,
 * `Via`: a reverse proxy also connects from loopback, and the header it adds is what gives away a
 * request that came from the internet through one). Anything else: 403 `not_permitted`. Paths in
 * `open` (the health check) are outside the gate.
 */
import type { Socket } from 'node:net';
import type { Middleware } from 'koa';
import ipaddr from 'ipaddr.js';
import { HttpError } from './errors.ts';

/** True when `address` (as Node reports a socket's peer, IPv4, IPv6 or IPv4-mapped) is loopback. */
export function isLoopback(address: string | undefined): boolean {
  if (!address || !ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'loopback';
}

/**
 * The name of the first proxy header among `headers` (Node's lower-cased request headers), or
 * null: `forwarded` (RFC 7239), any `x-forwarded-*`, `x-real-ip`, `via`. Present at all, even
 * empty, counts: that is what a proxy leaves behind.
 */
export function proxyHeader(headers: Record<string, unknown>): string | null {
  for (const name of Object.keys(headers)) {
    if (name === 'forwarded' || name === 'x-real-ip' || name === 'via' || name.startsWith('x-forwarded-')) return name;
  }
  return null;
}

/**
 * Koa middleware enforcing the §3 gate on every path except those in `open`. Throws `HttpError` 403.
 * A connection's peer is fixed for its life, so each keep-alive connection's peer is classified
 * once (parsing the address on every request was a measurable share of the admission path's
 * allocations, issue 12 §2); the proxy headers are checked on every request.
 */
export function loopbackGate(open: readonly string[]): Middleware {
  const loopbackPeers = new WeakMap<Socket, boolean>();
  const peerIsLoopback = (socket: Socket): boolean => {
    let loopback = loopbackPeers.get(socket);
    if (loopback === undefined) {
      loopback = isLoopback(socket.remoteAddress);
      // A destroyed socket reports no address: refused now, and not remembered.
      if (socket.remoteAddress !== undefined) loopbackPeers.set(socket, loopback);
    }
    return loopback;
  };
  return async (ctx, next) => {
    if (!open.includes(ctx.path)) {
      if (!peerIsLoopback(ctx.req.socket)) {
        throw new HttpError(403, 'not_permitted', `only a local caller may use this binding; the peer ${ctx.req.socket.remoteAddress} is not loopback`);
      }
      // Node's raw headers, not `ctx.get`, which reads an empty header as absent.
      const proxied = proxyHeader(ctx.req.headers);
      if (proxied !== null) {
        throw new HttpError(403, 'not_permitted', `a request carrying the proxy header ${proxied} came through a proxy; only an unproxied local caller may use this binding`);
      }
    }
    await next();
  };
}
