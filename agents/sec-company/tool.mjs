/**
 * holon-labs/sec-company: a company's facts from SEC EDGAR's public JSON API, by ticker or CIK.
 *
 * Input `{company, filings?, forms?}`. `company` is a CIK (1 to 10 digits) or a ticker (`AAPL`;
 * `BRK.B` and `brk-b` are `BRK-B`, as the SEC writes classes). A ticker is looked up in the SEC's
 * ticker list (`tickers.mjs`); the facts come from the submissions API (`company.mjs`): name,
 * CIK, tickers and their exchanges, SIC code and description, state of incorporation, fiscal
 * year end, and the latest `filings` filings (default 5, at most 20), of the `forms` asked when
 * given, newest first.
 *
 * Every request to the SEC carries `HOLON_SEC_CONTACT` in its User-Agent and goes through the
 * host's limiter of 10 requests per second (`edgar.mjs`): one request per call, two when the
 * ticker list must be fetched (once a day).
 *
 * Billing: `per_run` on success. Errors (declared, none billed): `company_not_found` (no such
 * ticker in the SEC's list, or no such CIK), `sec_rate_limited` (EDGAR refused for its rate, or
 * too many requests wait for this host's turn), `sec_unavailable` (EDGAR unreachable, slow, failing,
 * or answering a body in another shape).
 */
import { secContact } from '../../src/gateway/shipped-agents.mjs';
import { companyFacts, paddedCik } from './company.mjs';
import { edgarUrls, getJson } from './edgar.mjs';
import { cikOfTicker } from './tickers.mjs';

const DEFAULT_FILINGS = 5;
/** The largest CIK EDGAR writes: 10 digits. */
const MAX_CIK = 9_999_999_999;

/** Looks `input.company` up; see the module comment. */
export default async function run(input, ctx) {
  // The host serves this agent only with a contact (`shipped-agents.mjs`); this guards a host started otherwise.
  const contact = secContact();
  if (contact === null) throw new Error('HOLON_SEC_CONTACT is not an email address on the host');
  const urls = edgarUrls();
  const company = input.company.trim();
  let cik;
  if (/^[0-9]+$/.test(company)) {
    cik = Number(company);
    if (cik < 1 || cik > MAX_CIK) throw ctx.error('company_not_found', `CIK ${company} is not a CIK: one from 1 to 10 digits`);
  } else {
    const ticker = company.toUpperCase().replaceAll('.', '-');
    cik = await cikOfTicker(ticker, urls, contact);
    if (cik === null) throw ctx.error('company_not_found', `no company has the ticker ${ticker} in the SEC's ticker list: check it, or look the company up by its CIK`);
  }
  const body = await getJson(`${urls.data}/submissions/CIK${paddedCik(cik)}.json`, contact, ctx.signal);
  if (body === null) throw ctx.error('company_not_found', `EDGAR has no company with CIK ${paddedCik(cik)}`);
  const forms = input.forms?.map((form) => form.toUpperCase());
  return companyFacts(body, cik, { filings: input.filings ?? DEFAULT_FILINGS, forms }, urls.www);
}
