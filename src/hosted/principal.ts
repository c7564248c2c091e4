/**
 * Principals (gateway §7 "Principals"): the one middleware that resolves who is calling from
 * `Authorization: Bearer <key>`, and the question every hosted handler asks it. A key that is
 * presented but unknown, revoked or expired is refused 401 `invalid_key` on every route: a
 * caller whose key stopped working learns it at once instead of being served as anonymous.
 */
import type Koa from 'koa';
import type { Knex } from 'knex';
import { HttpError } from '../http/errors.ts';
import { sameSecret, verifyKey, type KeyRow } from './keys.ts';

/** Who is calling. `account` is the handle for human and agent keys. */
export type Principal =
  | { kind: 'none' }
  | { kind: 'admin'; prefix: 'admin' }
  | { kind: 'human'; account: string; prefix: string; key: KeyRow }
  | { kind: 'agent'; account: string; prefix: string; key: KeyRow; mandate: string };

/** The kinds a route may be opened to. */
export type PrincipalKind = Principal['kind'];

/** Largest Authorization header read, in characters; longer ones are refused 401 `invalid_key`. */
export const MAX_AUTHORIZATION_CHARS = 512;

const invalidKey = () => new HttpError(401, 'invalid_key', 'the key is unknown, revoked or expired: sign in again or ask the account owner for a new key');

/** Reads the presented key of a request, or null when none is presented. */
function presentedKey(ctx: Koa.Context): string | null {
  const header = ctx.get('authorization');
  if (header === '') return null;
  if (header.length > MAX_AUTHORIZATION_CHARS) throw invalidKey();
  const match = /^Bearer (\S+)$/i.exec(header);
  if (!match) throw new HttpError(401, 'invalid_key', 'send the key as `Authorization: Bearer <key>`');
  return match[1];
}

/** Resolves a presented key to its principal; throws 401 `invalid_key` when it is not a live key. */
export async function resolvePrincipal(db: Knex, presented: string | null, admin_key: string | null): Promise<Principal> {
  if (presented === null) return { kind: 'none' };
  if (admin_key !== null && !presented.startsWith('hlk_') && sameSecret(presented, admin_key)) return { kind: 'admin', prefix: 'admin' };
  const key = await verifyKey(db, presented);
  if (!key) throw invalidKey();
  if (key.kind === 'agent') return { kind: 'agent', account: key.account, prefix: key.prefix, key, mandate: key.mandate! };
  return { kind: 'human', account: key.account, prefix: key.prefix, key };
}

/** Koa middleware: sets `ctx.state.principal` for every request that follows. */
export function principalMiddleware(db: Knex, admin_key: string | null): Koa.Middleware {
  return async (ctx, next) => {
    ctx.state.principal = await resolvePrincipal(db, presentedKey(ctx), admin_key);
    await next();
  };
}

/** The principal the middleware resolved for this request. */
export function principalOf(ctx: Koa.Context): Principal {
  const principal = ctx.state.principal as Principal | undefined;
  if (!principal) throw new Error('principalMiddleware did not run before this handler');
  return principal;
}

/**
 * Asks whether the request's principal is one of `kinds`; answers the principal, or throws 401
 * `key_required` (no key) or 403 `wrong_principal`.
 */
export function requirePrincipal<K extends PrincipalKind>(ctx: Koa.Context, kinds: readonly K[]): Extract<Principal, { kind: K }> {
  const principal = principalOf(ctx);
  if ((kinds as readonly string[]).includes(principal.kind)) return principal as Extract<Principal, { kind: K }>;
  if (principal.kind === 'none') throw new HttpError(401, 'key_required', `this operation needs a key (${kinds.join(' or ')}): send Authorization: Bearer <key>`);
  throw new HttpError(403, 'wrong_principal', `a ${principal.kind} key may not do this; it needs a ${kinds.join(' or ')} key`);
}
