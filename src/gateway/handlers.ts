/**
 * The handlers of the gateway's own `/v0` operations (gateway §5), each typed by its operation's
 * generated request and answers (`generated/gateway/server.ts`), so a field the document lacks
 * does not compile. `app.ts` mounts them; a composition above the gateway (the hosted layer)
 * wraps them through `GatewayAppExtension.handlers`.
 */
import type { Knex } from 'knex';
import { declaredOnly, type Handler, type Handlers, type OperationRequest } from '../../generated/gateway/server.ts';
import type { components } from '../../generated/gateway/types.ts';
import { mandateDocument, manifestDocument } from '../contracts/schemas.ts';
import { HttpError } from '../http/errors.ts';
import type { ApprovalAnswers } from './approval-answers.ts';
import { balancesPage, DEFAULT_ACCOUNTS_PAGE, type ListedAccount } from './account-pages.ts';
import { APPROVAL_PAGE, approvalOutcome, approvalView, pendingApprovals, readApproval } from './approvals.ts';
import { answer, mandateRequired, type CallAnswer } from './call-answer.ts';
import { searchAgents } from './catalogue.ts';
import type { ClearingPort } from './clearing.ts';
import { closeExpiredApprovals, decideApproval } from './decisions.ts';
import type { Gateway } from './lifecycle.ts';
import { budgetOf, budgetView, loadMandate } from './mandates.ts';
import type { Outbox } from './outbox.ts';
import type { Registry } from './registry.ts';
import { listReceiptTrees, readReceipt, RECEIPT_PAGE } from './receipts.ts';
import { signMandate } from './signatures.ts';
import type { Signer } from '../signing/signer.ts';

/** What the gateway's handlers read and write through. */
export interface GatewayHandlerDeps {
  db: Knex;
  gateway: Gateway;
  registry: Registry;
  clearing: ClearingPort;
  outbox: Outbox;
  /** The clearing accounts `GET /v0/accounts` shows, by the name it shows them under. */
  accounts: () => Promise<ListedAccount[]>;
  /** The gateway's currency (ISO 4217); every amount it answers is in its micro-units. */
  currency: string;
  /** Signs the mandates and receipts it answers, and lists the keys at `/.well-known/jwks.json` (issue 23). */
  signer: Signer;
  /** Why this process cannot serve writes now, or null when it can: `/healthz` answers 503 `database_unavailable` with it (issue 27 §2). Absent: always ready. */
  unready?: () => Promise<string | null>;
}

/** What `POST /v0/approvals/{id}` answers the approver: the approved call's answer, or the rejected approval. */
export type DecisionReply = CallAnswer | components['schemas']['ApprovalRejected'];

/** The dev gateway's handlers, each typed by its operation's generated request and answers (a field the document lacks does not compile). */
export type GatewayHandlers = { [K in keyof ReturnType<typeof gatewayHandlers>]: Handler<K> };

/** The handlers of the gateway's own operations (gateway §5); a composition above it wraps or adds to them. */
export function gatewayHandlers(options: GatewayHandlerDeps, answers: ApprovalAnswers<DecisionReply>) {
  const { db, gateway, registry, clearing, currency } = options;
  const handlers = {
    health: async () => {
      const reason = await options.unready?.();
      if (reason) throw new HttpError(503, 'database_unavailable', `this process cannot write now: ${reason}; send requests to another process until this answers 200`);
      return { ok: true as const };
    },

    'read-jwks': async () => options.signer.jwks(),

    'search-agents': async ({ query }: OperationRequest<'search-agents'>) => {
      const mandate = query.mandate ? await loadMandate(db, query.mandate) : null;
      if (query.mandate && !mandate) throw new HttpError(404, 'no_such_mandate', `there is no mandate ${query.mandate}: check its id (issuer/name) against the mandates you were given`);
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
        manifest: manifestDocument(listed.document),
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
        const result = await answers.get(row.id);
        const outcome = await approvalOutcome(db, row);
        // An approved call counts as decided for the waiter once it has ended (its answer published, or its receipt closed).
        const waiting = row.status === 'pending' || (row.status === 'approved' && !result && !outcome);
        if (!waiting || Date.now() >= deadline_ms) {
          // Kept only for an approved call: its answer has a receipt and waits for nothing.
          const approved = result && row.status === 'approved' && 'receipt' in result.body && !('approval' in result.body) ? result.body : null;
          return { approval: approvalView(row, currency), ...(approved ? { result: approved } : {}), ...(outcome ? { outcome } : {}) };
        }
        await answers.wait(row.id, deadline_ms - Date.now());
      }
    },

    'decide-approval': async ({ params, body }: OperationRequest<'decide-approval'>, ctx) => {
      if (body.run === false) throw new HttpError(422, 'invalid_request', 'invalid request: {"run": false} (grant without running) is offered by the hosted gateway only');
      const decided = await decideApproval(db, gateway, params.id, body.decision ?? 'approve');
      const reply: DecisionReply = 'rejected' in decided ? { approval: approvalView(decided.rejected, currency) } : await answer(ctx, gateway, decided.run, currency);
      await answers.publish(params.id, reply);
      return reply;
    },

    'list-receipts': async ({ query }: OperationRequest<'list-receipts'>) => {
      if (query.mandate && !(await loadMandate(db, query.mandate))) throw new HttpError(404, 'no_such_mandate', `there is no mandate ${query.mandate}: check its id (issuer/name) against the mandates you were given`);
      const page = await listReceiptTrees(db, { mandate: query.mandate, limit: query.limit ?? RECEIPT_PAGE.default, cursor: query.cursor });
      return { ...page, receipts: await gateway.signed(page.receipts) };
    },

    'read-receipt': async ({ params }: OperationRequest<'read-receipt'>) => {
      const receipt = await readReceipt(db, params.id);
      if (!receipt) throw new HttpError(404, 'no_such_receipt', `there is no receipt ${params.id}`);
      return gateway.tree(receipt);
    },

    'read-mandate': async ({ params }: OperationRequest<'read-mandate'>) => {
      const stored = await loadMandate(db, `${params.issuer}/${params.name}`);
      if (!stored) throw new HttpError(404, 'no_such_mandate', `there is no mandate ${params.issuer}/${params.name}: check its id (issuer/name) against the mandates you were given`);
      const figures = await budgetOf(db, stored.id, stored.mandate.budget.total_micros);
      return { mandate: mandateDocument(stored.document), budget: budgetView(stored.mandate.budget.currency, figures), jws: await signMandate(options.signer, stored.document) };
    },

    'list-accounts': async ({ query }: OperationRequest<'list-accounts'>) => ({
      currency,
      ...(await balancesPage(clearing, await options.accounts(), query.cursor ?? null, query.limit ?? DEFAULT_ACCOUNTS_PAGE)),
    }),

    'list-settlements': async ({ query }: OperationRequest<'list-settlements'>) => ({ settlements: await options.outbox.list(query.status) }),
  } satisfies Handlers;
  return declaredOnly(handlers);
}
