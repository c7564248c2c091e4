/**
 * One log line per request at info level (issue 13 §4, `holon serve`): method, path, status,
 * milliseconds and, when the answer carries one, the receipt id, both as fields and as the
 * message, e.g. `POST /v0/calls 200 12.4 ms r17`. The path only: a query string can carry
 * what a caller would not want in a log.
 */
import type { Middleware } from 'koa';
import type { Logger } from 'pino';

/**
 * Koa middleware logging each request once it is answered (error bodies included: mount it
 * outermost but for `observe/requests.ts`, whose ids it carries). A refusal's line names its code. With `principalOf`, the line also names who asked (`principal`: a key prefix,
 * `none` or `unresolved`; never a key).
 */
export function requestLog(logger: Logger, principalOf?: (ctx: Parameters<Middleware>[0]) => string): Middleware {
  return async (ctx, next) => {
    const started_ns = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const ms = Number((process.hrtime.bigint() - started_ns) / 100_000n) / 10;
      // A handler that answers the response itself (the MCP transport) leaves the status on the raw response.
      const status = ctx.respond === false ? ctx.res.statusCode : ctx.status;
      const receiptId = (ctx.body as { receipt?: { id?: unknown } } | null | undefined)?.receipt?.id;
      const receipt = typeof receiptId === 'string' ? receiptId : null;
      const principal = principalOf ? { principal: principalOf(ctx) } : {};
      // A refusal names its code (an error body's, or a refused call's receipt error), issue 22 §3.
      const body = ctx.body as { code?: unknown; error?: { code?: unknown } } | null | undefined;
      const found = status >= 400 ? (body?.code ?? body?.error?.code) : undefined;
      const code = typeof found === 'string' ? { code: found } : {};
      logger.info({ method: ctx.method, path: ctx.path, status, ms, receipt, ...code, ...principal }, `${ctx.method} ${ctx.path} ${status} ${ms} ms${receipt ? ` ${receipt}` : ''}${code.code ? ` ${code.code}` : ''}`);
    }
  };
}
