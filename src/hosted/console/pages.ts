/**
 * The console's pages (issue 11, gateway §7): `GET /console` (the page, with the terms and
 * privacy links of `HOLON_SITE_URL`), `/console/console.js` (the committed bundle of
 * `./browser`, see `./build.ts`) and `/console/console.css`, all from this process under
 * a Content-Security-Policy that allows nothing but this origin: no inline script or style, no
 * frame, no form posted anywhere. The page uses system fonts, so it loads no font at all.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Middleware } from 'koa';

/** The policy of every console answer (issue 11 "a strict Content-Security-Policy"). */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const CONSOLE_DIR = path.dirname(fileURLToPath(import.meta.url));

/** Escapes a text for an HTML attribute or text node. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The page: the shell the script fills; the footer links to `${site_url}/terms` and `/privacy` when a site is set. */
export function consolePage(site_url: string | null): string {
  const site = site_url?.replace(/\/+$/, '') ?? null;
  const links = site
    ? `<a href="${escapeHtml(`${site}/terms`)}">Terms</a> · <a href="${escapeHtml(`${site}/privacy`)}">Privacy</a> · `
    : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Holon console</title>
<link rel="stylesheet" href="/console/console.css">
</head>
<body>
<header><h1>Holon console</h1><div id="who"></div></header>
<div class="regions"><p id="status" role="status" aria-live="polite"></p><p id="alert" role="alert"></p></div>
<main id="main"><p>Loading…</p><noscript>The console needs JavaScript; the same API is documented at <a href="/docs">/docs</a>.</noscript></main>
<footer>${links}<a href="/docs">API reference</a></footer>
<script src="/console/console.js"></script>
</body>
</html>
`;
}

/**
 * Koa middleware answering `GET`/`HEAD` `/console` (and `/console/`) and its two assets; other
 * requests pass on. Assets are read from disk once, on first use.
 */
export function consolePages(site_url: string | null): Middleware {
  const html = consolePage(site_url);
  const files = new Map<string, Promise<Buffer>>();
  const read = (file: string) => {
    if (!files.has(file)) files.set(file, readFile(path.join(CONSOLE_DIR, file)));
    return files.get(file)!;
  };
  const assets: Record<string, { type: string; body: () => Promise<string | Buffer> }> = {
    '/console': { type: 'text/html; charset=utf-8', body: async () => html },
    '/console/console.js': { type: 'text/javascript; charset=utf-8', body: () => read('dist/console.js') },
    '/console/console.css': { type: 'text/css; charset=utf-8', body: () => read('console.css') },
  };
  return async (ctx, next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    const asset = assets[ctx.path === '/console/' ? '/console' : ctx.path];
    if (!asset) return next();
    ctx.set('Content-Security-Policy', CONSOLE_CSP);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('Cache-Control', 'no-store');
    ctx.type = asset.type;
    ctx.body = await asset.body();
  };
}
