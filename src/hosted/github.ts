/**
 * Sign in with GitHub (gateway §7 "Accounts"). `GET /v0/auth/github` sends the browser to
 * GitHub with a random `state`, also set in an `HttpOnly`, `SameSite=Lax` cookie; the callback
 * accepts it once, from the browser holding the cookie, within 10 minutes; it reads the GitHub
 * account (id, login, primary verified email) with a token it never keeps, and sends the browser
 * to `/console#login=<code>`, a one-time code valid 2 minutes that `POST /v0/auth/exchange`
 * trades for a human key expiring after 30 days (and, for a new account, its agent key). No key
 * ever travels in a URL. The first sign-in creates the account (handle = login, lowercased) or
 * links the account with the same, now verified, email. A disabled account gets no new key.
 * GitHub's base URLs are settings, so tests run against a local stand-in. Without
 * `HOLON_GITHUB_CLIENT_ID`/`_SECRET` sign-in is off: the three operations answer 503.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';
import type { Knex } from 'knex';
import { HttpError } from '../http/errors.ts';
import type { Handler } from '../../generated/gateway/server.ts';
import { createAccountRows, creditSignup, type AccountDeps } from './accounts.ts';
import { GITHUB_SIGN_IN_OFF } from './features.ts';
import { normalizeHandle, refuseReserved } from './handles.ts';
import { mintKey, sha256, SIGNIN_KEY_TTL_MS } from './keys.ts';
import type { HostedSettings } from './settings.ts';

/** The handlers of the three sign-in operations. */
export type GithubHandlers = { [K in 'github-signin' | 'github-callback' | 'github-exchange']: Handler<K> };

/** How long a sign-in `state` is accepted: 10 minutes. */
export const STATE_TTL_MS = 10 * 60_000;

/** How long a one-time login code is accepted: 2 minutes. */
export const LOGIN_CODE_TTL_MS = 2 * 60_000;

/** How long one request to GitHub may take before sign-in fails with `github_unavailable`. */
export const GITHUB_TIMEOUT_MS = 10_000;

const COOKIE = 'holon_github_state';

/** A sign-in refusal that ends at `/console#login_error=<code>`. */
class LoginError extends Error {
  constructor(readonly code: string) {
    super(code);
  }
}

/** The handlers when sign-in is off. */
export function githubOff(): GithubHandlers {
  const off = async (): Promise<never> => {
    throw new HttpError(503, 'github_signin_off', `${GITHUB_SIGN_IN_OFF}: sign up with POST /v0/signup`);
  };
  return { 'github-signin': off, 'github-callback': off, 'github-exchange': off };
}

/** Calls GitHub and answers its JSON; any failure is `github_unavailable`. */
async function githubJson(url: string, init: RequestInit): Promise<any> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(GITHUB_TIMEOUT_MS) });
  } catch {
    throw new LoginError('github_unavailable');
  }
  if (!response.ok) throw new LoginError(response.status === 401 ? 'github_refused' : 'github_unavailable');
  return response.json().catch(() => {
    throw new LoginError('github_unavailable');
  });
}

/** The GitHub account behind an authorization code: id, login, primary verified email (or null). The token is dropped here. */
async function readGithubAccount(github: NonNullable<HostedSettings['github']>, code: string, redirect_uri: string) {
  const token = await githubJson(`${github.web_url}/login/oauth/access_token`, {
    method: 'POST',
    headers: { accept: 'application/json', 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: github.client_id, client_secret: github.client_secret, code, redirect_uri }),
  });
  if (typeof token.access_token !== 'string') throw new LoginError('github_refused');
  const headers = { accept: 'application/vnd.github+json', authorization: `Bearer ${token.access_token}` };
  const user = await githubJson(`${github.api_url}/user`, { headers });
  const emails = await githubJson(`${github.api_url}/user/emails`, { headers });
  if (!Number.isSafeInteger(user.id) || typeof user.login !== 'string') throw new LoginError('github_unavailable');
  const primary = Array.isArray(emails) ? emails.find((e) => e?.primary === true && e?.verified === true && typeof e.email === 'string') : undefined;
  return { id: user.id as number, login: user.login as string, email: primary ? (primary.email as string).toLowerCase() : null };
}

/**
 * The account a GitHub identity signs in to: the one linked to its id, else the one with its
 * verified email (now linked), else a new one with handle = login lowercased (credited).
 */
async function accountFor(deps: AccountDeps, github: { id: number; login: string; email: string | null }): Promise<{ handle: string; created: boolean }> {
  const created = await deps.db.transaction(async (trx) => {
    const linked = (await trx('hosted_accounts').where({ github_id: github.id }).first()) ?? (github.email ? await trx('hosted_accounts').where({ email: github.email }).first() : undefined);
    if (linked) {
      if (linked.disabled_at !== null) throw new LoginError('account_disabled');
      await trx('hosted_accounts').where({ handle: linked.handle }).update({ github_id: github.id, github_login: github.login });
      return { handle: linked.handle as string, created: false };
    }
    let handle: string;
    try {
      handle = normalizeHandle(github.login);
      refuseReserved(handle, deps.authorNamespaces());
      await createAccountRows(trx, deps, { handle, email: github.email, github: { id: github.id, login: github.login } });
    } catch (error) {
      if (error instanceof HttpError) throw new LoginError(error.code === 'email_taken' ? 'email_taken' : 'handle_unavailable');
      throw error;
    }
    return { handle, created: true };
  });
  if (created.created) await creditSignup(deps, created.handle).catch(() => {
    throw new LoginError('clearing_unavailable');
  });
  return created;
}

/** The sign-in handlers over GitHub's (or a stand-in's) base URLs. */
export function githubSignIn(deps: AccountDeps, settings: HostedSettings): GithubHandlers {
  const github = settings.github;
  if (!github) return githubOff();
  const db: Knex = deps.db;
  // Koa 3's ctx.origin is the request's Origin header (absent on a navigation): the origin the browser used is protocol and Host.
  const callbackUrl = (ctx: Koa.Context) => `${settings.public_url ?? `${ctx.protocol}://${ctx.host}`}/v0/auth/github/callback`;
  const secure = (settings.public_url ?? '').startsWith('https://');

  return {
    'github-signin': async (_request, ctx) => {
      const state = randomBytes(32).toString('base64url');
      await db('hosted_login_states').insert({ state_sha256: sha256(state), expires_at: new Date(Date.now() + STATE_TTL_MS) });
      ctx.cookies.set(COOKIE, state, { httpOnly: true, sameSite: 'lax', secure, path: '/v0/auth/github', maxAge: STATE_TTL_MS, overwrite: true });
      const authorize = new URL(`${github.web_url}/login/oauth/authorize`);
      authorize.search = new URLSearchParams({ client_id: github.client_id, redirect_uri: callbackUrl(ctx), state, scope: 'read:user user:email' }).toString();
      ctx.redirect(authorize.toString());
      return `Redirecting to ${authorize.origin}`;
    },

    'github-callback': async ({ query }: { query: { code?: string; state?: string; error?: string } }, ctx) => {
      const cookie = ctx.cookies.get(COOKIE) ?? '';
      ctx.cookies.set(COOKIE, null, { path: '/v0/auth/github' });
      try {
        if (query.error !== undefined || !query.code || !query.state) throw new LoginError('access_denied');
        const sameBrowser = cookie.length === query.state.length && timingSafeEqual(Buffer.from(cookie), Buffer.from(query.state));
        const used = await db('hosted_login_states')
          .where({ state_sha256: sha256(query.state) })
          .whereNull('used_at')
          .where('expires_at', '>', new Date())
          .update({ used_at: new Date() })
          .returning('state_sha256');
        if (!sameBrowser || used.length === 0) throw new LoginError('invalid_state');
        const account = await accountFor(deps, await readGithubAccount(github, query.code, callbackUrl(ctx)));
        const code = randomBytes(24).toString('base64url');
        await db('hosted_login_codes').insert({ code_sha256: sha256(code), account: account.handle, new_account: account.created, expires_at: new Date(Date.now() + LOGIN_CODE_TTL_MS) });
        ctx.redirect(`/console#login=${code}`);
      } catch (error) {
        if (!(error instanceof LoginError)) throw error;
        ctx.redirect(`/console#login_error=${error.code}`);
      }
      return 'Redirecting to /console';
    },

    'github-exchange': async ({ body }: { body: { code: string } }) => {
      return db.transaction(async (trx) => {
        const [row] = await trx('hosted_login_codes')
          .where({ code_sha256: sha256(body.code) })
          .whereNull('used_at')
          .where('expires_at', '>', new Date())
          .update({ used_at: new Date() })
          .returning(['account', 'new_account']);
        if (!row) throw new HttpError(404, 'no_such_login_code', 'this sign-in code is unknown, used or older than 2 minutes: sign in again');
        const account = await trx('hosted_accounts').where({ handle: row.account }).first('disabled_at');
        if (account.disabled_at !== null) throw new HttpError(403, 'account_disabled', 'this account is disabled: it gets no new key');
        const human_key = await mintKey(trx, { kind: 'human', account: row.account, mandate: null, ask_in_client: false, ttl_ms: SIGNIN_KEY_TTL_MS });
        // A new account's agent key is minted here, with its human key, so no secret waits anywhere between the two requests.
        const agent_key = row.new_account ? await mintKey(trx, { kind: 'agent', account: row.account, mandate: `${row.account}/sandbox`, ask_in_client: true, ttl_ms: null }) : undefined;
        return { handle: row.account, human_key, ...(agent_key ? { agent_key } : {}) };
      });
    },
  };
}
