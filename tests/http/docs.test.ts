/**
 * The OpenAPI documents served (issue 13 §3): `GET /openapi.json` on the gateway and on the
 * reference binding answers the bundled document; `GET /docs` on the gateway is a reference page
 * whose every script and stylesheet comes from the gateway itself, under a same-origin
 * Content-Security-Policy, and the bundled renderer names no other origin to load from except
 * Redocly's footer logo, which that policy blocks. The page links every docs page by reader
 * (issue 25 §5), and the gateway serves each as it is in `docs/`, as Markdown.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import gatewayDocument from '../../generated/gateway/openapi.json' with { type: 'json' };
import clearingDocument from '../../generated/clearing/openapi.json' with { type: 'json' };
import { DOCS_CSP, DOCS_DIR } from '../../src/http/docs.ts';
import { useTestGateway } from '../helpers/gateway.ts';
import { useTestBinding } from '../helpers/clearing.ts';

const gw = useTestGateway();
const binding = useTestBinding();

test('GET /openapi.json on the gateway answers the bundled gateway document', async () => {
  const response = await fetch(`${gw.running.url}/openapi.json`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  const document = await response.json();
  assert.deepEqual(document, gatewayDocument);
  assert.equal(document.openapi, '3.1.0');
  assert.ok(document.paths['/v0/calls'].post);
  assert.equal(JSON.stringify(document).includes('"$ref":"./'), false, 'schema files are bundled in, no relative $ref left');
});

test('GET /openapi.json on the reference binding answers the clearing document', async () => {
  const response = await binding.http.get('/openapi.json');
  assert.equal(response.status, 200);
  assert.deepEqual(response.body, clearingDocument);
  assert.equal(response.body.info.title, 'Holon clearing seam');
});

test('GET /docs is a page whose every script and stylesheet is same-origin, under a same-origin policy', async () => {
  const origin = new URL(gw.running.url).origin;
  const response = await fetch(`${gw.running.url}/docs`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
  assert.equal(response.headers.get('content-security-policy'), DOCS_CSP);
  const html = await response.text();
  const referenced = [...html.matchAll(/<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)="([^"]+)"/g)].map((match) => match[1]);
  assert.deepEqual(referenced, ['/docs/docs.css', '/docs/redoc.standalone.js', '/docs/init.js']);
  for (const reference of referenced) {
    const url = new URL(reference, response.url);
    assert.equal(url.origin, origin, `${reference} is same-origin`);
    const asset = await fetch(url);
    assert.equal(asset.status, 200, reference);
    assert.match(asset.headers.get('content-type') ?? '', reference.endsWith('.css') ? /^text\/css/ : /^text\/javascript/);
    assert.equal(asset.headers.get('content-security-policy'), DOCS_CSP);
  }
  const init = await (await fetch(`${origin}/docs/init.js`)).text();
  assert.match(init, /^Redoc\.init\('\/openapi\.json'/);
  assert.equal(/https?:\/\//.test(init), false, 'the renderer is configured with no URL of another origin');
});

test('the policy names no other origin, and the bundle loads nothing from one but the logo the policy blocks', async () => {
  for (const directive of DOCS_CSP.split('; ')) assert.equal(/https?:|\*/.test(directive), false, directive);
  assert.match(DOCS_CSP, /default-src 'none'/);
  assert.match(DOCS_CSP, /img-src 'self' data:(;|$)/);
  const bundle = await readFile(createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js'), 'utf8');
  const loads = [...bundle.matchAll(/(?:src|url\(|@import)[:=( ]*["']?(https?:\/\/[^"') ]+)/g)].map((match) => match[1]);
  assert.deepEqual(loads, ['https://cdn.redoc.ly/redoc/logo-mini.svg']);
  assert.equal(/fonts\.(googleapis|gstatic)\.com/.test(bundle), false, 'no web font is fetched');
});

test('GET /docs links every docs page by its title, and nothing else, in file name order', async () => {
  const html = await (await fetch(`${gw.running.url}/docs`)).text();
  const links = [...html.matchAll(/<a href="([^"]+)">([^<]*)<\/a>/g)].map(([, href, title]) => `${href} ${title}`);
  const files = (await readdir(DOCS_DIR)).filter((file) => file.endsWith('.md')).sort();
  assert.ok(files.includes('operators.md') && files.includes('callers.md') && files.includes('traceability.md'), files.join(', '));
  const expected = await Promise.all(files.map(async (file) => `/docs/${file} ${/^# (.+)$/m.exec(await readFile(new URL(file, DOCS_DIR), 'utf8'))![1]}`));
  assert.deepEqual(links, expected);
  assert.ok(links.includes('/docs/operators.md Operators'), links.join('\n'));
  assert.ok(html.indexOf('<nav') < html.indexOf('<div id="reference">'), 'the links come before the reference');
});

test('GET /docs/<page>.md answers the page as it is in docs/, as Markdown, under the same policy', async () => {
  for (const file of ['operators.md', 'callers.md', 'binding-teams.md', 'authors.md', 'decisions.md', 'traceability.md']) {
    const response = await fetch(`${gw.running.url}/docs/${file}`);
    assert.equal(response.status, 200, file);
    assert.equal(response.headers.get('content-type'), 'text/markdown; charset=utf-8');
    assert.equal(response.headers.get('content-security-policy'), DOCS_CSP);
    assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(await response.text(), await readFile(new URL(file, DOCS_DIR), 'utf8'), file);
  }
  const head = await fetch(`${gw.running.url}/docs/operators.md`, { method: 'HEAD' });
  assert.equal(head.status, 200);
});

test('only the pages of docs/ are served: another name, another folder or a way out of it answers 404', async () => {
  for (const at of ['/docs/nothing.md', '/docs/README.md', '/docs/..%2Fpackage.json', '/docs/../README.md', '/docs/%2e%2e/README.md', '/docs/operators.md.bak', '/docs/Operators.md']) {
    const response = await fetch(`${gw.running.url}${at}`);
    assert.equal(response.status, 404, at);
    assert.notEqual(response.headers.get('content-type'), 'text/markdown; charset=utf-8', at);
  }
});

test('/docs is the gateway\'s alone: the binding answers it with no_such_route', async () => {
  for (const at of ['/docs', '/docs/operators.md']) {
    const response = await binding.http.get(at);
    assert.equal(response.status, 404, at);
    assert.equal(response.body.code, 'no_such_route', at);
  }
});

/** Every address the document refers to: a `$ref` outside itself, a Markdown link, a JSON file named in a description (`x.schema.json`), each but fragments. */
function referencesOf(document: unknown): string[] {
  const found = new Set<string>();
  const visit = (node: unknown, key: string): void => {
    if (Array.isArray(node)) return node.forEach((item) => visit(item, key));
    if (node !== null && typeof node === 'object') return Object.entries(node).forEach(([k, value]) => visit(value, k));
    if (typeof node !== 'string') return;
    if (key === '$ref' && !node.startsWith('#')) found.add(node);
    if (key !== 'description') return;
    for (const [, link] of node.matchAll(/\]\(([^)\s]+)\)/g)) if (!link.startsWith('#')) found.add(link);
    for (const [, file] of node.matchAll(/`([\w./-]+\.json)`/g)) found.add(file);
  };
  visit(document, '');
  return [...found].sort();
}

test('every schema file and link the served document refers to answers 200 from the gateway, as openapi/ holds it', async () => {
  const at = `${gw.running.url}/openapi.json`;
  const document = await (await fetch(at)).json();
  const references = referencesOf(document);
  assert.deepEqual(references, ['/.well-known/jwks.json', '/mandate.schema.json', '/manifest.schema.json'], 'the document names the two schema files and the signing keys, and only by a link');
  // The keys are the gateway's own (issue 23), not a file of openapi/: a JWKS it serves.
  const jwks = await fetch(new URL('/.well-known/jwks.json', at));
  assert.equal(jwks.status, 200);
  assert.ok(Array.isArray(((await jwks.json()) as { keys?: unknown }).keys));
  for (const reference of references.filter((r) => r.endsWith('.schema.json'))) {
    const url = new URL(reference, at);
    assert.equal(url.origin, new URL(at).origin, reference);
    const response = await fetch(url);
    assert.equal(response.status, 200, reference);
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(await response.json(), JSON.parse(await readFile(new URL(`../../openapi/${url.pathname.slice(1)}`, import.meta.url), 'utf8')));
  }
  // The reference page sits at /docs and /docs/: an absolute link resolves to the same file from both.
  for (const page of ['/docs', '/docs/']) assert.equal(new URL('/manifest.schema.json', `${gw.running.url}${page}`).pathname, '/manifest.schema.json');
});
