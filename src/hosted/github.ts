/**
 * Sign in with GitHub (gateway §7 "Accounts"). Without `HOLON_GITHUB_CLIENT_ID` and
 * `_SECRET` sign-in is off: its three operations answer 503 `github_signin_off` and the
 * gateway runs on.
 */
import { HttpError } from '../http/errors.ts';
import type { MountedHandler } from '../http/mount.ts';

/** The handlers of the three sign-in operations. */
export type GithubHandlers = Record<'github-signin' | 'github-callback' | 'github-exchange', MountedHandler>;

/** The handlers when sign-in is off. */
export function githubOff(): GithubHandlers {
  const off: MountedHandler = async () => {
    throw new HttpError(503, 'github_signin_off', 'sign in with GitHub is off on this gateway (no HOLON_GITHUB_CLIENT_ID/HOLON_GITHUB_CLIENT_SECRET): sign up with POST /v0/signup');
  };
  return { 'github-signin': off, 'github-callback': off, 'github-exchange': off };
}
