/**
 * The gateway's `/v0` API (gateway §5) as a Koa app: the generated operation table of
 * `openapi/gateway.yaml`, with these handlers, the MCP server at `/mcp`, and the document itself
 * at `/openapi.json` with its reference page at `/docs`, all behind the DNS-rebinding gate
 * (`src/http/host-gate.ts`). Errors are `{error, code}` bodies.
 */
import Koa from 'koa';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { operationTable, schemaDocument, type OperationRequest } from '../../generated/gateway/server.ts';
import gatewayDocument from '../../generated/gateway/openapi.json' with { type: 'json' };
import { mandateSchema, manifestSchema } from '../contracts/schemas.ts';
import { HttpError, invalidRequest } from '../http/errors.ts';
import { servedDocuments } from '../http/docs.ts';
import { hostGate, type HostGateOptions } from '../http/host-gate.ts';
import { requestLog } from '../http/request-log.ts';
import { errorBodies, mountOperations, type MountedHandler } from '../http/mount.ts';
import { mcpMiddleware, type McpOptions } from '../mcp/server.ts';
import { ApprovalAnswers } from './approval-answers.ts';
import { balancesPage, DEFAULT_ACCOUNTS_PAGE, type ListedAccount } from './account-pages.ts';
import { APPROVAL_PAGE, approvalOutcome, approvalView, pendingApprovals, readApproval } from './approvals.ts';
import { searchAgents } from './catalogue.ts';
import type { ClearingPort } from './clearing.ts';
import { closeExpiredApprovals, decideApproval } from './decisions.ts';
import type { CallResult, Gateway } from './lifecycle.ts';
import { budgetOf, budgetView, loadMandate } from './mandates.ts';
import type { Outbox } from './outbox.ts';
import type { Registry } from './registry.ts';
import { listReceiptTrees, readReceipt, RECEIPT_PAGE, treeOf } from './receipts.ts';

/** Options of `createGatewayApp`. */
export interface GatewayAppOptions {
  db: Knex;
  gateway: Gateway;
  registry: Registry;
  clearing: ClearingPort;
  outbox: Outbox;
  /** The clearing accounts `GET /v0/accounts` shows, by the name it shows them under. */
  accounts: () => Promise<ListedAccount[]>;
  currency: string;
  /** The mandate the MCP server at `/mcp` calls under. */
  mcp_mandate: string;
  /** The DNS-rebinding gate of `/v0` and `/mcp`: the names this gateway answers to, and whether only loopback peers are served. */
  access: Pick<HostGateOptions, 'hosts' | 'loopback_peers_only'>;
  logger: Logger;
  /** What a composition above the gateway adds (the hosted gateway, gateway §7); absent: the dev gateway. */
  extension?: GatewayAppExtension;
}

/**
 * Hooks a composition passes in, so the gateway never imports what is built above it:
 * middleware run before `/mcp` and the routes (e.g. resolving the principal), the handler table
 * built over the gateway's own (e.g. scoping each operation), and how `/mcp` binds a session.
 */
export interface GatewayAppExtension {
  middleware: Koa.Middleware[];
  handlers(defaults: Record<string, MountedHandler>): Record<string, MountedHandler>;
  mcp_session?: McpOptions['session'];
  /** Called after an unexpected failure (answered 500) is logged, e.g. to stop the process when the database failed. */
  onUnexpected?: (error: unknown) => void;
  /**
   * Restart recovery of what the composition keeps per call (issue 12 §4): called at start-up
   * (`unowned`: also what no process claimed) and at every heartbeat with the dead processes' ids.
   */
  recover?: (dead: readonly number[], unowned: boolean) => Promise<unknown>;
  /** Names the principal of a request in its log line (a key prefix, never a key). */
  log_principal?: (ctx: Koa.Context) => string;
  /** Web origins the DNS-rebinding gate lets through on some paths (`HostGateOptions.cross_origin`). */
  cross_origin?: HostGateOptions['cross_origin'];
}

/**
 * 422 `invalid_request` for a call that names no mandate: `mandate` is optional in the document
 * only because a hosted agent key's calls run under its mandate (gateway §7 "Extra endpoints");
 * everywhere else there is no key to take it from.
 */
export const mandateRequired = (): HttpError =>
  invalidRequest('invalid request: body.mandate is required: name the mandate the call runs under (only an agent key may leave it out, its calls run under its mandate)');

/** Sets a call's HTTP answer: gateway §5's status and `{output, receipt}`, `{approval, receipt}` or `{error, code, receipt}`; `Retry-After` and `Server-Timing` when the result has them. */
export async function answer(ctx: Koa.Context, gateway: Gateway, result: CallResult, currency: string): Promise<unknown> {
  ctx.status = result.http;
  if (result.retry_after_s !== undefined) ctx.set('Retry-After', String(result.retry_after_s));
  if (result.server_timing !== undefined) ctx.set('Server-Timing', result.server_timing);
  const receipt = await gateway.tree(result.receipt);
  if (result.http === 200) return { output: result.output, receipt };
  if (result.http === 202) return { approval: approvalView(result.approval!, currency), receipt };
  return { error: result.error!.message, code: result.error!.code, receipt };
}

/** Builds the gateway's Koa app; `close()` ends its MCP sessions. */
export function createGatewayApp(options: GatewayAppOptions): { app: Koa; close(): Promise<void> } {
  const { db, gateway, registry, clearing, currency } = options;
  const answers = new ApprovalAnswers();

  const handlers: Record<string, MountedHandler> = {
    health: async () => ({ ok: true }),

    'search-agents': async ({ query }: OperationRequest<'search-agents'>) => {
      const mandate = query.mandate ? await loadMandate(db, query.mandate) : null;
      if (query.mandate && !mandate) throw new HttpError(404, 'no_such_mandate', `there is no mandate ${query.mandate}`);
      return { agents: searchAgents(registry, await gateway.measured(), mandate, query) };
    },

    'read-agent': async ({ params }: OperationRequest<'read-agent'>) => {
      const ref = `${params.ns}/${params.name}`;
      let listed;
      try {
        listed = registry.resolve(ref);
      } catch (error) {
        throw new HttpError(422, 'invalid_request', (error as Error).message);
      }
      if (!listed) throw new HttpError(404, 'no_such_agent', registry.missing(ref));
      const stats = (await gateway.measured([listed.loaded.manifest.id])).get(listed.loaded.manifest.id) ?? { runs: 0, successes: 0 };
      return {
        manifest: listed.document,
        proprietary: listed.loaded.manifest.license === 'proprietary',
        published: listed.published,
        versions: registry.versionsOf(listed.loaded.manifest.id),
        measured: { runs: stats.runs, successes: stats.successes, success_rate: stats.runs === 0 ? null : stats.successes / stats.runs },
      };
    },

    call: async ({ body }: OperationRequest<'call'>, ctx) => {
      if (body.mandate === undefined) throw mandateRequired();
      const result = await gateway.call({ ...body, mandate: body.mandate });
      return answer(ctx, gateway, result, result.receipt.currency);
    },

    'list-approvals': async ({ query }: OperationRequest<'list-approvals'>) => {
      await closeExpiredApprovals(db);
      return { approvals: (await pendingApprovals(db, 'all', query.limit ?? APPROVAL_PAGE.default)).map((row) => approvalView(row, currency)) };
    },

    'read-approval': async ({ params, query }: OperationRequest<'read-approval'>) => {
      await closeExpiredApprovals(db);
      const deadline_ms = Date.now() + (query.wait_s ?? 0) * 1000;
      for (;;) {
        const row = await readApproval(db, params.id, 'all');
        if (!row) throw new HttpError(404, 'no_such_approval', `there is no approval ${params.id}`);
        const result = answers.get(row.id);
        const outcome = await approvalOutcome(db, row);
        // An approved call counts as decided for the waiter once it has ended (its answer published, or its receipt closed).
        const waiting = row.status === 'pending' || (row.status === 'approved' && !result && !outcome);
        if (!waiting || Date.now() >= deadline_ms) {
          return { approval: approvalView(row, currency), ...(result && row.status === 'approved' ? { result: result.body } : {}), ...(outcome ? { outcome } : {}) };
        }
        await answers.wait(row.id, deadline_ms - Date.now());
      }
    },

    'decide-approval': async ({ params, body }: OperationRequest<'decide-approval'>, ctx) => {
      if (body.run === false) throw new HttpError(422, 'invalid_request', 'invalid request: {"run": false} (grant without running) is offered by the hosted gateway only');
      const decided = await decideApproval(db, gateway, params.id, body.decision ?? 'approve');
      const reply = 'rejected' in decided ? { approval: approvalView(decided.rejected, currency) } : await answer(ctx, gateway, decided.run, currency);
      answers.publish(params.id, reply);
      return reply;
    },

    'list-receipts': async ({ query }: OperationRequest<'list-receipts'>) => {
      if (query.mandate && !(await loadMandate(db, query.mandate))) throw new HttpError(404, 'no_such_mandate', `there is no mandate ${query.mandate}`);
      return listReceiptTrees(db, { mandate: query.mandate, limit: query.limit ?? RECEIPT_PAGE.default, cursor: query.cursor });
    },

    'read-receipt': async ({ params }: OperationRequest<'read-receipt'>) => {
      const receipt = await readReceipt(db, params.id);
      if (!receipt) throw new HttpError(404, 'no_such_receipt', `there is no receipt ${params.id}`);
      return treeOf(db, receipt);
    },

    'read-mandate': async ({ params }: OperationRequest<'read-mandate'>) => {
      const stored = await loadMandate(db, `${params.issuer}/${params.name}`);
      if (!stored) throw new HttpError(404, 'no_such_mandate', `there is no mandate ${params.issuer}/${params.name}`);
      const figures = await budgetOf(db, stored.id, stored.mandate.budget.total_micros);
      return { mandate: stored.document, budget: budgetView(stored.mandate.budget.currency, figures) };
    },

    'list-accounts': async ({ query }: OperationRequest<'list-accounts'>) => ({
      currency,
      ...(await balancesPage(clearing, await options.accounts(), query.cursor ?? null, query.limit ?? DEFAULT_ACCOUNTS_PAGE)),
    }),

    'list-settlements': async ({ query }: OperationRequest<'list-settlements'>) => ({ settlements: await options.outbox.list(query.status) }),
  };

  const app = new Koa();
  app.use(requestLog(options.logger, options.extension?.log_principal));
  app.use(
    errorBodies('an unexpected failure inside the gateway; the details are in its log', (error, ctx) => {
      options.logger.error({ err: error, path: ctx.path }, 'unexpected failure');
      options.extension?.onUnexpected?.(error);
    }),
  );
  app.use(hostGate({ ...options.access, open: ['/healthz'], rpc_paths: ['/mcp'], cross_origin: options.extension?.cross_origin }));
  // The schema files the document's description links to, as `openapi/` holds them (README "Contract first").
  app.use(servedDocuments(gatewayDocument, 'Holon gateway', { '/manifest.schema.json': manifestSchema, '/mandate.schema.json': mandateSchema }));
  for (const middleware of options.extension?.middleware ?? []) app.use(middleware);
  const mcp = mcpMiddleware({ db, gateway, registry, mandate: options.mcp_mandate, logger: options.logger, session: options.extension?.mcp_session });
  app.use(mcp);
  mountOperations(app, { table: operationTable, schemaDocument, handlers: options.extension ? options.extension.handlers(handlers) : handlers });
  return { app, close: mcp.close };
}
