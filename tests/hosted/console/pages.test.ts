/**
 * The console's pages as served (issue 11): `/console` and its two assets come from the hosted
 * gateway under a same-origin Content-Security-Policy, the page links the site's terms and
 * privacy pages only when `HOLON_SITE_URL` is set (escaped), the dev gateway serves no console,
 * and the committed bundle is exactly what `src/hosted/console/build.ts` writes from `src/hosted/console/browser`.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { bundleConsole, CONSOLE_BUNDLE } from '../../../src/hosted/console/build.ts';
import { CONSOLE_CSP, consolePage } from '../../../src/hosted/console/pages.ts';
import { startTestHosted, type TestHosted } from '../../helpers/hosted.ts';

let hosted: TestHosted;

before(async () => {
  hosted = await startTestHosted({ settings: { site_url: 'https://site.example/' } });
});
after(async () => {
  await hosted?.close();
});

test('GET /console is the page, its script and stylesheet from the gateway, each under the same-origin policy', async () => {
  const page = await hosted.http.get('/console').expect(200);
  assert.match(page.headers['content-type'], /^text\/html; charset=utf-8/);
  const referenced = [...page.text.matchAll(/<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)="([^"]+)"/g)].map((match) => match[1]);
  assert.deepEqual(referenced, ['/console/console.css', '/console/console.js']);
  assert.equal(/<script>|\sstyle=|<style/.test(page.text), false, 'no inline script or style, which the policy would refuse');
  const expected = {
    '/console': /^text\/html/,
    '/console/': /^text\/html/,
    '/console/console.js': /^text\/javascript/,
    '/console/console.css': /^text\/css/,
  };
  for (const [path, type] of Object.entries(expected)) {
    const response = await hosted.http.get(path).expect(200);
    assert.match(response.headers['content-type'], type, path);
    assert.equal(response.headers['content-security-policy'], CONSOLE_CSP, path);
    assert.deepEqual([response.headers['x-content-type-options'], response.headers['referrer-policy'], response.headers['cache-control']], ['nosniff', 'no-referrer', 'no-store'], path);
  }
  assert.equal(CONSOLE_CSP, "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
  assert.equal((await hosted.http.get('/console/other.js')).status, 404);
  assert.equal((await hosted.http.post('/console').send({})).status, 404);
});

test('the footer links HOLON_SITE_URL/terms and /privacy, escaped; without a site there are no such links', async () => {
  const page = await hosted.http.get('/console').expect(200);
  assert.match(page.text, /<a href="https:\/\/site\.example\/terms">Terms<\/a> · <a href="https:\/\/site\.example\/privacy">Privacy<\/a>/);
  assert.match(consolePage('https://x.example/"><script>'), /href="https:\/\/x\.example\/&#34;&#62;&#60;script&#62;\/terms"/);
  assert.equal(/Terms|Privacy/.test(consolePage(null)), false);
});

test('the console is served through the DNS-rebinding gate: a foreign Host is refused', async () => {
  const refused = await hosted.http.get('/console').set('host', 'attacker.example');
  assert.deepEqual([refused.status, refused.body.code], [403, 'not_permitted']);
});

test('the committed bundle is what src/hosted/console/build.ts writes from src/hosted/console/browser (run npm run build:console and commit it)', async () => {
  assert.equal(await readFile(CONSOLE_BUNDLE, 'utf8'), await bundleConsole());
});
