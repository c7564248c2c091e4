/**
 * The HTTP recorder: a `fetch` that keeps every request the kit sends and the answer it got, so a
 * failure can show both and print a `curl` line that reproduces it. Requests go through undici's
 * fetch on a connection pool of the kit's own ({@link dispatcherFor}), which carries the TLS
 * credentials of a binding behind mutual TLS (issue 23 §4).
 */
import { Agent, fetch as undiciFetch, type Dispatcher } from 'undici';
import { readClientTls, type TlsFiles } from './config.ts';

/** One request the kit sent and what came back, exactly as seen on the wire. */
export interface Exchange {
  /** Order of the request within the run, from 1. */
  readonly seq: number;
  /** The contract operation the request was addressed to, or `health`, `capabilities`, `raw`. */
  readonly op: string;
  readonly method: string;
  readonly url: string;
  readonly request_headers: Readonly<Record<string, string>>;
  /** The request body as sent, or null when there was none. */
  readonly request_body: string | null;
  /** The HTTP status, or null when no answer arrived (see `transport_error`). */
  readonly status: number | null;
  readonly response_headers: Readonly<Record<string, string>>;
  /** The response body as text, unparsed. */
  readonly response_body: string;
  /** The response body parsed as JSON, or undefined when it is not JSON. */
  readonly json: unknown;
  /** Why no answer arrived (connection refused, timeout), or null. */
  readonly transport_error: string | null;
  readonly elapsed_ms: number;
}

/** Every exchange of one run, in order; run-wide checks read it (e.g. "every error response"). */
export class ExchangeLog {
  readonly #all: Exchange[] = [];
  #issued = 0;

  /** Appends one exchange and returns it. */
  add(exchange: Exchange): Exchange {
    this.#all.push(exchange);
    return exchange;
  }

  /** A fresh sequence number for a request about to be sent (unique even when requests race). */
  nextSeq(): number {
    this.#issued += 1;
    return this.#issued;
  }

  /** All exchanges so far, oldest first. */
  all(): readonly Exchange[] {
    return this.#all;
  }
}

/** The kit's connection pools (keep-alive), one per set of TLS files (`null`: none); a process runs a config or a few, so they are few. */
const pools = new Map<string, Agent>();

/**
 * The connection pool for a binding reached with `tls` (its certificate, key and CA, read now),
 * or without: every wire of a run shares it, so connections are reused across checks. Throws
 * ConfigError when a file can no longer be read.
 */
export function dispatcherFor(tls: TlsFiles | null): Dispatcher {
  const key = JSON.stringify(tls);
  let pool = pools.get(key);
  if (pool === undefined) {
    pool = new Agent(tls === null ? {} : { connect: readClientTls(tls) });
    pools.set(key, pool);
  }
  return pool;
}

/**
 * A `fetch` that performs the request on `dispatcher` with a timeout and hands the completed
 * exchange to `record`. The body of the returned Response is the recorded text. A transport
 * failure is recorded with status null and then rethrown, as `fetch` would.
 */
export function recordingFetch(
  op: string,
  seq: () => number,
  timeout_ms: number,
  record: (exchange: Exchange) => void,
  dispatcher: Dispatcher,
): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const request_body = request.body === null ? null : await request.clone().text();
    const started = performance.now();
    const base = {
      seq: seq(),
      op,
      method: request.method,
      url: request.url,
      request_headers: headersOf(request.headers),
      request_body,
    };
    let answer: Awaited<ReturnType<typeof undiciFetch>>;
    let text: string;
    try {
      answer = await undiciFetch(request.url, {
        method: request.method, headers: [...request.headers], body: request_body ?? undefined, dispatcher, signal: AbortSignal.timeout(timeout_ms),
      });
      text = await answer.text();
    } catch (error) {
      record({
        ...base, status: null, response_headers: {}, response_body: '', json: undefined,
        transport_error: describeError(error), elapsed_ms: Math.round(performance.now() - started),
      });
      throw error;
    }
    record({
      ...base,
      status: answer.status,
      response_headers: headersOf(answer.headers),
      response_body: text,
      json: parseJson(text),
      transport_error: null,
      elapsed_ms: Math.round(performance.now() - started),
    });
    return new Response(text, { status: answer.status, headers: [...answer.headers] });
  };
}

/** A `curl` command line that sends the same request again (POSIX shell quoting). */
export function curlFor(exchange: Exchange): string {
  const parts = ['curl', '-sS', '-i', '-X', exchange.method, quote(exchange.url)];
  for (const [name, value] of Object.entries(exchange.request_headers)) {
    parts.push('-H', quote(`${name}: ${value}`));
  }
  if (exchange.request_body !== null) parts.push('--data-raw', quote(exchange.request_body));
  return parts.join(' ');
}

/** The exchange as readable text: request line, body, status and response body. */
export function describeExchange(exchange: Exchange): string {
  const lines = [`→ ${exchange.method} ${exchange.url}`];
  const extra = Object.entries(exchange.request_headers).filter(([name]) => name !== 'content-type');
  for (const [name, value] of extra) lines.push(`  ${name}: ${value}`);
  if (exchange.request_body !== null) lines.push(`  ${exchange.request_body}`);
  if (exchange.status === null) {
    lines.push(`← no answer: ${exchange.transport_error}`);
  } else {
    lines.push(`← ${exchange.status} (${exchange.elapsed_ms} ms)`);
    if (exchange.response_body !== '') lines.push(`  ${truncate(exchange.response_body, 2000)}`);
  }
  return lines.join('\n');
}

/** Parses `text` as JSON, or answers undefined when it is not JSON. */
function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Headers as a plain object (the request's, and undici's answer's). */
function headersOf(headers: { forEach(each: (value: string, name: string) => void): void }): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error ? `${error.message}: ${cause.message}` : error.message;
}

function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} chars)`;
}
