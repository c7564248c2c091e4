/**
 * holon-labs/sec-company (gateway §7 "Operating"), against a local stand-in of SEC EDGAR serving
 * recorded-shape fixtures (`tests/fixtures/sec/`; never the network): company facts by ticker and
 * by CIK, its declared errors (never billed, never a 500), the contact in its User-Agent, the
 * limiter of 10 requests per second counted on the stand-in's side, the listing rule
 * (`src/gateway/shipped-agents.mjs`) and the production refusal without a contact.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import pino from 'pino';
import supertest from 'supertest';
import { createLimiter, LimiterFull } from '../../agents/sec-company/limiter.mjs';
import { parseManifest } from '../../src/contracts/manifest.ts';
import { excludedAgents, leftOut, secContact } from '../../src/gateway/shipped-agents.mjs';
import { startDevGateway } from '../../src/serve/dev.ts';
import { readSettings } from '../../src/hosted/settings.ts';
import { createMcpRuntime } from '../../src/runtimes/mcp.ts';
import { closedPort } from '../helpers/cli.ts';
import { freshStore } from '../helpers/gateway.ts';
import { withEnv } from '../helpers/hooks.ts';
import { PRODUCTION_ENV } from '../helpers/hosted.ts';
import { remoteTarget, runRequest, startHost, startHttp, type TestHost, type TestServer } from '../helpers/runtimes.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONTACT = 'ops@example.test';
const fixture = (name: string) => readFile(new URL(`../fixtures/sec/${name}`, import.meta.url), 'utf8');
const TICKERS = await fixture('company_tickers.json');
const APPLE = await fixture('CIK0000320193.json');
/** A class-share filer: tickers on one exchange and one EDGAR does not name, no recent filing. */
const BERKSHIRE = JSON.stringify({
  cik: '1067983',
  name: 'BERKSHIRE HATHAWAY INC',
  tickers: ['BRK-B', 'BRK-A'],
  exchanges: ['NYSE', null],
  sic: '6331',
  sicDescription: 'Fire, Marine & Casualty Insurance',
  stateOfIncorporation: 'DE',
  fiscalYearEnd: '1231',
  filings: { recent: { accessionNumber: [], form: [], filingDate: [], reportDate: [], primaryDocument: [] }, files: [] },
});

/** What the stand-in answers per path, and when each request arrived (ms, its own clock). */
const answers: Record<string, [number, string]> = {
  '/files/company_tickers.json': [200, TICKERS],
  '/submissions/CIK0000320193.json': [200, APPLE],
  '/submissions/CIK0001067983.json': [200, BERKSHIRE],
  '/submissions/CIK0001111111.json': [429, '{"message":"Too Many Requests"}'],
  '/submissions/CIK0001111112.json': [403, '<html><body>Request Rate Threshold Exceeded</body></html>'],
  '/submissions/CIK0002222222.json': [200, '<html><body>Service maintenance</body></html>'],
  '/submissions/CIK0003333333.json': [200, JSON.stringify({ cik: '3333333', tickers: ['NONAME'], filings: { recent: {} } })],
  '/submissions/CIK0004444444.json': [500, 'internal error'],
};
const arrivals: number[] = [];
let edgar: TestServer;
let host: TestHost;
const runtime = createMcpRuntime();

before(async () => {
  edgar = await startHttp((req, res) => {
    arrivals.push(performance.now());
    const [status, body] = answers[req.url ?? ''] ?? [404, '<Error><Code>NoSuchKey</Code></Error>'];
    res.writeHead(status, { 'content-type': status === 200 && body.startsWith('{') ? 'application/json' : 'text/html' }).end(body);
  });
  host = await startHost([], { HOLON_EXCLUDE: 'holon-labs/summarize', HOLON_SEC_CONTACT: CONTACT, HOLON_SEC_WWW_URL: edgar.url, HOLON_SEC_DATA_URL: edgar.url });
});
after(async () => {
  await host.close();
  await edgar.close();
});

/** Runs sec-company on the host with `input`. */
const lookUp = (input: Record<string, unknown>) => runtime.run(runRequest(remoteTarget('mcp', host.url, 'sec-company'), { input }));

/** The stand-in's requests from index `from` on, as paths. */
const pathsSince = (from: number) => edgar.received.slice(from).map((request) => request.path);

/** Apple's facts as the fixture holds them, with `filings` of its filings. */
function apple(filings: object[]) {
  return {
    cik: '0000320193',
    name: 'Apple Inc.',
    tickers: ['AAPL'],
    exchanges: ['Nasdaq'],
    sic: '3571',
    sic_description: 'Electronic Computers',
    state_of_incorporation: 'CA',
    fiscal_year_end: '0927',
    filings,
  };
}

/** One of Apple's filings in the fixture. */
const filing = (form: string, filing_date: string, report_date: string | null, accession_number: string, primary_document: string | null, path: string) => ({
  form,
  filing_date,
  report_date,
  accession_number,
  primary_document,
  url: `${edgar.url}/Archives/edgar/data/320193/${accession_number.replaceAll('-', '')}/${path}`,
});

test('its manifest is valid: per_run, three declared errors, none billed', async () => {
  const { manifest } = parseManifest(await readFile(new URL('../../agents/sec-company/holon.yaml', import.meta.url), 'utf8'));
  assert.equal(manifest.id, 'holon-labs/sec-company');
  assert.deepEqual([manifest.runtime.kind, manifest.runtime.tool], ['mcp', 'sec-company']);
  assert.deepEqual(manifest.price, { model: 'per_run', amount_micros: 1000, currency: 'EUR' });
  assert.deepEqual(Object.entries(manifest.interface.errors).map(([code, error]) => [code, error.billed]), [
    ['company_not_found', false],
    ['sec_rate_limited', false],
    ['sec_unavailable', false],
  ]);
});

test('by ticker: the facts and the 5 latest filings, from the ticker list then the submissions; the contact is in the User-Agent', async () => {
  const from = edgar.received.length;
  const outcome = await lookUp({ company: 'aapl' });
  assert.deepEqual(outcome, {
    kind: 'output',
    output: apple([
      filing('10-K', '2025-10-31', '2025-09-27', '0000320193-25-000079', 'aapl-20250927.htm', 'aapl-20250927.htm'),
      filing('4', '2025-10-17', '2025-10-15', '0001140361-25-038950', 'xslF345X05/wk-form4_1760740198.xml', 'xslF345X05/wk-form4_1760740198.xml'),
      filing('8-K', '2025-10-30', '2025-10-30', '0000320193-25-000077', 'aapl-20251030.htm', 'aapl-20251030.htm'),
      filing('10-Q', '2025-08-01', '2025-06-28', '0000320193-25-000073', 'aapl-20250628.htm', 'aapl-20250628.htm'),
      filing('25-NSE', '2025-07-30', null, '0001193125-25-170000', null, '0001193125-25-170000-index.htm'),
    ]),
    units: null,
    quote: null,
  });
  assert.deepEqual(pathsSince(from), ['/files/company_tickers.json', '/submissions/CIK0000320193.json']);
  for (const request of edgar.received.slice(from)) assert.equal(request.headers['user-agent'], `Holon sec-company ${CONTACT}`);
});

test('by CIK, padded or not: one request (no ticker list); filings and forms narrow the list', async () => {
  const from = edgar.received.length;
  const outcome = await lookUp({ company: '320193', filings: 2, forms: ['10-k'] });
  const tenKs = [
    filing('10-K', '2025-10-31', '2025-09-27', '0000320193-25-000079', 'aapl-20250927.htm', 'aapl-20250927.htm'),
    filing('10-K', '2024-11-01', '2024-09-28', '0000320193-24-000123', 'aapl-20240928.htm', 'aapl-20240928.htm'),
  ];
  assert.deepEqual(outcome, { kind: 'output', output: apple(tenKs), units: null, quote: null });
  assert.deepEqual(await lookUp({ company: '0000320193', filings: 0 }), { kind: 'output', output: apple([]), units: null, quote: null });
  assert.deepEqual(pathsSince(from), ['/submissions/CIK0000320193.json', '/submissions/CIK0000320193.json']);
});

test('a class ticker written with a dot is the SEC\'s dash; the ticker list is fetched once; an exchange EDGAR does not name is null', async () => {
  const from = edgar.received.length;
  const outcome = await lookUp({ company: 'brk.b' });
  assert.deepEqual(outcome, {
    kind: 'output',
    output: {
      cik: '0001067983',
      name: 'BERKSHIRE HATHAWAY INC',
      tickers: ['BRK-B', 'BRK-A'],
      exchanges: ['NYSE', null],
      sic: '6331',
      sic_description: 'Fire, Marine & Casualty Insurance',
      state_of_incorporation: 'DE',
      fiscal_year_end: '1231',
      filings: [],
    },
    units: null,
    quote: null,
  });
  assert.deepEqual(pathsSince(from), ['/submissions/CIK0001067983.json']);
});

test('company_not_found: an unknown ticker (no submissions request), an unknown CIK (EDGAR 404)', async () => {
  const from = edgar.received.length;
  assert.deepEqual(await lookUp({ company: 'ZZZZ' }), {
    kind: 'error',
    code: 'company_not_found',
    message: "no company has the ticker ZZZZ in the SEC's ticker list: check it, or look the company up by its CIK",
    units: null,
    quote: null,
  });
  assert.deepEqual(pathsSince(from), []);
  assert.deepEqual(await lookUp({ company: '9999999' }), { kind: 'error', code: 'company_not_found', message: 'EDGAR has no company with CIK 0009999999', units: null, quote: null });
});

test('sec_rate_limited: EDGAR answers 429, or 403 as it does to clients over its rate', async () => {
  const limited = await lookUp({ company: 'BUSY' });
  assert.deepEqual(limited, {
    kind: 'error',
    code: 'sec_rate_limited',
    message: 'EDGAR refused /submissions/CIK0001111111.json with 429: it does so to clients over its rate of 10 requests per second; try again in a few minutes',
    units: null,
    quote: null,
  });
  const blocked = await lookUp({ company: '1111112' });
  assert.equal(blocked.kind === 'error' && blocked.code, 'sec_rate_limited');
});

test('sec_unavailable, never an agent crash: a body that is not JSON, JSON of another shape, a 500', async () => {
  const cases: [string, string][] = [
    ['HTML', 'EDGAR answered /submissions/CIK0002222222.json with a body that is not JSON: try again later'],
    ['NONAME', "EDGAR's /submissions/CIK0003333333.json is not in the expected shape (name): try again later"],
    ['4444444', 'EDGAR answered /submissions/CIK0004444444.json with 500: try again later'],
  ];
  for (const [company, message] of cases) {
    assert.deepEqual(await lookUp({ company }), { kind: 'error', code: 'sec_unavailable', message, units: null, quote: null }, company);
  }
  assert.doesNotMatch(host.stderr(), /holon-labs\/sec-company:/, 'no crash was logged by the host');
});

test('the limiter: 25 lookups at once all answer, and the stand-in never receives more than 10 requests in any 1 s window', async () => {
  const outcomes = await Promise.all(Array.from({ length: 25 }, () => lookUp({ company: '320193', filings: 0 })));
  assert.deepEqual(outcomes.map((outcome) => outcome.kind), Array(25).fill('output'));
  const times = [...arrivals].sort((a, b) => a - b);
  assert.ok(times.length >= 25 + 10, `${times.length} requests`);
  for (let i = 0; i + 10 < times.length; i++) {
    assert.ok(times[i + 10]! - times[i]! >= 1000, `requests ${i} to ${i + 10} arrived within ${(times[i + 10]! - times[i]!).toFixed(1)} ms`);
  }
});

test('the limiter keeps a bounded line: one caller past it is refused at once; a caller whose signal aborts leaves it', async () => {
  const limiter = createLimiter({ limit: 1, window_ms: 60_000, max_waiting: 1 });
  const done = await limiter.take();
  const leaving = new AbortController();
  const waiting = limiter.take(leaving.signal);
  await assert.rejects(limiter.take(), (error: unknown) => error instanceof LimiterFull && error.waiting === 1);
  leaving.abort(new Error('cancelled'));
  await assert.rejects(waiting, /cancelled/);
  // Answered: its slot stays taken for the 60 s window, and the line has room for one again.
  done();
  const next = new AbortController();
  const queued = limiter.take(next.signal);
  await assert.rejects(limiter.take(), LimiterFull);
  next.abort(new Error('done'));
  await assert.rejects(queued, /done/);
});

describe('the listing rule: listed only when not excluded and with a contact', () => {
  test('HOLON_EXCLUDE leaves out summarize and sec-company by default; sec-company also while HOLON_SEC_CONTACT is no email', () => {
    assert.deepEqual(excludedAgents({}), ['holon-labs/summarize', 'holon-labs/sec-company']);
    assert.deepEqual(excludedAgents({ HOLON_EXCLUDE: '' }), []);
    assert.deepEqual(leftOut([], {}), ['holon-labs/sec-company']);
    assert.deepEqual(leftOut([], { HOLON_SEC_CONTACT: 'not an email' }), ['holon-labs/sec-company']);
    assert.deepEqual(leftOut([], { HOLON_SEC_CONTACT: ` ${CONTACT} ` }), []);
    assert.equal(secContact({ HOLON_SEC_CONTACT: ` ${CONTACT} ` }), CONTACT);
  });

  test('the host serves it only with a contact and out of HOLON_EXCLUDE', async () => {
    const toolsOf = async (env: Record<string, string>) => {
      const other = await startHost([], { HOLON_SEC_CONTACT: '', ...env });
      const client = new Client({ name: 'test', version: '1.0.0' });
      try {
        await client.connect(new StreamableHTTPClientTransport(new URL(other.url)));
        return (await client.listTools()).tools.map((tool) => tool.name);
      } finally {
        await client.close();
        await other.close();
      }
    };
    assert.deepEqual(await toolsOf({ HOLON_EXCLUDE: '' }), ['csv-profile', 'summarize']);
    assert.deepEqual(await toolsOf({ HOLON_SEC_CONTACT: CONTACT }), ['csv-profile']);
    assert.deepEqual(await toolsOf({ HOLON_EXCLUDE: 'holon-labs/summarize', HOLON_SEC_CONTACT: CONTACT }), ['csv-profile', 'sec-company']);
  });

  test('through the gateway: listed with a contact, its errors not billed, a success billed its price; a restart without the contact unlists it', async () => {
    const env = { HOLON_SEC_CONTACT: CONTACT, HOLON_SEC_WWW_URL: edgar.url, HOLON_SEC_DATA_URL: edgar.url };
    const store = await freshStore();
    const options = { port: 0, ...store, agent_dirs: ['agents'], agents_host_port: 0, exclude: ['holon-labs/summarize'], logger: pino({ level: 'silent' }) };
    const call = (http: supertest.Agent, input: object) => http.post('/v0/calls').send({ mandate: 'dev/sandbox', agent: 'holon-labs/sec-company', input });
    const gateway = await withEnv(env, () => startDevGateway(options));
    try {
      const http = supertest.agent(gateway.server);
      const ids = async () => ((await http.get('/v0/agents').expect(200)).body.agents as { id: string }[]).map((agent) => agent.id);
      assert.deepEqual((await ids()).sort(), ['holon-labs/csv-profile', 'holon-labs/sec-company']);
      const found = await call(http, { company: 'AAPL', filings: 1 });
      assert.equal(found.status, 200, JSON.stringify(found.body));
      assert.equal(found.body.output.name, 'Apple Inc.');
      assert.deepEqual([found.body.receipt.billed, found.body.receipt.cost.total], [true, '0.001']);
      for (const [company, code] of [['ZZZZ', 'company_not_found'], ['BUSY', 'sec_rate_limited'], ['HTML', 'sec_unavailable']]) {
        const failed = await call(http, { company });
        assert.deepEqual([failed.status, failed.body.code, failed.body.receipt.billed, failed.body.receipt.cost.total], [502, code, false, '0.00'], company);
      }
    } finally {
      await gateway.close();
    }
    const restarted = await startDevGateway(options);
    try {
      const listed = (await supertest(restarted.server).get('/v0/agents').expect(200)).body.agents as { id: string }[];
      assert.deepEqual(listed.map((agent) => agent.id), ['holon-labs/csv-profile']);
    } finally {
      await restarted.close();
    }
  });
});

describe('production refuses to start when it is listed without a contact', () => {
  const complete = PRODUCTION_ENV;
  const refusal = 'HOLON_SEC_CONTACT is required while holon-labs/sec-company is listed (HOLON_EXCLUDE leaves it in): set an email the SEC can reach, or add holon-labs/sec-company to HOLON_EXCLUDE';

  test('the settings: refused without a contact or with one that is no email; paused by default, or with a contact, it starts', () => {
    assert.throws(() => readSettings({ ...complete, HOLON_EXCLUDE: 'holon-labs/summarize' }), { message: `refusing to start: ${refusal}` });
    assert.throws(() => readSettings({ ...complete, HOLON_EXCLUDE: '', HOLON_SEC_CONTACT: 'ops' }), /HOLON_SEC_CONTACT must be an email address while holon-labs\/sec-company is listed/);
    assert.equal(readSettings(complete).production, true);
    assert.equal(readSettings({ ...complete, HOLON_EXCLUDE: '', HOLON_SEC_CONTACT: CONTACT }).production, true);
    assert.equal(readSettings({ HOLON_EXCLUDE: '' }).production, false);
  });

  test('holon serve --hosted: one line on stderr, exit 1', async () => {
    const port = await closedPort();
    const { PATH, HOME } = process.env;
    const run = spawnSync(process.execPath, ['src/bin.mjs', 'serve', '--hosted'], {
      cwd: ROOT,
      env: { PATH, HOME, ...complete, PORT: String(port), HOLON_EXCLUDE: 'holon-labs/summarize' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(run.status, 1, run.stderr);
    assert.equal(run.stderr, `holon: could not start the gateway: refusing to start: ${refusal}\n`);
  });
});
