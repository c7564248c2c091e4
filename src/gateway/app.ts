/**
 * The gateway's `/v0` API (gateway §5) as a Koa app: the generated operation table of
 * `openapi/gateway.yaml` with these handlers, and the document itself at `/openapi.json` with its
 * reference page at `/docs`, all behind the DNS-rebinding gate (`src/http/host-gate.ts`). Errors
 * are `{error, code}` bodies. What a composition adds (the MCP server at `/mcp`, the hosted
 * layer) comes in as extensions (`extension.ts`): the gateway imports nothing built above it.
 */
import Koa from 'koa';
import type { Logger } from 'pino';
import { operationTable, schemaDocument } from '../../generated/gateway/server.ts';
import gatewayDocument from '../../generated/gateway/openapi.json' with { type: 'json' };
import { mandateSchema, manifestSchema } from '../contracts/schemas.ts';
import { servedDocuments } from '../http/docs.ts';
import { hostGate, type HostGateOptions } from '../http/host-gate.ts';
import { requestLog } from '../http/request-log.ts';
import { errorBodies, mountOperations } from '../http/mount.ts';
import { METRICS_PATH, metricsRoute, type MetricsAccess } from '../observe/endpoint.ts';
import { observeRequests } from '../observe/requests.ts';
import { ApprovalAnswers } from './approval-answers.ts';
import type { GatewayAppExtension } from './extension.ts';
import { gatewayHandlers, type DecisionReply, type GatewayHandlerDeps } from './handlers.ts';

/** Options of `createGatewayApp`. */
export interface GatewayAppOptions extends GatewayHandlerDeps {
  /** The DNS-rebinding gate of every path but `/healthz`: the names this gateway answers to, and whether only loopback peers are served. */
  access: Pick<HostGateOptions, 'hosts' | 'loopback_peers_only'>;
  logger: Logger;
  /** What the compositions above the gateway add, in order (`extension.ts`): the hosted layer (gateway §7) when there is one, then the MCP server. */
  extensions: readonly GatewayAppExtension[];
  /** Who may read `GET /metrics` on this port (`observe/endpoint.ts`): the admin key's holders, or loopback peers only. */
  metrics: MetricsAccess;
}

/** Builds the gateway's Koa app. */
export function createGatewayApp(options: GatewayAppOptions): Koa {
  const handlers = gatewayHandlers(options, new ApprovalAnswers<DecisionReply>(options.db));
  const { extensions } = options;
  const app = new Koa();
  // Outermost: the request's id and span wrap everything, its log line included (issue 22 §3).
  app.use(observeRequests('gateway', [METRICS_PATH, ...extensions.flatMap((extension) => extension.rpc_paths ?? [])]));
  app.use(requestLog(options.logger, extensions.find((extension) => extension.log_principal)?.log_principal));
  app.use(
    errorBodies('an unexpected failure inside the gateway; the details are in its log', (error, ctx) => {
      options.logger.error({ err: error, path: ctx.path }, 'unexpected failure');
      for (const extension of extensions) extension.onUnexpected?.(error);
    }),
  );
  const rpc_paths = extensions.flatMap((extension) => extension.rpc_paths ?? []);
  app.use(hostGate({ ...options.access, open: ['/healthz'], rpc_paths, cross_origin: extensions.find((extension) => extension.cross_origin)?.cross_origin }));
  // Before every extension's middleware: a scrape is not a caller, so no rate limit or principal applies (issue 22 §1).
  app.use(metricsRoute(options.metrics));
  // The schema files the document's description links to, as `openapi/` holds them (docs/contributors.md "Contract first").
  app.use(servedDocuments(gatewayDocument, 'Holon gateway', { '/manifest.schema.json': manifestSchema, '/mandate.schema.json': mandateSchema }));
  for (const middleware of extensions.flatMap((extension) => extension.middleware ?? [])) app.use(middleware);
  const table = extensions.find((extension) => extension.handlers)?.handlers?.(handlers) ?? handlers;
  mountOperations(app, { server: 'gateway', table: operationTable, schemaDocument, handlers: table });
  return app;
}
