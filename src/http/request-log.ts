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
 * outermost). With `principalOf`, the line also names who asked (`principal`: a key prefix,
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
      logger.info({ method: ctx.method, path: ctx.path, status, ms, receipt, ...principal }, `${ctx.method} ${ctx.path} ${status} ${ms} ms${receipt ? ` ${receipt}` : ''}`);
    }
  };
}
