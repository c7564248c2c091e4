/**
 * The loopback gate of clearing-contract §3: a request is answered only when its peer is a
 * loopback address and it carries no `X-Forwarded-For` (which every reverse proxy adds, and which
 * is what gives away a request that came from the internet through one). Anything else: 403
 * `not_permitted`. Paths in `open` (the health check) are outside the gate.
 */
import type { Middleware } from 'koa';
import ipaddr from 'ipaddr.js';
import { HttpError } from './errors.ts';

/** True when `address` (as Node reports a socket's peer, IPv4, IPv6 or IPv4-mapped) is loopback. */
export function isLoopback(address: string | undefined): boolean {
  if (!address || !ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'loopback';
}

/** Koa middleware enforcing the §3 gate on every path except those in `open`. Throws `HttpError` 403. */
export function loopbackGate(open: readonly string[]): Middleware {
  return async (ctx, next) => {
    if (!open.includes(ctx.path)) {
      if (!isLoopback(ctx.req.socket.remoteAddress)) {
        throw new HttpError(403, 'not_permitted', `only a local caller may use this binding; the peer ${ctx.req.socket.remoteAddress} is not loopback`);
      }
      // Present at all, even empty, is what a proxy leaves behind (`ctx.get` reads an empty header as absent).
      if (ctx.req.headers['x-forwarded-for'] !== undefined) {
        throw new HttpError(403, 'not_permitted', 'a request carrying X-Forwarded-For came through a proxy; only an unproxied local caller may use this binding');
      }
    }
    await next();
  };
}
