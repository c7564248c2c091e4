/**
 * The errors a Holon client throws: `HolonError` for an answer outside 2xx, carrying the
 * `{error, code}` body every Holon server sends (gateway §5, clearing-contract §7), and
 * `HolonUnreachable` when no answer came at all (refused connection, DNS failure, abort).
 */

/** An error body: a sentence saying what to do next and a stable machine code; a refused call also carries its `receipt`. */
export interface HolonErrorBody {
  error: string;
  code: string;
  [field: string]: unknown;
}

/**
 * A non-2xx answer. `status` is the HTTP status, `code` the body's machine code (e.g.
 * `no_such_agent`, `over_budget`), `body` the whole parsed body. A body that is not a Holon
 * error body (a proxy's HTML page) gets the code `unexpected_response` and its text as `error`.
 */
export class HolonError extends Error {
  readonly status: number;
  readonly code: string;
  readonly body: HolonErrorBody;

  constructor(status: number, body: HolonErrorBody) {
    super(`${status} ${body.code}: ${body.error}`);
    this.name = 'HolonError';
    this.status = status;
    this.code = body.code;
    this.body = body;
  }
}

/** No answer from `url`: the server is not running, the URL is wrong, or the network failed (`cause` says which). */
export class HolonUnreachable extends Error {
  readonly url: string;

  constructor(url: string, cause: unknown) {
    super(`cannot reach ${url}: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'HolonUnreachable';
    this.url = url;
  }
}

/** The body as a Holon error body when it is one, else wrapped under `unexpected_response`. */
function errorBody(body: unknown): HolonErrorBody {
  if (body !== null && typeof body === 'object' && typeof (body as HolonErrorBody).error === 'string' && typeof (body as HolonErrorBody).code === 'string') {
    return body as HolonErrorBody;
  }
  return { error: typeof body === 'string' ? body.slice(0, 500) : JSON.stringify(body), code: 'unexpected_response' };
}

/**
 * The error interceptor both generated clients use: turns what the fetch client caught into a
 * `HolonError` (an answer came) or a `HolonUnreachable` (none came).
 */
export function toHolonError(error: unknown, response: Response | undefined, request: Request): Error {
  if (!response) return new HolonUnreachable(new URL(request.url).origin, error);
  return new HolonError(response.status, errorBody(error));
}

/** Options shared by `createHolonClient` and `createClearingClient`. */
export interface ClientOptions {
  /** The server's base URL, e.g. `http://127.0.0.1:4000`: a scheme is required. */
  baseUrl: string;
  /**
   * An API key, sent as `Authorization: Bearer <key>` (the hosted gateway's keys; the dev gateway
   * needs none). `undefined` sends none, so `key: process.env.HOLON_API_KEY` compiles under
   * `exactOptionalPropertyTypes` (on in `tsc --init`'s defaults).
   */
  key?: string | undefined;
  /** A fetch implementation (default: the global `fetch`; `undefined` is the default too). */
  fetch?: typeof fetch | undefined;
}

/**
 * The generated client's configuration for `options`: base URL, bearer key, and errors thrown
 * rather than returned. Throws a `TypeError` naming the URL when it is not absolute http(s).
 */
export function clientConfig(options: ClientOptions) {
  let url: URL;
  try {
    url = new URL(options.baseUrl);
  } catch {
    throw new TypeError(`baseUrl ${JSON.stringify(options.baseUrl)} is not a URL: write it with its scheme, e.g. http://${options.baseUrl}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`baseUrl ${options.baseUrl} must start with http:// or https://`);
  return {
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    throwOnError: true as const,
    ...(options.key === undefined ? {} : { headers: { authorization: `Bearer ${options.key}` } }),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  };
}
