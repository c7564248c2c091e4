/**
 * Checks a server command makes before it opens anything (issue 13 §4, issue 26): a port already
 * taken is reported at once, naming what holds it when that is a Holon server, instead of after the
 * database has been opened; so is an agents port that was asked for; a URL option without a scheme
 * is refused with the URL to write.
 */
import { portTaken } from '../http/port-probe.ts';

/** How long the probe of a taken port waits for `/healthz`, in milliseconds. */
const HEALTH_PROBE_MS = 2_000;

/**
 * Throws an Error with a one-line message when `port` on `host` is taken: "a Holon server is
 * already running at URL" when it answers `/healthz`, else that another program holds it. Port 0
 * (any free port) is never taken.
 */
export async function assertPortFree(port: number, host = '127.0.0.1'): Promise<void> {
  if (!(await portTaken(port, host))) return;
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
 * Throws an Error with a one-line message when the agents host's port, asked for by `named_by`
 * (`--agents-port` or `HOLON_AGENTS_PORT`), is taken on 127.0.0.1, where the host listens: a
 * port someone asked for is never swapped for another (the default one is, `src/agents-host/port.ts`).
 */
export async function assertAgentsPortFree(port: number, named_by: string): Promise<void> {
  if (!(await portTaken(port))) return;
  throw new Error(`the agents port ${port} (${named_by}) on 127.0.0.1 is already in use, maybe by another gateway's agents host: name another port, or drop ${named_by} to take a free one`);
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
