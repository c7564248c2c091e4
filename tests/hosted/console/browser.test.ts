/**
 * The console in a real browser (issue 11): headless Chromium (Debian's `chromium`, installed by
 * `.ci/run`) driven by playwright-core. One person's session, step by step: sign in with GitHub
 * through the stand-in, see the balance, a call made from the API that needs approval, approved
 * from the console by keyboard, the receipt tree updated, a key created and revoked; and an
 * author's: a credential set, a webhook (a local https server) drafted, reviewed and published,
 * called by a caller, its version, earnings and credential seen in the console. Every URL
 * the console loads has the gateway's origin. And on gateways whose operator left a feature off
 * (no GitHub app; no `HOLON_FILE_SECRET`), the console offers only what is on, with one line
 * saying why the rest is off (issue 26). Each page is checked for labelled controls and
 * for fitting 375 px without sideways scrolling, and saved as a screenshot under
 * `tests/artifacts/console/` (gitignored).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { signInWithStandin, standinSettings, startGithubStandin, type GithubStandin } from '../../helpers/github-standin.ts';
import { startTestHosted, uniqueAccount, type TestHosted } from '../../helpers/hosted.ts';
import { selfSignedCertificate } from '../../helpers/https-agent.ts';
import { startHttp, type TestServer } from '../../helpers/runtimes.ts';

/** The browser: `HOLON_CHROMIUM`, else Debian's. */
const CHROMIUM = process.env.HOLON_CHROMIUM ?? '/usr/bin/chromium';
const ARTIFACTS = path.join(import.meta.dirname, '..', '..', 'artifacts', 'console');
const SITE = 'https://site.example';

let github: GithubStandin;
let hosted: TestHosted;
/** The author's webhook: answers the number of words of `text`. */
let webhook: TestServer;
/** The certificate authority the gateways trust for the webhook (its self-signed certificate, PEM). */
let webhookCa: string;
let browser: Browser;
let page: Page;
let origin: string;
/** Every URL the current page requested, in order. */
const requested: string[] = [];

// A machine without the browser skips this file, except in CI, which installs it (`.ci/run`).
const missing = !existsSync(CHROMIUM);
const skip = missing && !process.env.CI ? `no browser at ${CHROMIUM} (apt-get install chromium, or set HOLON_CHROMIUM)` : false;

before(async () => {
  if (skip) return;
  github = await startGithubStandin();
  const tls = selfSignedCertificate();
  webhook = await startHttp((_req, res, body) => {
    const words = String((JSON.parse(body) as { text?: unknown } | null)?.text ?? '').split(/\s+/).filter(Boolean).length;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ words }));
  }, tls);
  webhookCa = tls.cert.toString('utf8');
  hosted = await startTestHosted({
    // The author's webhook serves on loopback: private endpoints allowed, as in development (gateway §7 "Network safety").
    settings: { site_url: SITE, allow_private_endpoints: true, github: { client_id: github.client_id, client_secret: github.client_secret, web_url: github.url, api_url: github.url } },
    ca: webhookCa,
  });
  origin = new URL(hosted.running.url).origin;
  await mkdir(ARTIFACTS, { recursive: true });
  // Chromium's sandbox cannot start as root (CI runs as root): only then is it turned off.
  browser = await chromium.launch({ executablePath: CHROMIUM, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
});

/** A fresh tab, 375 px wide, in English and UTC, of a browser context of its own (no shared session storage); accepts every confirmation. */
async function freshPage(): Promise<void> {
  const context = await browser.newContext({ viewport: { width: 375, height: 812 }, locale: 'en-US', timezoneId: 'UTC' });
  page = await context.newPage();
  requested.length = 0;
  page.on('request', (request) => requested.push(request.url()));
  page.on('dialog', (dialog) => void dialog.accept());
}

after(async () => {
  await browser?.close();
  await hosted?.close();
  await webhook?.close();
  await github?.close();
});

/** Opens a view of the signed-in console by its navigation button and waits for its heading. */
async function open(view: 'Overview' | 'Approvals' | 'Keys' | 'Receipts' | 'Agents', heading: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Console' }).getByRole('button', { name: view }).click();
  await page.getByRole('heading', { name: heading, level: 2 }).waitFor();
}

/** Opens the author section afresh (by way of the overview, so its heading is the new drawing's). */
async function reopenAgents(): Promise<void> {
  await open('Overview', 'Balance');
  await open('Agents', 'Earnings');
}

/** Saves the page as `<name>.png` and checks what every page must be: labelled controls, no sideways scrolling at 375 px. */
async function checkAndSave(name: string): Promise<void> {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
  const unlabelled = await page.evaluate(() =>
    [...document.querySelectorAll('input, select, button, a')]
      .filter((element) => {
        const labels = (element as HTMLInputElement).labels;
        const name = element.getAttribute('aria-label') ?? (labels && labels.length > 0 ? labels[0].textContent : element.textContent);
        return !name || name.trim() === '';
      })
      .map((element) => element.outerHTML),
  );
  assert.deepEqual(unlabelled, [], `${name}: every control has a label`);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.equal(overflow, 0, `${name}: no sideways scrolling at 375 px`);
}

/** Presses Tab until the focused element's accessible label starts with `label` (at most 60 presses), then Enter. */
async function pressByKeyboard(label: string): Promise<void> {
  for (let presses = 0; presses < 60; presses++) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => document.activeElement?.getAttribute('aria-label') ?? document.activeElement?.textContent ?? '');
    if (focused.startsWith(label)) return page.keyboard.press('Enter');
  }
  assert.fail(`no element labelled "${label}…" is reachable with Tab`);
}

test('sign in with GitHub, approve a held call, watch its receipt tree, create and revoke a key', { skip }, async () => {
  await freshPage();
  const login = uniqueAccount('gh');
  const handle = login.toLowerCase();

  // Signed out: the two ways in, and the site's terms and privacy pages.
  await page.goto(`${origin}/console`);
  await page.getByRole('link', { name: 'Sign in with GitHub' }).waitFor();
  assert.equal(await page.getByTestId('features-off').count(), 0, 'every feature is on: no line says one is off');
  assert.equal(await page.getByRole('link', { name: 'Terms' }).getAttribute('href'), `${SITE}/terms`);
  assert.equal(await page.getByRole('link', { name: 'Privacy' }).getAttribute('href'), `${SITE}/privacy`);
  await checkAndSave('1-sign-in');

  // GitHub (the stand-in) approves at once and sends the browser back with a one-time code.
  github.approveNext({ id: 7_100_001, login, emails: [{ email: `${handle}@example.test`, primary: true, verified: true }] });
  const signInStart = requested.length;
  await page.getByRole('link', { name: 'Sign in with GitHub' }).click();
  await page.getByTestId('balance').waitFor();
  assert.equal(await page.getByTestId('balance').textContent(), '5.00 EUR');
  assert.equal(await page.getByTestId('handle').textContent(), handle);
  // The code is wiped from the address bar; the key is in this tab's session storage only, never in a URL.
  assert.equal(page.url(), `${origin}/console`);
  const storage = await page.evaluate(() => ({ session: sessionStorage.getItem('holon.key'), local: localStorage.length, cookie: document.cookie }));
  assert.match(storage.session ?? '', /^hlk_h_/);
  assert.deepEqual([storage.local, storage.cookie], [0, '']);
  assert.ok(requested.every((url) => !url.includes('hlk_')), 'no key in any URL');
  // The new account's agent key is shown once.
  assert.match(await page.getByTestId('signin-key').inputValue(), /^hlk_a_/);
  const signInHops = requested.slice(signInStart).map((url) => new URL(url).origin);
  assert.deepEqual([...new Set(signInHops)].sort(), [origin, github.url].sort(), 'the sign-in goes to GitHub and back, nowhere else');
  const bar = page.locator(`[data-mandate="${handle}/sandbox"] .bar`);
  assert.equal(await bar.getAttribute('aria-label'), 'spent 0.00, reserved 0.00, remaining 5.00 of 5.00 EUR');
  await checkAndSave('2-overview');

  // A new agent key, asking in its client; shown once.
  await open('Keys', 'Keys');
  await page.getByLabel('Mandate').selectOption(`${handle}/sandbox`);
  await page.getByLabel(/Ask in client/).check();
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.getByTestId('new-key').waitFor();
  const agentKey = await page.getByTestId('new-key').inputValue();
  assert.match(agentKey, /^hlk_a_/);
  const prefix = agentKey.slice(0, (await page.locator('[data-key]').last().getAttribute('data-key'))!.length);
  assert.equal(await page.locator(`[data-key="${prefix}"] td`).nth(3).textContent(), 'yes');
  await checkAndSave('3-keys');

  // From the API: a call whose worst case (0.05 + a 1.50 downstream cap) is above the sandbox's 0.50 approval threshold.
  const held = await hosted.http
    .post('/v0/calls')
    .set('authorization', `Bearer ${agentKey}`)
    .send({ mandate: `${handle}/sandbox`, agent: 'gto/tree', input: { calls: [{ agent: 'gt/run', input: {} }] } });
  assert.equal(held.status, 202);
  const receiptId: string = held.body.receipt.id;

  await open('Receipts', 'Receipts');
  assert.equal(await page.locator(`[data-receipt="${receiptId}"] [data-testid=status]`).first().textContent(), 'pending approval');

  await open('Approvals', 'Pending approvals');
  const card = page.locator(`[data-approval="${held.body.approval.id}"]`);
  assert.equal(await card.locator('h3').textContent(), 'gto/tree@1.0.0');
  assert.deepEqual(await card.locator('dd').allTextContents(), [
    `${handle}/sandbox`,
    '1.55 EUR',
    'none set',
    held.body.approval.reason,
    receiptId,
    new Date(held.body.approval.expires_at).toLocaleString('en-US', { timeZone: 'UTC' }),
  ]);
  await checkAndSave('4-approvals');
  await pressByKeyboard('Approve and run');
  await page.getByRole('status').filter({ hasText: 'Approved' }).waitFor();
  assert.equal(await page.getByRole('status').textContent(), `Approved: the call ran, receipt ${receiptId} succeeded, cost 0.15 EUR.`);

  // The receipt tree now shows the run and the call it made.
  await open('Receipts', 'Receipts');
  const root = page.locator(`[data-receipt="${receiptId}"]`);
  assert.equal(await root.locator('[data-testid=status]').first().textContent(), 'succeeded');
  const child = root.locator('ul.tree > li.receipt');
  assert.equal(await child.count(), 1);
  assert.equal(await child.locator('strong').textContent(), 'gt/run@1.0.0');
  assert.equal(await child.locator('[data-testid=status]').textContent(), 'succeeded');
  await checkAndSave('5-receipts');

  await open('Overview', 'Balance');
  assert.equal(await page.getByTestId('balance').textContent(), '4.85 EUR');
  assert.equal(await bar.getAttribute('aria-label'), 'spent 0.15, reserved 0.00, remaining 4.85 of 5.00 EUR');

  // Revoke the agent key: it stops working at once.
  await open('Keys', 'Keys');
  await page.getByRole('button', { name: `Revoke ${prefix}` }).click();
  await page.getByRole('status').filter({ hasText: `Revoked ${prefix}.` }).waitFor();
  await page.locator(`[data-key="${prefix}"]`).waitFor({ state: 'detached' });
  const refused = await hosted.http.get('/v0/me').set('authorization', `Bearer ${agentKey}`);
  assert.deepEqual([refused.status, refused.body.code], [401, 'invalid_key']);

  // The same view on a wider screen (the screenshot in docs/console.md is a copy of this one).
  await page.setViewportSize({ width: 1024, height: 768 });
  await open('Receipts', 'Receipts');
  await page.screenshot({ path: path.join(ARTIFACTS, '6-receipts-wide.png'), fullPage: true });

  // Once on the console, every URL the page loaded is the gateway's.
  const afterSignIn = requested.slice(signInStart).filter((url) => !url.startsWith(github.url) && !url.includes('/v0/auth/github'));
  assert.deepEqual([...new Set(afterSignIn.map((url) => new URL(url).origin))], [origin]);
  assert.deepEqual([...new Set(requested.map((url) => new URL(url).origin))].sort(), [origin, github.url].sort());
});

test('a pasted key: a refused sign-in code, grant and reject, receipts paged and filtered, an agent key refused, a revoked own key signs out', { skip }, async () => {
  await freshPage();
  const account = await hosted.signup();
  const as = (key: string) => ({ authorization: `Bearer ${key}` });
  const call = (body: object) => hosted.http.post('/v0/calls').set(as(account.agent)).send({ mandate: account.mandate, ...body });
  // Eleven cheap calls: one page of ten and an older page of one.
  const cheap: string[] = [];
  for (let i = 0; i < 11; i++) cheap.push((await call({ agent: 'gt/free', input: {} }).expect(200)).body.receipt.id);
  await hosted.http
    .post('/v0/mandates')
    .set(as(account.human))
    .send({ id: 'other', grantee: `${account.handle}/bot`, allow: { agents: ['*'] }, budget: { total: '1.00' } })
    .expect(201);
  const elsewhere = (await hosted.http.post('/v0/calls').set(as(account.human)).send({ mandate: `${account.handle}/other`, agent: 'gt/free', input: {} }).expect(200)).body.receipt.id;
  const granted = (await call({ agent: 'gto/tree', input: {} }).expect(202)).body;
  const rejected = (await call({ agent: 'gto/tree', input: { do: 'ok' } }).expect(202)).body;

  // A sign-in error in the fragment is explained, and wiped from the address bar.
  await page.goto(`${origin}/console#login_error=invalid_state`);
  await page.getByRole('alert').filter({ hasText: 'expired' }).waitFor();
  assert.equal(await page.getByRole('alert').textContent(), 'That sign-in link expired or was opened in another browser: sign in again.');
  assert.equal(page.url(), `${origin}/console`);

  // A sign-in code that is unknown (or used, or too old) is refused with the gateway's sentence.
  await page.goto('about:blank');
  await page.goto(`${origin}/console#login=not-a-code`);
  await page.getByRole('alert').filter({ hasText: 'no_such_login_code' }).waitFor();
  assert.equal(await page.getByRole('alert').textContent(), 'Signing in failed: this sign-in code is unknown, used or older than 2 minutes: sign in again (no_such_login_code)');
  assert.equal(page.url(), `${origin}/console`);

  // An agent key is not a way in.
  await page.getByLabel('Human key', { exact: true }).fill(account.agent);
  await page.getByRole('button', { name: 'Open the console' }).click();
  await page.getByRole('alert').filter({ hasText: 'agent key' }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);

  await page.getByLabel('Human key', { exact: true }).fill(account.human);
  await page.getByRole('button', { name: 'Open the console' }).click();
  assert.equal(await page.getByTestId('balance').textContent(), '5.00 EUR');

  await open('Approvals', 'Pending approvals');
  assert.equal(await page.locator('[data-approval]').count(), 2);
  await page.getByRole('button', { name: `Grant gto/tree@1.0.0 (${granted.approval.id})` }).click();
  await page.getByRole('status').filter({ hasText: 'Granted' }).waitFor();
  await page.getByRole('button', { name: `Reject gto/tree@1.0.0 (${rejected.approval.id})` }).click();
  await page.getByRole('status').filter({ hasText: 'Rejected' }).waitFor();
  await page.locator('[data-approval]').first().waitFor({ state: 'detached' });
  // The granted call runs when the agent re-submits it with its approval.
  const rerun = await call({ agent: 'gto/tree', input: {}, approval: granted.approval.id });
  assert.deepEqual([rerun.status, rerun.body.receipt.status], [200, 'succeeded']);
  await checkAndSave('7-approvals-decided');

  await open('Receipts', 'Receipts');
  const shown = () => page.locator('ul.roots > li.receipt').evaluateAll((items) => items.map((item) => item.getAttribute('data-receipt')));
  // In the order the calls were made (a re-submitted granted call keeps its receipt when it reuses it), newest first.
  const made = [...new Set([...cheap, granted.receipt.id, rejected.receipt.id, rerun.body.receipt.id])];
  const newestFirst = [...made].reverse();
  await page.getByLabel('Mandate', { exact: true }).selectOption(account.mandate);
  await page.locator(`[data-receipt="${elsewhere}"]`).waitFor({ state: 'detached' });
  assert.deepEqual(await shown(), newestFirst.slice(0, 10));
  await page.getByRole('button', { name: 'Older' }).click();
  await page.getByText('Page 2').waitFor();
  assert.deepEqual(await shown(), newestFirst.slice(10, 20));
  assert.equal(await page.getByRole('button', { name: 'Older' }).isDisabled(), true);
  await checkAndSave('8-receipts-paged');
  await page.getByRole('button', { name: 'Newer' }).click();
  await page.getByText('Page 1').waitFor();
  assert.deepEqual(await shown(), newestFirst.slice(0, 10));
  // Filtered by mandate: the other mandate's one receipt; all mandates again: it is among them.
  await page.getByLabel('Mandate', { exact: true }).selectOption(`${account.handle}/other`);
  await page.locator(`[data-receipt="${elsewhere}"]`).waitFor();
  assert.deepEqual(await shown(), [elsewhere]);
  await page.getByLabel('Mandate', { exact: true }).selectOption('');
  await page.locator('ul.roots > li.receipt').nth(1).waitFor();
  assert.deepEqual(await shown(), [...new Set([...cheap, elsewhere, ...made])].reverse().slice(0, 10));

  // Revoking the key the console uses signs it out.
  await open('Keys', 'Keys');
  await page.getByRole('button', { name: `Revoke ${account.human_prefix}` }).click();
  await page.getByRole('alert').filter({ hasText: 'no longer works' }).waitFor();
  await page.getByRole('link', { name: 'Sign in with GitHub' }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);
  assert.deepEqual([...new Set(requested.map((url) => new URL(url).origin))], [origin]);
});

test('an author: set a credential, connect a webhook (draft, review, publish), a caller calls it, the console shows the version, its earnings and the credential', { skip }, async () => {
  await freshPage();
  const login = uniqueAccount('author');
  const handle = login.toLowerCase();
  const TOKEN = 'author-webhook-token-9';
  await page.goto(`${origin}/console`);
  github.approveNext({ id: 7_100_002, login, emails: [{ email: `${handle}@example.test`, primary: true, verified: true }] });
  await page.getByRole('link', { name: 'Sign in with GitHub' }).click();
  await page.getByTestId('balance').waitFor();

  // Nothing published yet: nothing earned, an empty chart of 30 days.
  await open('Agents', 'Earnings');
  assert.equal(await page.getByTestId('features-off').count(), 0, 'every feature is on: no line says one is off');
  assert.equal(await page.getByTestId('earned-total').textContent(), '0.00 EUR');
  assert.equal(await page.locator('.chart-day').count(), 30);
  assert.match((await page.getByTestId('earnings-chart').getAttribute('aria-label')) ?? '', /^Nothing earned from \d{4}-\d{2}-\d{2} to \d{4}-\d{2}-\d{2}$/);

  // The credential first, so the draft's example call already carries it.
  await page.getByLabel(`Agent name (${handle}/…)`).fill('words');
  await page.getByLabel('Endpoint credential', { exact: true }).fill(TOKEN);
  await page.getByRole('button', { name: 'Set credential' }).click();
  await page.getByRole('status').filter({ hasText: 'is set' }).waitFor();
  assert.equal(await page.getByRole('status').textContent(), `The endpoint credential of ${handle}/words is set: it is sent to its endpoint on every call.`);

  // Connect a webhook: a draft from one example call, reviewed, then published.
  await page.getByLabel(`Name (${handle}/…)`, { exact: true }).fill('words');
  await page.getByLabel('Webhook URL').fill(`${webhook.url}/words`);
  await page.getByLabel('Example input (JSON)').fill('{"text": "one two three"}');
  await page.getByLabel('Price per run in EUR (empty: free)').fill('0.05');
  await page.getByRole('button', { name: 'Draft', exact: true }).click();
  await page.getByTestId('draft-yaml').waitFor();
  const yaml = (await page.getByTestId('draft-yaml').textContent()) ?? '';
  assert.match(yaml, new RegExp(`^id: ${handle}/words$`, 'm'));
  assert.match(yaml, /^version: 0\.1\.0$/m);
  assert.match(yaml, /amount: "?0\.05"?$/m);
  assert.deepEqual(webhook.received.map((request) => [request.path, request.headers.authorization, request.body]), [['/words', `Bearer ${TOKEN}`, '{"text":"one two three"}']]);
  await checkAndSave('9-author-draft');
  await page.getByRole('button', { name: `Publish ${handle}/words@0.1.0` }).click();
  await page.getByRole('status').filter({ hasText: 'Published' }).waitFor();
  assert.equal(await page.getByRole('status').textContent(), `Published ${handle}/words@0.1.0: callers can call it now.`);
  const card = page.locator(`[data-agent="${handle}/words"]`);
  assert.equal(await card.getByTestId('credential').textContent(), 'set');

  // A caller calls it through the API; the author's share is posted to the journal by the outbox.
  const caller = await hosted.signup();
  const called = await hosted.http.post('/v0/calls').set('authorization', `Bearer ${caller.agent}`).send({ mandate: caller.mandate, agent: `${handle}/words`, input: { text: 'a b' } });
  assert.equal(called.status, 200, JSON.stringify(called.body));
  assert.deepEqual(called.body.output, { words: 2 });
  const human = await page.evaluate(() => sessionStorage.getItem('holon.key'));
  for (let poll = 0; ; poll += 1) {
    const mine = await hosted.http.get('/v0/me/agents').set('authorization', `Bearer ${human}`).expect(200);
    if (mine.body.total !== '0.00') break;
    assert.ok(poll < 200, 'the settlement was not posted after 200 polls');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  // The console shows the version, what it earned (the price less the 10% fee), on today's column, and the credential.
  await reopenAgents();
  assert.equal(await page.getByTestId('earned-total').textContent(), '0.045 EUR');
  const version = page.locator(`[data-version="${handle}/words@0.1.0"]`);
  assert.equal(await version.getByTestId('earned').textContent(), '0.045 EUR from 1 paid call (share 0.045, royalties 0.00)');
  assert.equal(await version.locator('.hint').textContent(), 'No evaluation: no suite for the capabilities it claims.');
  // The day is the settlement's posting day, the chart's last day the server's today (read, not
  // assumed from this clock, so a run across UTC midnight still agrees with itself).
  const { posted_at } = await hosted.running.db.knex('gateway_settlement_intents').where({ receipt: called.body.receipt.id, operation: 'settle' }).first('posted_at');
  const earnedDay = new Date(posted_at).toISOString().slice(0, 10);
  const chart = (await hosted.http.get('/v0/me/agents').set('authorization', `Bearer ${human}`).expect(200)).body.by_day as Array<{ day: string }>;
  assert.deepEqual(await page.locator('[data-earned-day]').evaluateAll((rows) => rows.map((row) => row.textContent)), [`${earnedDay}0.045`]);
  assert.equal(await page.getByTestId('earnings-chart').getAttribute('aria-label'), `Earned from ${chart[0].day} to ${chart.at(-1)!.day}: 1 day with earnings, best ${earnedDay} (0.045 EUR)`);
  assert.equal(await card.getByTestId('credential').textContent(), 'set');
  await checkAndSave('10-author');

  // Removing the credential: the console and the API agree it is no longer set.
  await page.getByRole('button', { name: `Remove the endpoint credential of ${handle}/words` }).click();
  await page.getByRole('status').filter({ hasText: 'removed' }).waitFor();
  assert.equal(await card.getByTestId('credential').textContent(), 'not set');
  const removed = await hosted.http.get('/v0/me/agents').set('authorization', `Bearer ${human}`).expect(200);
  assert.equal(removed.body.versions[0].credential_set, false);

  // A version claiming a capability with a suite is evaluated in the background: its score and public cases in detail.
  const manifest = {
    id: `${handle}/words`,
    version: '0.2.0',
    summary: 'Counts words.',
    capabilities: ['data.profile'],
    interface: { input: { type: 'object' }, output: { type: 'object' } },
    price: { model: 'per_run', amount: '0.05', currency: 'EUR' },
    runtime: { kind: 'webhook', endpoint: `${webhook.url}/words` },
    license: 'proprietary',
  };
  await hosted.http.post('/v0/agents').set('authorization', `Bearer ${human}`).send(manifest).expect(201);
  let evaluation: { status: string; passed: number; total: number; cases: Array<{ name: string; pass: boolean }> } | undefined;
  for (let poll = 0; evaluation?.status !== 'done'; poll += 1) {
    assert.ok(poll < 400, 'the evaluation was not done after 400 polls');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const mine = await hosted.http.get('/v0/me/agents').set('authorization', `Bearer ${human}`).expect(200);
    evaluation = mine.body.versions.find((v: { agent: string }) => v.agent === `${handle}/words@0.2.0`)?.evaluations[0];
  }
  await reopenAgents();
  const evaluated = page.locator(`[data-version="${handle}/words@0.2.0"] [data-evaluation="data.profile"]`);
  assert.equal(await evaluated.getByTestId('evaluation-score').textContent(), `${evaluation!.passed} of ${evaluation!.total} passed`);
  assert.equal(evaluation!.total, 5);
  assert.deepEqual(await evaluated.locator('[data-case] summary').allTextContents(), evaluation!.cases.map((c) => `${c.pass ? 'pass' : 'fail'} ${c.name}`));
  await evaluated.locator('[data-case] summary').first().click();
  await evaluated.locator('[data-case] details[open] pre').first().waitFor();

  await page.setViewportSize({ width: 1024, height: 768 });
  await reopenAgents();
  await page.screenshot({ path: path.join(ARTIFACTS, '11-author-wide.png'), fullPage: true });
  assert.deepEqual([...new Set(requested.map((url) => new URL(url).origin))].sort(), [origin, github.url].sort());
});

/** Opens the console at `at` with a pasted human key, then its author section. */
async function pasteKeyAndOpenAgents(at: string, key: string): Promise<void> {
  await page.getByLabel('Human key', { exact: true }).fill(key);
  await page.getByRole('button', { name: 'Open the console' }).click();
  await page.getByTestId('balance').waitFor();
  await open('Agents', 'Earnings');
  assert.deepEqual([...new Set(requested.map((url) => new URL(url).origin))], [at]);
}

test('without a GitHub app: no "Sign in with GitHub" and no "Connect a webhook", one line each saying why; credentials stay', { skip }, async () => {
  await freshPage();
  const off = await startTestHosted({ settings: { github: null } });
  try {
    const at = new URL(off.running.url).origin;
    await page.goto(`${at}/console`);
    await page.getByRole('heading', { name: 'Paste a human key', level: 2 }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'Sign in with GitHub' }).count(), 0);
    assert.equal(await page.getByTestId('features-off').textContent(), 'Sign in with GitHub is off on this gateway: its operator has not set HOLON_GITHUB_CLIENT_ID and HOLON_GITHUB_CLIENT_SECRET.');
    assert.equal(await page.getByText('See your balance, mandates, keys and receipts, decide the calls waiting for your approval.', { exact: true }).count(), 1, 'publishing is not promised');
    await checkAndSave('12-sign-in-github-off');

    await pasteKeyAndOpenAgents(at, (await off.signup()).human);
    assert.equal(await page.getByTestId('features-off').textContent(), 'Publishing is off on this gateway: it has no GitHub app (its operator has not set HOLON_GITHUB_CLIENT_ID and HOLON_GITHUB_CLIENT_SECRET).');
    assert.equal(await page.getByRole('heading', { name: 'Connect a webhook' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Draft', exact: true }).count(), 0);
    assert.equal(await page.getByText('You have published nothing yet.', { exact: true }).count(), 1);
    await page.getByRole('heading', { name: 'Credential for a new agent', level: 2 }).waitFor();
    await checkAndSave('13-author-github-off');
  } finally {
    await off.close();
  }
});

test('without HOLON_FILE_SECRET: no credential status or form, one line saying why; GitHub sign-in and "Connect a webhook" stay', { skip }, async () => {
  await freshPage();
  const off = await startTestHosted({ settings: { ...standinSettings(github), file_secret: null, allow_private_endpoints: true }, ca: webhookCa });
  try {
    const at = new URL(off.running.url).origin;
    const login = uniqueAccount('nosecret');
    const { handle, human } = await signInWithStandin(off.http, github, { id: 7_100_003, login, emails: [{ email: `${login.toLowerCase()}@example.test`, primary: true, verified: true }] });
    // A published agent, whose card would carry the credential controls.
    const manifest = {
      id: `${handle}/words`,
      version: '0.1.0',
      summary: 'Counts words.',
      capabilities: [],
      interface: { input: { type: 'object' }, output: { type: 'object' } },
      price: { model: 'free', currency: 'EUR' },
      runtime: { kind: 'webhook', endpoint: `${webhook.url}/words` },
      license: 'proprietary',
    };
    await off.http.post('/v0/agents').set('authorization', `Bearer ${human}`).send(manifest).expect(201);

    await page.goto(`${at}/console`);
    await page.getByRole('link', { name: 'Sign in with GitHub' }).waitFor();
    assert.equal(await page.getByTestId('features-off').count(), 0, 'GitHub sign-in is on: nothing to explain on this page');
    await pasteKeyAndOpenAgents(at, human);
    assert.equal(await page.getByTestId('features-off').textContent(), 'Endpoint credentials are off on this gateway: its operator has not set HOLON_FILE_SECRET.');
    const card = page.locator(`[data-agent="${handle}/words"]`);
    await card.waitFor();
    assert.equal(await card.getByTestId('credential').count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Set credential' }).count(), 0);
    assert.equal(await page.getByRole('heading', { name: 'Credential for a new agent' }).count(), 0);
    await page.getByRole('heading', { name: 'Connect a webhook', level: 2 }).waitFor();
    await checkAndSave('14-author-credentials-off');
  } finally {
    await off.close();
  }
});
