/**
 * Checks a server command makes before it opens anything (issue 13 §4): a port already taken
 * is reported at once, naming what holds it when that is a Holon server, instead of after the
 * database has been opened; a URL option without a scheme is refused with the URL to write.
 */
import { createServer } from 'node:net';

/** How long the probe of a taken port waits for `/healthz`, in milliseconds. */
const HEALTH_PROBE_MS = 2_000;

/** Resolves true when nothing can listen on `host:port` because something already does. */
async function taken(port: number, host: string): Promise<boolean> {
  const probe = createServer();
  return new Promise((resolve, reject) => {
    probe.once('error', (error: NodeJS.ErrnoException) => (error.code === 'EADDRINUSE' ? resolve(true) : reject(error)));
    probe.listen(port, host, () => probe.close(() => resolve(false)));
  });
}

/**
 * Throws an Error with a one-line message when `port` on `host` is taken: "a Holon server is
 * already running at URL" when it answers `/healthz`, else that another program holds it. Port 0
 * (any free port) is never taken.
 */
export async function assertPortFree(port: number, host = '127.0.0.1'): Promise<void> {
  if (port === 0 || !(await taken(port, host))) return;
  const url = `http://${host}:${port}`;
  let holon = false;
  try {
    const answer = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(HEALTH_PROBE_MS) });
    holon = answer.ok && (await answer.json()).ok === true;
  } catch {
    // Not an HTTP server, or too slow to say: another program.
  }
  throw new Error(
    holon
      ? `a Holon server is already running at ${url}: use it, stop it first, or pass --port with another port`
      : `port ${port} on ${host} is already in use by another program: pass --port with another port`,
  );
}

/**
 * `text` when it is an absolute http(s) URL; otherwise throws an Error naming the option and,
 * for a URL without a scheme (`127.0.0.1:4000`), the URL to write instead.
 */
export function httpUrl(text: string, option: string): string {
  let url: URL | null = null;
  try {
    url = new URL(text);
  } catch {
    // No scheme at all: hinted below.
  }
  if (url && (url.protocol === 'http:' || url.protocol === 'https:')) return text.replace(/\/+$/, '');
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text);
  throw new Error(scheme ? `${option} ${text} must be an http:// or https:// URL` : `${option} ${text} has no scheme: write http://${text}`);
}
