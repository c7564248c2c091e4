/**
 * A company's facts from EDGAR's submissions JSON (`<data>/submissions/CIK##########.json`) for
 * `holon-labs/sec-company`: the fields of the manifest's output, checked on the way in, so that
 * a body in another shape is the declared `sec_unavailable` and never an output outside the
 * schema. The submissions JSON, as far as it is read:
 *
 *   {"cik": "320193", "name": "Apple Inc.", "tickers": ["AAPL"], "exchanges": ["Nasdaq"],
 *    "sic": "3571", "sicDescription": "Electronic Computers", "stateOfIncorporation": "CA",
 *    "fiscalYearEnd": "0928", "filings": {"recent": {"accessionNumber": [...], "form": [...],
 *    "filingDate": [...], "reportDate": [...], "primaryDocument": [...], ...}}}
 *
 * `filings.recent` holds columns (one array per field, newest filing first). Empty strings are
 * EDGAR's "none": they become null.
 */
import { agentError } from '../../src/runtimes/agent-context.mjs';

/** Bounds of the output schema (`holon.yaml`): a body beyond them is malformed. */
const MAX_NAME_CHARS = 300;
const MAX_LISTED = 20;
const MAX_TICKER_CHARS = 20;
const MAX_EXCHANGE_CHARS = 40;
const MAX_FORM_CHARS = 20;
const MAX_TEXT_CHARS = 200;
const SIC_PATTERN = /^[0-9]{1,4}$/;
const FISCAL_YEAR_END_PATTERN = /^(0[1-9]|1[0-2])(0[1-9]|[12][0-9]|3[01])$/;
const ACCESSION_PATTERN = /^[0-9]{10}-[0-9]{2}-[0-9]{6}$/;
const DATE_PATTERN = /^[0-9]{4}-[0-9]{2}-[0-9]{2}$/;
/** A primary document: a relative path in the filing's folder (form 4s hold one: `xslF345X05/form4.xml`), no control characters, no `.` or `..` step. */
const MAX_DOCUMENT_CHARS = 200;
const documentPath = (text) => text.length <= MAX_DOCUMENT_CHARS && !/[\u0000-\u001f\u007f\\]/.test(text) && text.split('/').every((step) => step !== '' && step !== '.' && step !== '..');

/** A CIK as EDGAR's file names write it: 10 digits, zero-padded. */
export const paddedCik = (cik) => String(cik).padStart(10, '0');

/**
 * The output for the submissions `body` of `cik`.
 * @param {unknown} body the parsed submissions JSON
 * @param {number} cik the CIK asked for; the body must be that company's
 * @param {{ filings: number, forms: string[] | undefined }} want how many filings, of which forms (upper case; all when undefined)
 * @param {string} www the base URL of EDGAR's archives, for filing links
 * @returns the output of the manifest's schema
 * @throws {import('../../src/runtimes/agent-context.mjs').AgentError} `sec_unavailable` naming the first field out of shape
 */
export function companyFacts(body, cik, want, www) {
  const where = `/submissions/CIK${paddedCik(cik)}.json`;
  const malformed = (field) => agentError('sec_unavailable', `EDGAR's ${where} is not in the expected shape (${field}): try again later`);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw malformed('not an object');
  if (Number(body.cik) !== cik) throw malformed(`cik ${JSON.stringify(body.cik)}`);
  const text = (field, max, pattern) => {
    const value = body[field] ?? '';
    if (typeof value !== 'string' || value.length > max || (value !== '' && pattern && !pattern.test(value))) throw malformed(field);
    return value === '' ? null : value;
  };
  const name = text('name', MAX_NAME_CHARS);
  if (name === null) throw malformed('name');
  const tickers = body.tickers ?? [];
  const exchanges = body.exchanges ?? [];
  if (!Array.isArray(tickers) || tickers.length > MAX_LISTED || !tickers.every((t) => typeof t === 'string' && t !== '' && t.length <= MAX_TICKER_CHARS)) throw malformed('tickers');
  if (!Array.isArray(exchanges) || exchanges.length > MAX_LISTED || !exchanges.every((e) => e === null || (typeof e === 'string' && e.length <= MAX_EXCHANGE_CHARS))) throw malformed('exchanges');
  return {
    cik: paddedCik(cik),
    name,
    tickers,
    exchanges: exchanges.map((e) => (e === '' ? null : e)),
    sic: text('sic', 4, SIC_PATTERN),
    sic_description: text('sicDescription', MAX_TEXT_CHARS),
    state_of_incorporation: text('stateOfIncorporation', MAX_TEXT_CHARS),
    fiscal_year_end: text('fiscalYearEnd', 4, FISCAL_YEAR_END_PATTERN),
    filings: latestFilings(body.filings?.recent, cik, want, www, malformed),
  };
}

/** The first `want.filings` filings of `recent` (newest first) whose form is in `want.forms`. */
function latestFilings(recent, cik, want, www, malformed) {
  if (typeof recent !== 'object' || recent === null) throw malformed('filings.recent');
  const columns = ['accessionNumber', 'form', 'filingDate', 'reportDate', 'primaryDocument'];
  const count = recent.accessionNumber?.length;
  for (const column of columns) if (!Array.isArray(recent[column]) || recent[column].length !== count) throw malformed(`filings.recent.${column}`);
  const filings = [];
  for (let i = 0; i < count && filings.length < want.filings; i++) {
    const [accession, form, filed, reported, document] = columns.map((column) => recent[column][i]);
    if (typeof form !== 'string' || form === '' || form.length > MAX_FORM_CHARS) throw malformed(`filings.recent.form[${i}]`);
    if (want.forms && !want.forms.includes(form.toUpperCase())) continue;
    if (typeof accession !== 'string' || !ACCESSION_PATTERN.test(accession)) throw malformed(`filings.recent.accessionNumber[${i}]`);
    if (typeof filed !== 'string' || !DATE_PATTERN.test(filed)) throw malformed(`filings.recent.filingDate[${i}]`);
    if (typeof reported !== 'string' || (reported !== '' && !DATE_PATTERN.test(reported))) throw malformed(`filings.recent.reportDate[${i}]`);
    if (typeof document !== 'string' || (document !== '' && !documentPath(document))) throw malformed(`filings.recent.primaryDocument[${i}]`);
    const folder = `${www}/Archives/edgar/data/${cik}/${accession.replaceAll('-', '')}`;
    filings.push({
      form,
      filing_date: filed,
      report_date: reported === '' ? null : reported,
      accession_number: accession,
      primary_document: document === '' ? null : document,
      url: document === '' ? `${folder}/${accession}-index.htm` : `${folder}/${document.split('/').map(encodeURIComponent).join('/')}`,
    });
  }
  return filings;
}
