/**
 * A local stand-in of GitHub's OAuth web flow and user API, for sign-in tests: the three calls
 * the gateway makes (`POST /login/oauth/access_token`, `GET /user`, `GET /user/emails`), and the
 * authorize page a browser visits (approving at once, for browser tests). A test
 * registers an authorization code for a user; the stand-in trades it once for a token, checks
 * the client id and secret, and answers the user for that token.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';

/** A GitHub user as the stand-in serves it. */
export interface StandinUser {
  id: number;
  login: string;
  emails: Array<{ email: string; primary: boolean; verified: boolean }>;
}

/** A running stand-in. */
export interface GithubStandin {
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
