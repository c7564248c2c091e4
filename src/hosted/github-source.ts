/**
 * The source check of publishing (gateway §7 "Publishing agents"): an open-source agent's
 * `source.repository` must be a public GitHub repository that belongs to the author's GitHub
 * account, or to an organisation that lists the author as a public member, so only the author of
 * the code can list it and earn from it. Two reads of GitHub's REST API, without a token (both
 * are public): `GET /repos/{owner}/{repo}` and `GET /orgs/{org}/public_members/{login}` (204
 * member, 404 not). GitHub's base URLs are settings, so tests run against a local stand-in.
 */
import type { GatewayErrorCode } from '../../generated/gateway/server.ts';
import { HttpError } from '../http/errors.ts';
import { GITHUB_TIMEOUT_MS } from './github.ts';
import type { HostedSettings } from './settings.ts';

/** The GitHub account an author's hosted account is linked to: its stable id and its login at the last sign-in. */
export interface LinkedGithub {
  id: number;
  login: string;
}

const refuse = (status: number, code: GatewayErrorCode, sentence: string) => new HttpError(status, code, sentence);

/**
 * `https://github.com/<owner>/<repo>` (optionally `.git` or a trailing slash) as its owner and
 * name, on `github.com` or the configured GitHub's host; throws 422 `source_not_github` otherwise.
 */
export function githubRepository(url: string, web_url: string): { owner: string; repo: string } {
  const notGithub = () => refuse(422, 'source_not_github', `source.repository ${url} is not a GitHub repository URL: write https://github.com/<owner>/<repo>`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw notGithub();
  }
  const hosts = new Set(['github.com', new URL(web_url).host]);
  const match = /^\/([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))\/([A-Za-z0-9._-]{1,100}?)(?:\.git)?\/?$/.exec(parsed.pathname);
  if (parsed.protocol !== 'https:' || !hosts.has(parsed.host) || parsed.search !== '' || parsed.hash !== '' || !match) throw notGithub();
  return { owner: match[1], repo: match[2] };
}

/** GETs `url` from GitHub's API: the status and JSON body; any network failure or 5xx is 503 `github_unavailable`. */
async function githubGet(url: string): Promise<{ status: number; body: any }> {
  let response: Response;
  try {
    response = await fetch(url, { headers: { accept: 'application/vnd.github+json' }, redirect: 'manual', signal: AbortSignal.timeout(GITHUB_TIMEOUT_MS) });
  } catch {
    throw refuse(503, 'github_unavailable', 'GitHub could not be reached to check source.repository; nothing was published, try again');
  }
  if (response.status >= 500 || response.status === 403 || response.status === 429) {
    throw refuse(503, 'github_unavailable', `GitHub answered ${response.status} while checking source.repository; nothing was published, try again later`);
  }
  const body = response.status === 200 ? await response.json().catch(() => null) : null;
  return { status: response.status, body };
}

/**
 * Checks that `repository_url` is a public GitHub repository of `author`'s GitHub account, or of
 * an organisation listing `author.login` as a public member. Throws 422 `source_not_github`,
 * 422 `source_not_public` (unknown, private, or moved), 403 `source_not_yours`, 503 `github_unavailable`.
 */
export async function checkSourceRepository(github: NonNullable<HostedSettings['github']>, author: LinkedGithub, repository_url: string): Promise<void> {
  const { owner, repo } = githubRepository(repository_url, github.web_url);
  const found = await githubGet(`${github.api_url}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}`);
  const notPublic = refuse(422, 'source_not_public', `source.repository ${repository_url} is not a public GitHub repository (GitHub answered ${found.status}${found.body?.private ? ', private' : ''}): make it public, or set license: proprietary`);
  if (found.status !== 200 || found.body === null || found.body.private !== false || typeof found.body.owner?.login !== 'string') throw notPublic;
  const repoOwner = found.body.owner as { id: unknown; login: string; type: unknown };
  if (repoOwner.type === 'User') {
    if (Number(repoOwner.id) === author.id) return;
    throw refuse(403, 'source_not_yours', `source.repository ${repository_url} belongs to the GitHub account ${repoOwner.login}, not to yours (${author.login}): only the author of the code can list it`);
  }
  if (repoOwner.type !== 'Organization') throw notPublic;
  const membership = await githubGet(`${github.api_url}/orgs/${encodeURIComponent(repoOwner.login)}/public_members/${encodeURIComponent(author.login)}`);
  if (membership.status === 204) return;
  throw refuse(
    403,
    'source_not_yours',
    `source.repository ${repository_url} belongs to the organisation ${repoOwner.login}, which does not list ${author.login} as a public member: make your membership public on GitHub, then publish again`,
  );
}
