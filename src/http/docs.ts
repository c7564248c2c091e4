/**
 * The OpenAPI documents served (issue 13 §3): `GET /openapi.json` answers the bundled document
 * (`generated/<name>/openapi.json`, the one the clients are generated from), the JSON Schema
 * files it links to beside it (the gateway's `/manifest.schema.json` and `/mandate.schema.json`,
 * so no link of the reference page answers 404), and `GET /docs` a reference page rendered in
 * the browser by Redoc's standalone bundle, served from this process (`/docs/redoc.standalone.js`,
 * installed from npm with the `redoc` package). The page asks for
 * nothing outside its own origin: no fonts (the theme names system fonts), no scripts, no
 * styles; its Content-Security-Policy forbids any other origin, so the one absolute URL in the
 * bundle (Redocly's footer logo) is never fetched. Above the reference, the page links the docs
 * pages by reader (issue 25 §5), each served as it is in the `docs/` folder that ships with the
 * package: `GET /docs/<page>.md`, `text/markdown; charset=utf-8`.
 */
import { readdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Middleware } from 'koa';

/** The policy of every `/docs` answer: same origin only. Styles may be inline because Redoc's styled-components inject `<style>` elements; the search index runs in a `blob:` worker. */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const REDOC_BUNDLE = createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js');

/** The docs pages' folder: `docs/` at the root of the package. */
export const DOCS_DIR = new URL('../../docs/', import.meta.url);

/** A docs page: its file name (`operators.md`) and its title (the text of its first `# ` heading, else the file name). */
export interface DocsPage {
  readonly file: string;
  readonly title: string;
  readonly text: string;
}

/** The name a served docs page may have: lower-case words joined by hyphens, `.md`; nothing else of the folder is served. */
const PAGE_NAME = /^[a-z0-9][a-z0-9-]*\.md$/;

/** Every page of `dir` (default {@link DOCS_DIR}) whose name is a {@link PAGE_NAME}, in file name order; none when the folder is missing. */
export async function readDocsPages(dir: URL = DOCS_DIR): Promise<DocsPage[]> {
  const files = await readdir(dir).catch(() => [] as string[]);
  const pages: DocsPage[] = [];
  for (const file of files.filter((name) => PAGE_NAME.test(name)).sort()) {
    const text = await readFile(new URL(file, dir), 'utf8');
    pages.push({ file, title: /^# (.+)$/m.exec(text)?.[1].trim() ?? file, text });
  }
  return pages;
}

/** Text made safe inside an HTML element or a double-quoted attribute. */
const escapeHtml = (text: string): string => text.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

/** The page: the docs pages' links, an empty container, Redoc, and the script that renders `/openapi.json` into it. */
function page(title: string, pages: readonly DocsPage[]): string {
  const links = pages.map((docs) => `<li><a href="/docs/${docs.file}">${escapeHtml(docs.title)}</a></li>`).join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title.replace(/[<>&"]/g, '')} reference</title>
<link rel="stylesheet" href="/docs/docs.css">
</head>
<body>
<nav aria-label="Docs pages">
<p>Docs by reader (Markdown):</p>
<ul>
${links}
</ul>
</nav>
<div id="reference"></div>
<script src="/docs/redoc.standalone.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;
}

const SYSTEM_FONTS = 'system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif';

/** Renders the document with system fonts; an inline script would need `'unsafe-inline'`, hence a file. */
const INIT = `Redoc.init('/openapi.json', ${JSON.stringify({
  hideDownloadButton: false,
  theme: { typography: { fontFamily: SYSTEM_FONTS, headings: { fontFamily: SYSTEM_FONTS }, code: { fontFamily: 'ui-monospace, Menlo, Consolas, monospace' } } },
})}, document.getElementById('reference'));\n`;

/** Hides Redocly's footer link, whose logo the policy blocks anyway. */
const CSS = 'body { margin: 0; }\na[href^="https://redocly.com"] { display: none; }\n'
  + 'nav { font-family: system-ui, sans-serif; padding: 0.5rem 1rem; border-bottom: 1px solid #ddd; }\n'
  + 'nav p, nav ul { display: inline; margin: 0; padding: 0; }\nnav li { display: inline; margin-left: 1rem; }\n';

/**
 * Koa middleware answering `GET /openapi.json` with `document`, each of `beside` (path, e.g.
 * `/manifest.schema.json`, to a JSON document the first one links to) with its document, and,
 * when `title` is given, `GET /docs` with the reference page and its three same-origin assets,
 * and `GET /docs/<page>.md` with each page of `docs_dir` (read once, on the first request).
 * Other requests pass on.
 */
export function servedDocuments(document: object, title?: string, beside: Record<string, object> = {}, docs_dir: URL = DOCS_DIR): Middleware {
  const json = JSON.stringify(document);
  const besides = new Map(Object.entries(beside).map(([at, served]) => [at, JSON.stringify(served)]));
  let bundle: Promise<Buffer> | null = null;
  let pages: Promise<DocsPage[]> | null = null;
  const docsPages = () => (pages ??= readDocsPages(docs_dir));
  const assets: Record<string, { type: string; body: () => Promise<string | Buffer> }> = {
    '/docs': { type: 'text/html; charset=utf-8', body: async () => page(title ?? '', await docsPages()) },
    '/docs/init.js': { type: 'text/javascript; charset=utf-8', body: async () => INIT },
    '/docs/docs.css': { type: 'text/css; charset=utf-8', body: async () => CSS },
    // Read once, on the first request: 1.1 MB that most runs never need.
    '/docs/redoc.standalone.js': { type: 'text/javascript; charset=utf-8', body: () => (bundle ??= readFile(REDOC_BUNDLE)) },
  };
  /** `/docs/<page>.md` as an asset, when the folder has that page. */
  const docsPageAsset = async (at: string) => {
    const file = at.startsWith('/docs/') ? at.slice('/docs/'.length) : '';
    if (!PAGE_NAME.test(file)) return undefined;
    const found = (await docsPages()).find((docs) => docs.file === file);
    return found && { type: 'text/markdown; charset=utf-8', body: async () => found.text };
  };
  return async (ctx, next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    const served = ctx.path === '/openapi.json' ? json : besides.get(ctx.path);
    if (served !== undefined) {
      ctx.type = 'application/json';
      ctx.body = served;
      return;
    }
    if (title === undefined) return next();
    const asset = assets[ctx.path === '/docs/' ? '/docs' : ctx.path] ?? (await docsPageAsset(ctx.path));
    if (!asset) return next();
    ctx.set('Content-Security-Policy', DOCS_CSP);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.type = asset.type;
    ctx.body = await asset.body();
  };
}
