/**
 * Rate limits of the hosted gateway (gateway §7 "Limits and platform rules"): per account (every
 * key of an account shares one budget, so more keys buy nothing), per client address, sign-ups
 * per address, and the operator key's own. The client address is the socket's peer, or with
 * `HOLON_TRUST_PROXY=1` the last `X-Forwarded-For` entry, the one the trusted proxy appended:
 * entries a client wrote itself come before it and are never read, so a forged header buys
 * nothing. Counting is rate-limiter-flexible's: on Postgres in the shared table
 * `hosted_rate_limits` (migration 019), one atomic upsert per request and limit, so a limit holds
 * for all the gateway processes on the database together (issue 27 §1); on PGlite, one process
 * by construction, in memory.
 */
import type Koa from 'koa';
import type { Knex } from 'knex';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes, RLWrapperTimeouts, type RateLimiterAbstract } from 'rate-limiter-flexible';
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

/** Where the counters live: the gateway's database and its engine (`Database` of `src/db/`). */
export interface RateStore {
  knex: Knex;
  engine: 'postgres' | 'pglite';
}

/**
 * How long a request waits for the shared counter: 1,000 ms. Past it, or when the database
 * refuses, the request is counted in this process's memory instead (the limit as one process
 * counts it): the limit fails over to per-process counting, never fully open and never a 500.
 */
export const RATE_STORE_TIMEOUT_MS = 1000;

/** A limit of `points` requests per `duration_s` seconds, counted by `limiter`. */
export interface RateCounter {
  limiter: RateLimiterAbstract;
  points: number;
  duration_s: number;
}

/**
 * The counter of limit `name` (its rows' key prefix in `hosted_rate_limits`): shared through
 * `store` on Postgres, with this process's memory as its insurance past `timeout_ms`; in memory
 * on PGlite or without a store.
 */
export function rateCounter(store: RateStore | null, name: string, points: number, duration_s: number, timeout_ms = RATE_STORE_TIMEOUT_MS): RateCounter {
  const memory = new RateLimiterMemory({ keyPrefix: name, points, duration: duration_s });
  if (store === null || store.engine === 'pglite') return { limiter: memory, points, duration_s };
  // The library deletes rows expired for an hour every 5 minutes (`clearExpiredByTimeout`), so the table stays as small as the keys of the last hour.
  // `inMemoryBlockOnConsumed`: once the shared count is past the limit, this process refuses the key from memory until the window ends, so a flood costs the database one query per process and key, not one per request.
  const shared = new RateLimiterPostgres({ storeClient: store.knex, storeType: 'knex', tableName: 'hosted_rate_limits', tableCreated: true, keyPrefix: name, points, duration: duration_s, inMemoryBlockOnConsumed: points + 1 });
  // The insurance sits on the wrapper alone: a store error after the timeout must not count the request twice.
  return { limiter: new RLWrapperTimeouts({ limiter: shared, timeoutMs: timeout_ms, insuranceLimiter: memory }), points, duration_s };
}

/** The client's address: the socket's peer, or behind a trusted proxy the last `X-Forwarded-For` entry. */
export function clientAddress(ctx: Koa.Context, trust_proxy: boolean): string {
  const peer = ctx.req.socket.remoteAddress ?? 'unknown';
  if (!trust_proxy) return peer;
  const entries = ctx.get('x-forwarded-for').split(',').map((entry) => entry.trim()).filter(Boolean);
  return entries.at(-1) ?? peer;
}

/** Consumes one point of `key` in `counter`; throws 429 `rate_limited` with `Retry-After` when the window is spent. */
export async function consume(ctx: Koa.Context, counter: RateCounter, key: string, what: string): Promise<void> {
  try {
    await counter.limiter.consume(key);
  } catch (error) {
    if (!(error instanceof RateLimiterRes)) throw error;
    const seconds = Math.ceil(error.msBeforeNext / 1000);
    ctx.set('Retry-After', String(seconds));
    throw new HttpError(429, 'rate_limited', `too many requests ${what} (at most ${counter.points} per ${counter.duration_s} s): try again in ${seconds} s`);
  }
}

/** The limiters, counted through `store` ({@link rateCounter}), and the middleware that applies them. */
export function rateLimits(limits: RateLimits, trust_proxy: boolean, store: RateStore | null) {
  const address = rateCounter(store, 'address', limits.address_per_minute, 60);
  const account = rateCounter(store, 'account', limits.account_per_minute, 60);
  const admin = rateCounter(store, 'admin', limits.admin_per_minute, 60);
  const signups = rateCounter(store, 'signup', limits.signups_per_hour, 3600);
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
