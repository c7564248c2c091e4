/**
 * Ticker → CIK for `holon-labs/sec-company`, from the SEC's list of every listed company's tickers,
 * `<www>/files/company_tickers.json`: `{"0": {"cik_str": 320193, "ticker": "AAPL", "title": "Apple Inc."}, ...}`.
 * The list is fetched once and kept for {@link TICKERS_TTL_MS} (the SEC updates it daily); calls
 * that need it while it is being fetched share that one request. An entry that is not
 * `{cik_str: integer, ticker: string}` makes the whole list malformed (`sec_unavailable`), since
 * a partial list would answer `company_not_found` for companies that exist.
 */
import { AgentError, agentError } from '../../src/runtimes/agent-context.mjs';
import { getJson } from './edgar.mjs';

/** How long the fetched list is used, in ms: one day. */
export const TICKERS_TTL_MS = 24 * 60 * 60 * 1000;
/** How long the shared fetch of the list may take, its turn at the limiter included, in ms. */
const FETCH_DEADLINE_MS = 20_000;
/** The most entries read (the list holds about 10,000). */
const MAX_ENTRIES = 100_000;

/** @type {{ url: string, fetched_at: number, ciks: Map<string, number> } | null} */
let cached = null;
/** @type {Promise<Map<string, number>> | null} */
let fetching = null;

/**
 * The CIK of `ticker` (upper case, `-` for a class: `BRK-B`), or null when the list has no such ticker.
 * @param {string} ticker
 * @param {{ www: string }} urls
 * @param {string} contact
 * @returns {Promise<number | null>}
 */
export async function cikOfTicker(ticker, urls, contact) {
  const url = `${urls.www}/files/company_tickers.json`;
  const fresh = cached !== null && cached.url === url && Date.now() - cached.fetched_at < TICKERS_TTL_MS;
  // The shared request is not tied to one call's cancellation (another call may be waiting on
  // it): it has its own deadline instead.
  const ciks = fresh ? cached.ciks : await (fetching ??= fetchList(url, contact).finally(() => (fetching = null)));
  return ciks.get(ticker) ?? null;
}

/** Fetches and checks the list, and keeps it; past {@link FETCH_DEADLINE_MS}, `sec_unavailable`. */
async function fetchList(url, contact) {
  const deadline = AbortSignal.timeout(FETCH_DEADLINE_MS);
  let body;
  try {
    body = await getJson(url, contact, deadline);
  } catch (error) {
    if (error instanceof AgentError || !deadline.aborted) throw error;
    throw agentError('sec_unavailable', `EDGAR's ticker list did not arrive within ${FETCH_DEADLINE_MS / 1000} s: try again later, or look the company up by CIK`);
  }
  const malformed = (why) => agentError('sec_unavailable', `EDGAR's ticker list (/files/company_tickers.json) is not in the expected shape: ${why}; try again later`);
  if (body === null) throw agentError('sec_unavailable', "EDGAR has no ticker list at /files/company_tickers.json: look the company up by CIK");
  if (typeof body !== 'object' || Array.isArray(body)) throw malformed('not an object of entries');
  const entries = Object.values(body);
  if (entries.length === 0 || entries.length > MAX_ENTRIES) throw malformed(`${entries.length} entries`);
  const ciks = new Map();
  for (const entry of entries) {
    if (!Number.isSafeInteger(entry?.cik_str) || entry.cik_str < 1 || typeof entry.ticker !== 'string') throw malformed(`an entry ${JSON.stringify(entry).slice(0, 80)}`);
    ciks.set(entry.ticker.toUpperCase(), entry.cik_str);
  }
  cached = { url, fetched_at: Date.now(), ciks };
  return ciks;
}
