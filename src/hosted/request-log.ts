/**
 * Structured request logs (gateway §7 "Operating"): one pino line per request once its answer
 * is sent, with method, path (never the query, which may carry a sign-in code), status,
 * duration and the principal's key prefix. Never a key, a body or an input.
 */
import type Koa from 'koa';
import type { Logger } from 'pino';
import type { Principal } from './principal.ts';

/** Koa middleware logging each request at `info` when its response finishes. */
export function requestLog(logger: Logger): Koa.Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    ctx.res.once('finish', () => {
      const principal = ctx.state.principal as Principal | undefined;
      logger.info(
        {
          method: ctx.method,
          path: ctx.path,
          status: ctx.res.statusCode,
          duration_ms: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
          principal: principal === undefined ? 'unresolved' : principal.kind === 'none' ? 'none' : principal.prefix,
        },
        'request',
      );
    });
    await next();
  };
}
