/**
 * Requests to SEC EDGAR (`holon-labs/sec-company`), under the SEC's fair access policy: every
 * request carries `User-Agent: Holon sec-company <contact>` (the operator's `HOLON_SEC_CONTACT`)
 * and goes through one limiter per host process (`limiter.mjs`): the SEC's published 10 requests
 * per second, counted as the SEC sees them, since a request holds its slot from its start until
 * {@link WINDOW_MS} after its answer. At most {@link MAX_WAITING} requests wait for their turn;
 * one more is refused `sec_rate_limited` at once. A wait ends with the call's cancellation too
 * (the manifest's `timeout_s`, 30 s).
 *
 * Each request: at most {@link REQUEST_TIMEOUT_MS} ms, a body of at most {@link MAX_BODY_BYTES}
 * bytes, JSON. How EDGAR's answers map to the manifest's declared errors (none billed):
 * 404 → not found (the caller decides: `company_not_found`); 429, and 403 (EDGAR's answer to a
 * client over its rate, which it then blocks for about 10 minutes) → `sec_rate_limited`; any
 * other status, a network failure, a timeout, an oversized body or one that is not JSON →
 * `sec_unavailable`. The call's own cancellation is passed through as it is.
 *
 * Base URLs: `HOLON_SEC_WWW_URL` (default `https://www.sec.gov`, the ticker list and the
 * archives) and `HOLON_SEC_DATA_URL` (default `https://data.sec.gov`, the submissions API); the
 * tests point both at a local stand-in.
 */
import { AgentError, agentError } from '../../src/runtimes/agent-context.mjs';
import { createLimiter, LimiterFull } from './limiter.mjs';

/** Requests the SEC receives in any window, at most. */
export const REQUESTS_PER_WINDOW = 10;
/** The limiter's window, in ms: the SEC's second. */
export const WINDOW_MS = 1_000;
/** Requests waiting for their turn, at most. */
export const MAX_WAITING = 50;
/** One request, from its start to its last byte, in ms. */
export const REQUEST_TIMEOUT_MS = 8_000;
/** The largest body read, in bytes (the ticker list weighs about 1 MB, a large filer's submissions a few MB). */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** One limiter for every call of this process: the SEC counts requests per client, not per call. */
const limiter = createLimiter({ limit: REQUESTS_PER_WINDOW, window_ms: WINDOW_MS, max_waiting: MAX_WAITING });

/**
 * Where EDGAR is: `www` (ticker list, archives) and `data` (submissions), without a trailing slash.
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {{ www: string, data: string }}
 */
export function edgarUrls(env = process.env) {
  const strip = (url) => url.replace(/\/+$/, '');
  return { www: strip(env.HOLON_SEC_WWW_URL || 'https://www.sec.gov'), data: strip(env.HOLON_SEC_DATA_URL || 'https://data.sec.gov') };
}

/**
 * GETs `url` as JSON through the limiter.
 * @param {string} url
 * @param {string} contact the operator's email, for the User-Agent
 * @param {AbortSignal} signal the call's cancellation
 * @returns {Promise<unknown | null>} the parsed body, or null for a 404
 * @throws {import('../../src/runtimes/agent-context.mjs').AgentError} `sec_rate_limited` or `sec_unavailable`, as above
 */
export async function getJson(url, contact, signal) {
  const where = new URL(url).pathname;
  let done;
  try {
    done = await limiter.take(signal);
  } catch (error) {
    if (error instanceof LimiterFull) {
      throw agentError('sec_rate_limited', `${error.waiting} EDGAR requests already wait for this host's turn (10 per second, as the SEC asks): try again in a few seconds`);
    }
    throw error;
  }
  const deadline = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
  let response;
  let text;
  try {
    try {
      response = await fetch(url, {
        headers: { 'user-agent': `Holon sec-company ${contact}`, accept: 'application/json', 'accept-encoding': 'gzip, deflate' },
        signal: AbortSignal.any([signal, deadline]),
      });
    } finally {
      // Answered (or failed): the SEC has seen the request, if ever; its slot frees a window from now.
      done();
    }
    if (response.status === 404) {
      await response.body?.cancel();
      return null;
    }
    if (response.status === 429 || response.status === 403) {
      await response.body?.cancel();
      throw agentError('sec_rate_limited', `EDGAR refused ${where} with ${response.status}: it does so to clients over its rate of 10 requests per second; try again in a few minutes`);
    }
    if (response.status !== 200) {
      await response.body?.cancel();
      throw agentError('sec_unavailable', `EDGAR answered ${where} with ${response.status}: try again later`);
    }
    text = await readBounded(response, where);
  } catch (error) {
    if (signal.aborted) throw error;
    if (error instanceof AgentError) throw error;
    const why = deadline.aborted ? `did not answer within ${REQUEST_TIMEOUT_MS / 1000} s` : `could not be reached (${error?.cause?.code ?? error?.message ?? error})`;
    throw agentError('sec_unavailable', `EDGAR ${why} for ${where}: try again later`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw agentError('sec_unavailable', `EDGAR answered ${where} with a body that is not JSON: try again later`);
  }
}

/** The body as text, refusing it past {@link MAX_BODY_BYTES} (declared `sec_unavailable`). */
async function readBounded(response, where) {
  const chunks = [];
  let size = 0;
  for await (const chunk of response.body ?? []) {
    size += chunk.length;
    // Leaving the loop by a throw cancels the stream.
    if (size > MAX_BODY_BYTES) {
      throw agentError('sec_unavailable', `EDGAR answered ${where} with over ${MAX_BODY_BYTES} bytes: more than any company's facts weigh`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
