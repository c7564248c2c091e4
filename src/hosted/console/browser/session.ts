/**
 * Where the console keeps its key (issue 11, gateway §7 "Accounts"): in this tab's
 * `sessionStorage` only, never in a URL, a cookie or `localStorage`, so it is gone when the tab
 * closes. The sign-in fragment `#login=<code>` (or `#login_error=<code>`) is read once and wiped
 * from the address bar and the history before anything else runs.
 */

const KEY_ITEM = 'holon.key';

/** What the address bar's fragment carried at load: a one-time sign-in code, a sign-in error code, or nothing. */
export type LoginFragment = { login: string } | { login_error: string } | null;

/** Reads `#login=<code>` / `#login_error=<code>` from `location` and replaces the URL with the bare `/console`. */
export function takeLoginFragment(): LoginFragment {
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (location.hash !== '') history.replaceState(null, '', location.pathname);
  const login = fragment.get('login');
  if (login) return { login };
  const error = fragment.get('login_error');
  return error ? { login_error: error } : null;
}

/** The key of this tab's session, or null. */
export function storedKey(): string | null {
  return sessionStorage.getItem(KEY_ITEM);
}

/** Keeps `key` for this tab's session. */
export function storeKey(key: string): void {
  sessionStorage.setItem(KEY_ITEM, key);
}

/** Forgets the key (sign out). */
export function forgetKey(): void {
  sessionStorage.removeItem(KEY_ITEM);
}
