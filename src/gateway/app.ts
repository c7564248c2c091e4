/**
 * The gateway's `/v0` API (gateway §5) as a Koa app: the generated operation table of
 * `openapi/gateway.yaml`, with these handlers, and the MCP server at `/mcp`. Errors are `{error,
 * code}` bodies.
 */
import Koa from 'koa';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { operationTable, schemaDocument, type OperationRequest } from '../../generated/gateway/server.ts';
import { formatMoney } from '../contracts/money.ts';
import { HttpError } from '../http/errors.ts';
import { errorBodies, mountOperations, type MountedHandler } from '../http/mount.ts';
import { mcpMiddleware } from '../mcp/server.ts';
import { approvalView, pendingApprovals } from './approvals.ts';
import { searchAgents } from './catalogue.ts';
import { ClearingRefused, ClearingUnreachable, type ClearingPort } from './clearing.ts';
import { closeExpiredApprovals, decideApproval } from './decisions.ts';
import type { CallResult, Gateway } from './lifecycle.ts';
import { budgetOf, budgetView, loadMandate } from './mandates.ts';
import type { Outbox } from './outbox.ts';
import type { Registry } from './registry.ts';
import { listReceiptTrees, readReceipt, treeOf } from './receipts.ts';

/** Options of `createGatewayApp`. */
export interface GatewayAppOptions {
  db: Knex;
  gateway: Gateway;
  registry: Registry;
  clearing: ClearingPort;
  outbox: Outbox;
  /** The clearing accounts `GET /v0/accounts` shows, by the name it shows them under. */
  accounts: () => Promise<Array<{ name: string; account: string }>>;
  currency: string;
  /** The mandate the MCP server at `/mcp` calls under. */
  mcp_mandate: string;
  logger: Logger;
}

/** Sets a call's HTTP answer: gateway §5's status and `{output, receipt}`, `{approval, receipt}` or `{error, code, receipt}`. */
async function answer(ctx: Koa.Context, gateway: Gateway, result: CallResult, currency: string): Promise<unknown> {
  ctx.status = result.http;
  const receipt = await gateway.tree(result.receipt);
  if (result.http === 200) return { output: result.output, receipt };
  if (result.http === 202) return { approval: approvalView(result.approval!, currency), receipt };
  return { error: result.error!.message, code: result.error!.code, receipt };
}

/** Builds the gateway's Koa app; `close()` ends its MCP sessions. */
export function createGatewayApp(options: GatewayAppOptions): { app: Koa; close(): Promise<void> } {
  const { db, gateway, registry, clearing, currency } = options;

  const handlers: Record<string, MountedHandler> = {
    health: async () => ({ ok: true }),

    'search-agents': async ({ query }: OperationRequest<'search-agents'>) => {
      const mandate = query.mandate ? await loadMandate(db, query.mandate) : null;
      if (query.mandate && !mandate) throw new HttpError(404, 'no_such_mandate', `there is no mandate ${query.mandate}`);
      return { agents: searchAgents(registry, gateway.stats, mandate, query) };
    },

    'read-agent': async ({ params }: OperationRequest<'read-agent'>) => {
      const ref = `${params.ns}/${params.name}`;
      let listed;
      try {
        listed = registry.resolve(ref);
      } catch (error) {
        throw new HttpError(422, 'invalid_request', (error as Error).message);
      }
      if (!listed) throw new HttpError(404, 'no_such_agent', `no listed agent matches ${ref}`);
      const stats = gateway.stats.get(listed.loaded.manifest.id) ?? { runs: 0, successes: 0 };
      return {
        manifest: listed.document,
        versions: registry.versionsOf(listed.loaded.manifest.id),
        measured: { runs: stats.runs, successes: stats.successes, success_rate: stats.runs === 0 ? null : stats.successes / stats.runs },
      };
    },

    call: async ({ body }: OperationRequest<'call'>, ctx) => {
      const result = await gateway.call(body);
      return answer(ctx, gateway, result, result.receipt.currency);
    },

    'list-approvals': async () => {
      await closeExpiredApprovals(db);
      return { approvals: (await pendingApprovals(db)).map((row) => approvalView(row, currency)) };
    },

    'decide-approval': async ({ params, body }: OperationRequest<'decide-approval'>, ctx) => {
      const decided = await decideApproval(db, gateway, params.id, body.decision ?? 'approve');
      if ('rejected' in decided) return { approval: approvalView(decided.rejected, currency) };
      return answer(ctx, gateway, decided.run, currency);
    },

    'list-receipts': async ({ query }: OperationRequest<'list-receipts'>) => {
      if (query.mandate && !(await loadMandate(db, query.mandate))) throw new HttpError(404, 'no_such_mandate', `there is no mandate ${query.mandate}`);
      return { receipts: await listReceiptTrees(db, { mandate: query.mandate, limit: query.limit ?? 50 }) };
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

    'list-accounts': async () => {
      const accounts = [];
      for (const { name, account } of await options.accounts()) {
        try {
          const figures = await clearing.readBalance(account);
          accounts.push({ account: name, balance: formatMoney(figures.balance), available: formatMoney(figures.available), reserved: formatMoney(figures.reserved) });
        } catch (error) {
          if (error instanceof ClearingUnreachable) throw new HttpError(503, 'clearing_unavailable', `${error.message}; the balances cannot be read right now`);
          // A payer the binding has no account for (a mandate issuer never given one) has no balance to show.
          if (error instanceof ClearingRefused && error.status === 404) continue;
          throw error;
        }
      }
      return { currency, accounts };
    },

    'list-settlements': async ({ query }: OperationRequest<'list-settlements'>) => ({ settlements: await options.outbox.list(query.status) }),
  };

  const app = new Koa();
  app.use(errorBodies((error, ctx) => options.logger.error({ err: error, path: ctx.path }, 'unexpected failure')));
  const mcp = mcpMiddleware({ db, gateway, registry, mandate: options.mcp_mandate, logger: options.logger });
  app.use(mcp);
  mountOperations(app, { table: operationTable, schemaDocument, handlers });
  return { app, close: mcp.close };
}
