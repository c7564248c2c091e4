/**
 * Rate limits of the hosted gateway (gateway §7 "Limits and platform rules"): per account (every
 * key of an account shares one budget, so more keys buy nothing), per client address, sign-ups
 * per address, and the operator key's own. The client address is the socket's peer, or with
 * `HOLON_TRUST_PROXY=1` the last `X-Forwarded-For` entry, the one the trusted proxy appended:
 * entries a client wrote itself come before it and are never read, so a forged header buys
 * nothing. Counting is rate-limiter-flexible's (in memory: one gateway process, gateway §8).
 */
import type Koa from 'koa';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { NumberVariable } from '../config/env.ts';
import { HttpError } from '../http/errors.ts';
import { principalOf } from './principal.ts';

/** Requests allowed per window; every bound is a setting (README "Settings", {@link DEFAULT_RATE_LIMITS}). */
export interface RateLimits {
  /** Requests per address per minute (`HOLON_RATE_ADDRESS`). */
  address_per_minute: number;
  /** Requests per account per minute, all its keys together (`HOLON_RATE_ACCOUNT`). */
  account_per_minute: number;
  /** Requests per minute with the admin key (`HOLON_RATE_ADMIN`). */
  admin_per_minute: number;
  /** Sign-ups per address per hour (`HOLON_RATE_SIGNUP`). */
  signups_per_hour: number;
}

/**
 * The limits when no setting names one. A scripted client sends one request after another, each
 * a network round trip plus the gateway's own time (about 14 ms at one client in `bench/`), so it
 * stays under a few thousand a minute: 3,000 per account (50 a second) stops a runaway loop, not a
 * script, and leaves most of a process to others (one process billed about 150 calls a second in
 * `bench/`). An address may carry several accounts (an office, a NAT): twice that. The admin key
 * is one operator's tools. Sign-ups each post demo credit, so they stay scarce per address.
 */
export const DEFAULT_RATE_LIMITS: RateLimits = { address_per_minute: 6_000, account_per_minute: 3_000, admin_per_minute: 600, signups_per_hour: 5 };

/** The largest figure any rate limit may be set to (per minute, or per hour for sign-ups): above it a limit no longer limits anything. */
export const MAX_RATE_LIMIT = 1_000_000;

/** A rate limit's variable: a whole number from 1 to {@link MAX_RATE_LIMIT}, defaulting to {@link DEFAULT_RATE_LIMITS}. */
const rateVariable = (name: string, what: string, key: keyof RateLimits): NumberVariable => ({ name, what, default: DEFAULT_RATE_LIMITS[key], min: 1, max: MAX_RATE_LIMIT, integer: true });

/** The variables that set each rate limit (read by `readSettings` through `src/config/env.ts`). */
export const RATE_LIMIT_VARIABLES: Record<keyof RateLimits, NumberVariable> = {
  address_per_minute: rateVariable('HOLON_RATE_ADDRESS', 'requests per address per minute', 'address_per_minute'),
  account_per_minute: rateVariable('HOLON_RATE_ACCOUNT', 'requests per account per minute', 'account_per_minute'),
  admin_per_minute: rateVariable('HOLON_RATE_ADMIN', 'requests with the admin key per minute', 'admin_per_minute'),
  signups_per_hour: rateVariable('HOLON_RATE_SIGNUP', 'sign-ups per address per hour', 'signups_per_hour'),
};

/** The client's address: the socket's peer, or behind a trusted proxy the last `X-Forwarded-For` entry. */
export function clientAddress(ctx: Koa.Context, trust_proxy: boolean): string {
  const peer = ctx.req.socket.remoteAddress ?? 'unknown';
  if (!trust_proxy) return peer;
  const entries = ctx.get('x-forwarded-for').split(',').map((entry) => entry.trim()).filter(Boolean);
  return entries.at(-1) ?? peer;
}

/** Consumes one point of `key` in `limiter`; throws 429 `rate_limited` with `Retry-After` when the window is spent. */
export async function consume(ctx: Koa.Context, limiter: RateLimiterMemory, key: string, what: string): Promise<void> {
  try {
    await limiter.consume(key);
  } catch (error) {
    if (!(error instanceof RateLimiterRes)) throw error;
    const seconds = Math.ceil(error.msBeforeNext / 1000);
    ctx.set('Retry-After', String(seconds));
    throw new HttpError(429, 'rate_limited', `too many requests ${what} (at most ${limiter.points} per ${limiter.duration} s): try again in ${seconds} s`);
  }
}

/** The limiters and the middleware that applies them. */
export function rateLimits(limits: RateLimits, trust_proxy: boolean) {
  const address = new RateLimiterMemory({ points: limits.address_per_minute, duration: 60 });
  const account = new RateLimiterMemory({ points: limits.account_per_minute, duration: 60 });
  const admin = new RateLimiterMemory({ points: limits.admin_per_minute, duration: 60 });
  const signups = new RateLimiterMemory({ points: limits.signups_per_hour, duration: 3600 });
  return {
    /** Per address, before any key is looked at (so a flood of bad keys is limited too). */
    byAddress: (async (ctx, next) => {
      await consume(ctx, address, clientAddress(ctx, trust_proxy), 'from this address');
      await next();
    }) as Koa.Middleware,
    /** Per account and for the admin key, after the principal is resolved. */
    byPrincipal: (async (ctx, next) => {
      const principal = principalOf(ctx);
      if (principal.kind === 'admin') await consume(ctx, admin, 'admin', 'with the admin key');
      if (principal.kind === 'human' || principal.kind === 'agent') await consume(ctx, account, principal.account, `from account ${principal.account}`);
      await next();
    }) as Koa.Middleware,
    /** One sign-up from this request's address. */
    signup: (ctx: Koa.Context) => consume(ctx, signups, clientAddress(ctx, trust_proxy), 'signing up from this address'),
  };
}
