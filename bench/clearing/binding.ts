/**
 * The reference binding as a separate process, and a small JSON client for it over loopback
 * HTTP with keep-alive connections (undici). Shared by the clearing benchmark (`bench/clearing/run.ts`)
 * and the crash test (`tests/clearing/crash.test.ts`): both need the binding exactly as an
 * operator runs it (`holon clearing serve`), so they can time it, or SIGKILL it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';

/** The `holon` executable of this checkout. */
const BIN = fileURLToPath(new URL('../../src/bin.mjs', import.meta.url));

/** How long a start may take before it is reported as failed: PGlite waits up to ~12 s for a stale lock, then migrates. */
const START_TIMEOUT_MS = 45_000;

/** Most bytes of the child's stderr kept for a failure report. */
const STDERR_KEEP_BYTES = 64 * 1024;

/** Asks the kernel for a free TCP port on 127.0.0.1 (released again before it is returned). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Options of `startBinding`. */
export interface StartOptions {
  /** The PGlite data directory (`--db`); ignored by the binding when `env.DATABASE_URL` is set. */
  dir: string;
  /** The child's environment (default: this process's). `DATABASE_URL` in it selects Postgres. */
  env?: NodeJS.ProcessEnv;
  /** Extra arguments to node itself, e.g. `--cpu-prof` (which Node 20 refuses in `NODE_OPTIONS`). */
  nodeArgs?: string[];
  /** The `holon` executable to run (default: this checkout's; the benchmark's `old` path runs an older commit's). */
  bin?: string;
}

/** A binding running as a child process. */
export interface ChildBinding {
  /** Base URL, `http://127.0.0.1:<port>`. */
  url: string;
  child: ChildProcess;
  /** What the child wrote to stderr so far (the last 64 KiB), for failure messages. */
  stderr(): string;
  /** Kills the process with SIGKILL (no shutdown of any kind) and resolves once it has exited. */
  kill(): Promise<void>;
  /** Stops the process with SIGTERM (clean shutdown) and resolves once it has exited. */
  stop(): Promise<void>;
}

/**
 * Starts `holon clearing serve` on a free port and resolves once it prints that it listens.
 * Rejects with the child's stderr when it exits first or takes longer than 45 s.
 */
export async function startBinding(options: StartOptions): Promise<ChildBinding> {
  const port = await freePort();
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), options.bin ?? BIN, 'clearing', 'serve', '--port', String(port), '--db', options.dir], {
    env: options.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_KEEP_BYTES);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const signalAndWait = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  const url = `http://127.0.0.1:${port}`;
  await new Promise<void>((resolve, reject) => {
    let stdout = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the binding did not start within ${START_TIMEOUT_MS} ms; stderr:\n${stderr}`));
    }, START_TIMEOUT_MS);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.includes(`listening on ${url}`)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the binding exited before listening (code ${code}, signal ${signal}); stderr:\n${stderr}`));
    });
  });
  return { url, child, stderr: () => stderr, kill: () => signalAndWait('SIGKILL'), stop: () => signalAndWait('SIGTERM') };
}

/** An HTTP answer: its status and its parsed JSON body. */
export interface JsonAnswer {
  status: number;
  body: any;
  /** The response headers, names in lower case. */
  headers: Record<string, string | string[] | undefined>;
}

/** The headers of a request without a body, and of one with a JSON body (undici adds its length). */
const ACCEPT_JSON: Record<string, string> = { accept: 'application/json' };
const SEND_JSON: Record<string, string> = { accept: 'application/json', 'content-type': 'application/json' };

/**
 * A JSON client for one binding over keep-alive connections (at most `sockets` at once), on
 * undici, the HTTP library the gateway's own clearing client uses. Not `node:http`: its client
 * costs about twice the CPU per request (about 0.2 ms against 0.1 ms here), and on a two-core
 * machine the client's CPU sits on the measured path, so it counted against the binding.
 */
export class JsonClient {
  readonly base: URL;
  private readonly pool: Pool;

  /** A client for the binding at `url`, with up to `sockets` concurrent connections. */
  constructor(url: string, sockets = 64) {
    this.base = new URL(url);
    this.pool = new Pool(this.base.origin, { connections: sockets });
  }

  /** GET `path` (already percent-encoded). Rejects on a transport failure, never on an HTTP status. */
  get(path: string): Promise<JsonAnswer> {
    return this.request('GET', path, undefined);
  }

  /** POST `body` as JSON to `path`. Rejects on a transport failure, never on an HTTP status. */
  post(path: string, body: unknown): Promise<JsonAnswer> {
    return this.request('POST', path, JSON.stringify(body));
  }

  /** Closes the pooled connections (requests still in flight fail). */
  async close(): Promise<void> {
    await this.pool.destroy();
  }

  private async request(method: 'GET' | 'POST', path: string, payload: string | undefined): Promise<JsonAnswer> {
    const headers: Record<string, string> = payload === undefined ? ACCEPT_JSON : SEND_JSON;
    const answer = await this.pool.request({ method, path, headers, body: payload });
    const text = await answer.body.text();
    try {
      return { status: answer.statusCode, body: text === '' ? null : JSON.parse(text), headers: answer.headers };
    } catch (error) {
      throw new Error(`${method} ${path} answered ${answer.statusCode} with a body that is not JSON: ${text.slice(0, 200)} (${(error as Error).message})`);
    }
  }
}

/** Throws unless `answer` is a 200; the message names the request and the binding's own error sentence. */
export function expectOk(answer: JsonAnswer, what: string): any {
  if (answer.status !== 200) throw new Error(`${what} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return answer.body;
}
