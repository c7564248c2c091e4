/**
 * A local stand-in of GitHub's OAuth web flow and user API, for sign-in tests: the three calls
 * the gateway makes (`POST /login/oauth/access_token`, `GET /user`, `GET /user/emails`), and the
 * authorize page a browser visits (approving at once, for browser tests). A test
 * registers an authorization code for a user; the stand-in trades it once for a token, checks
 * the client id and secret, and answers the user for that token. For publishing, the two public
 * reads (no token): `GET /repos/{owner}/{repo}` (404 for an unknown or private repository, as
 * GitHub answers an anonymous caller) and `GET /orgs/{org}/public_members/{login}` (204 or 404).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { useOpened } from './hooks.ts';

/** A GitHub user as the stand-in serves it. */
export interface StandinUser {
  id: number;
  login: string;
  emails: Array<{ email: string; primary: boolean; verified: boolean }>;
}

/** A repository as the stand-in serves it; `owner` is a user (by id and login) or an organisation. */
export interface StandinRepository {
  owner: { id: number; login: string; type: 'User' | 'Organization' };
  name: string;
  private: boolean;
}

/** A running stand-in. */
export interface GithubStandin {
  /** Adds (or replaces) a repository. */
  addRepository(repository: StandinRepository): void;
  /** Makes `login` a member of organisation `org`, publicly listed or not. */
  addOrgMember(org: string, login: string, listed_publicly: boolean): void;
  /** Answers every request with this status while set (GitHub down), or normally when null. */
  failWith: number | null;
  url: string;
  client_id: string;
  client_secret: string;
  /** A one-time authorization code for `user`. */
  authorize(user: StandinUser): string;
  /**
   * Makes the next browser visit of `GET /login/oauth/authorize` approve at once as `user`: it
   * redirects to its `redirect_uri` with a one-time code and the `state` it was given, as GitHub
   * does once the person clicks "Authorize".
   */
  approveNext(user: StandinUser): void;
  /** Every access token handed out, to check the gateway keeps none. */
  tokens: string[];
  close(): Promise<void>;
}

/** Starts the stand-in on a free port. */
export async function startGithubStandin(): Promise<GithubStandin> {
  const codes = new Map<string, StandinUser>();
  const byToken = new Map<string, StandinUser>();
  const tokens: string[] = [];
  const repositories = new Map<string, StandinRepository>();
  const publicMembers = new Set<string>();
  const state: { failWith: number | null } = { failWith: null };
  const approving: StandinUser[] = [];
  const client_id = 'standin-client';
  const client_secret = 'standin-secret';
  const server: Server = createServer((req, res) => {
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      if (state.failWith !== null) return answer(state.failWith, { message: 'Service unavailable' });
      const repo = /^\/repos\/([^/]+)\/([^/]+)$/.exec(req.url ?? '');
      if (req.method === 'GET' && repo) {
        const found = repositories.get(`${decodeURIComponent(repo[1])}/${decodeURIComponent(repo[2])}`.toLowerCase());
        if (!found || found.private) return answer(404, { message: 'Not Found' });
        return answer(200, { name: found.name, full_name: `${found.owner.login}/${found.name}`, private: false, visibility: 'public', owner: found.owner });
      }
      const member = /^\/orgs\/([^/]+)\/public_members\/([^/]+)$/.exec(req.url ?? '');
      if (req.method === 'GET' && member) {
        if (!publicMembers.has(`${decodeURIComponent(member[1])}/${decodeURIComponent(member[2])}`.toLowerCase())) return answer(404, { message: 'Not Found' });
        res.writeHead(204);
        return res.end();
      }
      const url = new URL(req.url ?? '/', 'http://standin');
      if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') {
        const user = approving.shift();
        const redirect = url.searchParams.get('redirect_uri');
        if (!user || !redirect || url.searchParams.get('client_id') !== client_id) return answer(404, { message: 'Not Found' });
        const code = randomUUID();
        codes.set(code, user);
        const back = new URL(redirect);
        back.search = new URLSearchParams({ code, state: url.searchParams.get('state') ?? '' }).toString();
        res.writeHead(302, { location: back.toString() });
        return res.end();
      }
      if (req.method === 'POST' && req.url === '/login/oauth/access_token') {
        const body = JSON.parse(text || '{}');
        const user = codes.get(body.code);
        if (body.client_id !== client_id || body.client_secret !== client_secret || !user) return answer(200, { error: 'bad_verification_code' });
        codes.delete(body.code);
        const token = `gho_${randomUUID().replaceAll('-', '')}`;
        tokens.push(token);
        byToken.set(token, user);
        return answer(200, { access_token: token, token_type: 'bearer', scope: 'read:user,user:email' });
      }
      const user = byToken.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
      if (!user) return answer(401, { message: 'Bad credentials' });
      if (req.method === 'GET' && req.url === '/user') return answer(200, { id: user.id, login: user.login });
      if (req.method === 'GET' && req.url === '/user/emails') return answer(200, user.emails);
      answer(404, { message: 'Not Found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    client_id,
    client_secret,
    tokens,
    get failWith() {
      return state.failWith;
    },
    set failWith(status: number | null) {
      state.failWith = status;
    },
    addRepository(repository) {
      repositories.set(`${repository.owner.login}/${repository.name}`.toLowerCase(), repository);
    },
    addOrgMember(org, login, listed_publicly) {
      if (listed_publicly) publicMembers.add(`${org}/${login}`.toLowerCase());
    },
    authorize(user) {
      const code = randomUUID();
      codes.set(code, user);
      return code;
    },
    approveNext(user) {
      approving.push(user);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A GitHub stand-in started before the tests of the current scope and closed after them. */
export function useGithubStandin(): GithubStandin {
  return useOpened('the GitHub stand-in', startGithubStandin, (github) => github.close());
}

/** The hosted gateway's GitHub setting pointing at `github` (both base URLs are the stand-in's). */
export function standinSettings(github: GithubStandin) {
  return { github: { client_id: github.client_id, client_secret: github.client_secret, web_url: github.url, api_url: github.url } };
}

/**
 * Signs `user` in through the gateway at `http` and the stand-in (the browser's three steps:
 * start, GitHub's callback with the cookie, the code exchange); answers the handle and human key.
 */
export async function signInWithStandin(
  http: { get(path: string): any; post(path: string): any },
  github: GithubStandin,
  user: StandinUser,
): Promise<{ handle: string; human: string }> {
  const started = await http.get('/v0/auth/github');
  const state = new URL(started.headers.location).searchParams.get('state')!;
  const cookie = (started.headers['set-cookie'] as string[])[0].split(';')[0];
  const back = await http.get(`/v0/auth/github/callback?code=${github.authorize(user)}&state=${state}`).set('cookie', cookie);
  const fragment = String(back.headers.location);
  if (!fragment.startsWith('/console#login=')) throw new Error(`sign-in of ${user.login} failed: ${fragment}`);
  const exchanged = await http.post('/v0/auth/exchange').send({ code: fragment.slice('/console#login='.length) });
  if (exchanged.status !== 200) throw new Error(`exchange for ${user.login}: ${exchanged.status} ${JSON.stringify(exchanged.body)}`);
  return { handle: exchanged.body.handle, human: exchanged.body.human_key.key };
}
