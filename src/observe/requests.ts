/**
 * One request, observed (issue 22 §1 to §3): its id (`x-request-id`, an incoming one kept when
 * well-formed), its server span continuing the caller's `traceparent`, the ids every log line of
 * the request carries (`log-context.ts`), and the request metrics by route template and status once it is answered.
 */
import { randomUUID } from 'node:crypto';
import { parseTraceParent } from '@opentelemetry/core';
import { ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE, ATTR_URL_PATH } from '@opentelemetry/semantic-conventions';
import type { Context, Middleware } from 'koa';
import { requestIds, type RequestIds } from './log-context.ts';
import { httpDuration, httpRequests, rateLimited } from './metrics.ts';
import { activeTraceId, incomingContext, inSpan, SpanKind } from './trace.ts';

/** A well-formed incoming request id: 1 to 128 letters, digits and `._:-`; anything else is replaced by a fresh UUID. */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** The route template of an answered request: the router's (`/v0/receipts/:id`), one of `fixed_paths`, else `unmatched`. */
function routeOf(ctx: Context, fixed_paths: ReadonlySet<string>): string {
  const matched = (ctx as Context & { _matchedRoute?: string | RegExp })._matchedRoute;
  if (typeof matched === 'string') return matched;
  return fixed_paths.has(ctx.path) ? ctx.path : 'unmatched';
}

/**
 * Koa middleware observing each request; mount it outermost (before the request log, so its
 * line carries the ids). `service` labels the metrics (`gateway`, `clearing`); `fixed_paths` are
 * paths served outside the router (`/mcp`, `/metrics`) kept as their own route.
 */
export function observeRequests(service: string, fixed_paths: readonly string[] = []): Middleware {
  const fixed = new Set(fixed_paths);
  return async (ctx, next) => {
    const incoming = ctx.get('x-request-id');
    const ids: RequestIds = { request_id: REQUEST_ID_PATTERN.test(incoming) ? incoming : randomUUID(), trace_id: null, receipt: null };
    ctx.set('x-request-id', ids.request_id);
    const started_ns = process.hrtime.bigint();
    let route = 'unmatched';
    let status = 500;
    try {
      await requestIds.run(ids, () =>
        inSpan(ctx.method, { kind: SpanKind.SERVER, parent: incomingContext(ctx.headers), attributes: { [ATTR_HTTP_REQUEST_METHOD]: ctx.method, [ATTR_URL_PATH]: ctx.path } }, async (span) => {
          ids.trace_id = activeTraceId() ?? parseTraceParent(ctx.get('traceparent'))?.traceId ?? null;
          try {
            await next();
          } finally {
            route = routeOf(ctx, fixed);
            // A handler that answers the response itself (the MCP transport) leaves the status on the raw response.
            status = ctx.respond === false ? ctx.res.statusCode : ctx.status;
            span?.updateName(`${ctx.method} ${route}`);
            span?.setAttributes({ [ATTR_HTTP_ROUTE]: route, [ATTR_HTTP_RESPONSE_STATUS_CODE]: status });
          }
        }),
      );
    } finally {
      const seconds = Number(process.hrtime.bigint() - started_ns) / 1e9;
      httpRequests.inc({ service, route, method: ctx.method, status: String(status) });
      httpDuration.observe({ service, route, method: ctx.method }, seconds);
      if (status === 429) rateLimited.inc({ route });
    }
  };
}
