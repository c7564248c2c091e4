/**
 * Account handles (gateway §7 "Accounts"): 2 to 39 characters like GitHub logins (letters,
 * digits, single inner hyphens), stored lowercased. Handles that would collect other people's
 * money are refused: every agent author's namespace in the registry, the platform account, and
 * a reserved list (with the project's former names).
 */
import { HttpError } from '../http/errors.ts';

/** GitHub's login rule: 1 alphanumeric, then alphanumerics or single hyphens, no trailing hyphen; 2-39 characters here. */
const HANDLE = /^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){1,38}$/;

/** Names no one may sign up as: the platform, the machinery's account prefixes, operator words and the project's former names. */
export const RESERVED_HANDLES: ReadonlySet<string> = new Set([
  'holon', 'holon-labs', 'holonlabs', 'holon-ai', 'platform', 'external', 'fees', 'admin', 'administrator', 'root', 'system',
  'operator', 'support', 'security', 'billing', 'api', 'www', 'console', 'docs', 'status', 'dev', 'test', 'null', 'anonymous',
  'agentnet', 'agent-net', 'agentmesh', 'clearing', 'gateway', 'mcp',
]);

/** Lowercases a handle and checks its shape; throws 422 `invalid_request`. */
export function normalizeHandle(handle: string): string {
  const lower = handle.toLowerCase();
  if (!HANDLE.test(lower)) {
    throw new HttpError(422, 'invalid_request', `invalid request: handle "${handle}" must be 2 to 39 letters, digits or single inner hyphens, like a GitHub login`);
  }
  return lower;
}

/** Throws 422 `handle_reserved` when `handle` (lowercased) is an author's namespace or reserved. */
export function refuseReserved(handle: string, authorNamespaces: ReadonlySet<string>): void {
  if (RESERVED_HANDLES.has(handle) || authorNamespaces.has(handle)) {
    throw new HttpError(422, 'handle_reserved', `the handle "${handle}" is reserved (an agent author's namespace, the platform or a reserved name): choose another`);
  }
}
