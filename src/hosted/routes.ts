/**
 * The hosted gateway's handler table (gateway §7): the gateway's own operations, each asking the
 * principal first and scoped to it, and the hosted operations (sign-up, keys, mandates, me,
 * approvals, admin credit). Built over the gateway's default handlers, so the call lifecycle
 * stays the gateway's; this module only decides who may do what, and on what.
 */
import type Koa from 'koa';
import type { Knex } from 'knex';
import { declaredOnly, type OperationAnswer, type OperationId, type OperationRequest } from '../../generated/gateway/server.ts';
import { isRootMandateId } from '../contracts/mandate.ts';
import { mandateDocument } from '../contracts/schemas.ts';
import { HttpError } from '../http/errors.ts';
import type { MountedHandler } from '../http/mount.ts';
import { mandateRequired } from '../gateway/call-answer.ts';
import type { GatewayHandlers } from '../gateway/handlers.ts';
import { balancesPage, DEFAULT_ACCOUNTS_PAGE, readAccountBalance, type ListedAccount } from '../gateway/account-pages.ts';
import { APPROVAL_PAGE, approvalView, pendingApprovals, readApproval } from '../gateway/approvals.ts';
import type { ClearingPort } from '../gateway/clearing.ts';
import { closeExpiredApprovals } from '../gateway/decisions.ts';
import type { Gateway } from '../gateway/lifecycle.ts';
import { budgetOf, budgetView, loadMandate, storeMandate } from '../gateway/mandates.ts';
import { listReceiptTrees, RECEIPT_PAGE } from '../gateway/receipts.ts';
import { signCheckpoint } from '../signing/checkpoint.ts';
import type { Signer } from '../signing/signer.ts';
import { adminCredit, clearingFailure, mandateRefused, signUp, type AccountDeps } from './accounts.ts';
import type { Features } from './features.ts';
import type { GithubHandlers } from './github.ts';
import { endpointHandlers } from './endpoint-routes.ts';
import type { EndpointAccess } from './endpoints.ts';
import { grantApproval } from './grants.ts';
import { liveKeys, mintKey, MAX_LIVE_KEYS, keyView } from './keys.ts';
import { OPERATION_PRINCIPALS } from './policy.ts';
import { requirePrincipal, type Principal } from './principal.ts';
import { approvalScope, inScope, mandatesInScope, requireScope } from './scope.ts';
import { idempotentCall } from './idempotency.ts';
import { myAgents, type EarningsDeps } from './earnings.ts';
import { disableAccount, listAccounts, readLog, yankByOperator } from './moderation.ts';
import { publishVersion, yankByAuthor, type PublishDeps } from './publish.ts';
import { downloadFile, uploadFile, type FileRouteDeps } from './file-routes.ts';

/** What the hosted handlers need. */
export interface HostedRouteDeps extends AccountDeps {
  gateway: Gateway;
  clearing: ClearingPort;
  /** The gateway's signer: the journal checkpoint the admin reads is signed with it (issue 23 §3). */
  signer: Signer;
  /** The GitHub sign-in handlers (answering 503 when it is off). */
  github: GithubHandlers;
  /** Counts one sign-up from the request's address; throws 429 past the bound. */
  limitSignup: (ctx: Koa.Context) => Promise<void>;
  /** Publishing, yanks and moderation (`publish.ts`, `moderation.ts`). */
  publish: PublishDeps;
  /** The author's view (`earnings.ts`). */
  earnings: EarningsDeps;
  /** Authors' endpoints: the guarded client, the endpoint check, credentials. */
  endpoints: EndpointAccess;
  /** The file operations' link key, bounds and clock. */
  files: FileRouteDeps;
  /** What the operator switched on (`features.ts`), answered by `GET /v0/features`. */
  features: Features;
  /** The public catalogue (`src/hosted/catalog.ts`). */
  catalog: () => Promise<OperationAnswer<'read-catalog'>>;
  /** Runs one demo try (`src/hosted/demo.ts`). */
  demo: (ns: string, name: string, input: unknown, ctx: Koa.Context) => Promise<OperationAnswer<'try-demo'>>;
}

/** The name the platform's fee account (`platform:fees` at the binding) is listed under; a reserved handle, so no account can take it. */
const PLATFORM_ACCOUNT: ListedAccount = { name: 'holon', account: 'platform:fees' };

/**
 * What the operator's `GET /v0/accounts` lists after `cursor` (gateway §7 "see all balances"):
 * every account that holds money through the gateway, by its name at the binding: the signed-up
 * accounts (read `limit + 1` at a time, in code-point order like the page), the author of every
 * listed agent (the shipped agents' `holon-labs` included: a shipped agent's author has no hosted
 * account), and the platform's `holon`. The binding's `external:*` machinery, where credit comes
 * from, is not an account anyone holds and is not listed.
 */
async function operatorAccounts(deps: HostedRouteDeps, cursor: string | null, limit: number): Promise<ListedAccount[]> {
  const handles: string[] = await deps
    .db('hosted_accounts')
    .modify((q) => (cursor === null ? q : q.whereRaw('handle COLLATE "C" > ?', [cursor])))
    .orderByRaw('handle COLLATE "C"')
    .limit(limit + 1)
    .pluck('handle');
  const authors = [...deps.authorNamespaces()];
  return [PLATFORM_ACCOUNT, ...[...handles, ...authors].map((handle) => ({ name: handle, account: handle }))];
}

/** Throws 404 `no_such_approval` unless approval `id` is in the principal's scope (the gateway's one scoped read). */
async function requireApproval(db: Knex, principal: Principal, id: string): Promise<void> {
  if (!(await readApproval(db, id, await approvalScope(db, principal)))) throw new HttpError(404, 'no_such_approval', `there is no approval ${id}`);
}

/**
 * Puts a caller's mandate document in its namespace (gateway §7 "Extra endpoints"): id `name`
 * or `<handle>/name`, issuer forced, grantee `<handle>/…`, EUR, the platform's fx. Throws 422.
 */
export function hostedMandate(handle: string, body: Record<string, any>, fx: Record<string, string>): Record<string, any> {
  const refuse = (message: string) => new HttpError(422, 'invalid_mandate', message);
  if (typeof body.id !== 'string' || body.id === '') throw refuse('id is required: a name, put in your namespace');
  const parts = body.id.split('/');
  const [ns, name] = parts.length === 1 ? [handle, parts[0]] : parts;
  if (parts.length > 2 || ns !== handle) throw refuse(`id ${body.id} is outside your namespace ${handle}/: give a name, or ${handle}/<name>`);
  if (typeof body.grantee !== 'string' || !body.grantee.startsWith(`${handle}/`)) throw refuse(`grantee must be ${handle}/<name>`);
  const budget = body.budget ?? {};
  if (budget.currency !== undefined && budget.currency !== 'EUR') throw refuse('budget.currency must be EUR on this gateway');
  if (budget.fx !== undefined) throw refuse('budget.fx is set by the platform on hosted mandates: leave it out');
  return { ...body, id: `${handle}/${name}`, issuer: handle, budget: { ...budget, currency: 'EUR', fx } };
}

/** A hosted handler: the operation's validated request and the resolved principal in, an answer its operation declares out (anything else does not compile). */
type HostedHandler<K extends OperationId> = (request: OperationRequest<K>, ctx: Koa.Context, principal: Principal) => Promise<OperationAnswer<K>>;

/** Builds the hosted handler table over the gateway's defaults; every handler first asks the principal. */
export function hostedHandlers(deps: HostedRouteDeps, defaults: GatewayHandlers): Partial<Record<OperationId, MountedHandler>> {
  const { db, clearing } = deps;

  const own = {
    ...endpointHandlers(deps),

    'search-agents': async (request: OperationRequest<'search-agents'>, ctx, principal) => {
      if (request.query.mandate) await requireScope(db, principal, request.query.mandate, 'no_such_mandate', 'mandate', request.query.mandate);
      return defaults['search-agents'](request, ctx);
    },

    call: async (request: OperationRequest<'call'>, ctx, principal) => {
      // With an agent key, the mandate is the key's (§7 "Extra endpoints"); any other is out of its scope (404).
      const mandate = request.body.mandate ?? (principal.kind === 'agent' ? principal.mandate : null);
      if (mandate === null) throw mandateRequired();
      await requireScope(db, principal, mandate, 'no_such_mandate', 'mandate', mandate);
      return idempotentCall(deps, ctx, principal, { ...request.body, mandate });
    },

    'list-approvals': async ({ query }: OperationRequest<'list-approvals'>, _ctx, principal) => {
      await closeExpiredApprovals(db);
      const approvals = await pendingApprovals(db, await approvalScope(db, principal), query.limit ?? APPROVAL_PAGE.default);
      return { approvals: approvals.map((row) => approvalView(row, 'EUR')) };
    },

    'read-approval': async (request: OperationRequest<'read-approval'>, ctx, principal) => {
      await requireApproval(db, principal, request.params.id);
      return defaults['read-approval'](request, ctx);
    },

    'decide-approval': async (request: OperationRequest<'decide-approval'>, ctx, principal) => {
      await requireApproval(db, principal, request.params.id);
      if (request.body.run === false && request.body.decision !== 'reject') return { approval: approvalView(await grantApproval(db, request.params.id), 'EUR') };
      // Granting without running was answered above: what is left is the dev gateway's decision, which runs.
      return defaults['decide-approval']({ ...request, body: { decision: request.body.decision, run: true } }, ctx);
    },

    'list-receipts': async ({ query }: OperationRequest<'list-receipts'>, _ctx, principal) => {
      if (query.mandate) await requireScope(db, principal, query.mandate, 'no_such_mandate', 'mandate', query.mandate);
      const mandates = query.mandate ? [query.mandate] : await mandatesInScope(db, principal);
      const page = await listReceiptTrees(db, { mandates, limit: query.limit ?? RECEIPT_PAGE.default, cursor: query.cursor });
      return { ...page, receipts: await deps.gateway.signed(page.receipts) };
    },

    'read-receipt': async (request: OperationRequest<'read-receipt'>, ctx, principal) => {
      const row = await db('gateway_receipts').where({ id: request.params.id }).first('root_mandate');
      if (!row || !(await inScope(db, principal, row.root_mandate))) throw new HttpError(404, 'no_such_receipt', `there is no receipt ${request.params.id}`);
      return defaults['read-receipt'](request, ctx);
    },

    'read-mandate': async (request: OperationRequest<'read-mandate'>, ctx, principal) => {
      const id = `${request.params.issuer}/${request.params.name}`;
      await requireScope(db, principal, id, 'no_such_mandate', 'mandate', id);
      return defaults['read-mandate'](request, ctx);
    },

    'list-accounts': async ({ query }: OperationRequest<'list-accounts'>, _ctx, principal) => {
      const cursor = query.cursor ?? null;
      const limit = query.limit ?? DEFAULT_ACCOUNTS_PAGE;
      // A human sees its own account; the operator every account that holds money.
      const listed = principal.kind === 'human' ? [{ name: principal.account, account: principal.account }] : await operatorAccounts(deps, cursor, limit);
      return { currency: 'EUR', ...(await balancesPage(clearing, listed, cursor, limit)) };
    },

    signup: async ({ body }: OperationRequest<'signup'>, ctx) => {
      await deps.limitSignup(ctx);
      const created = await signUp(deps, body);
      ctx.status = 201;
      return created;
    },

    'read-me': async (_request, _ctx, principal) => {
      if (principal.kind === 'agent') {
        const stored = (await loadMandate(db, principal.mandate))!;
        const figures = await budgetOf(db, stored.id, stored.mandate.budget.total_micros);
        return { handle: principal.account, principal: 'agent', mandate: stored.id, budget: budgetView(stored.mandate.budget.currency, figures) };
      }
      if (principal.kind !== 'human') throw new Error('read-me is open to human and agent keys only');
      const account = await db('hosted_accounts').where({ handle: principal.account }).first();
      const balance = await readAccountBalance(clearing, { name: principal.account, account: principal.account });
      return {
        handle: principal.account,
        principal: 'human',
        ...(account.email ? { email: account.email } : {}),
        ...(balance ? { balance } : {}),
        mandates: await mandatesInScope(db, principal),
        keys: (await liveKeys(db, principal.account)).map(({ account: _account, ...key }) => key),
      };
    },

    'list-mandates': async (_request, _ctx, principal) => {
      const mandates = [];
      for (const id of await mandatesInScope(db, principal)) {
        const stored = (await loadMandate(db, id))!;
        mandates.push({ mandate: mandateDocument(stored.document), budget: budgetView('EUR', await budgetOf(db, id, stored.mandate.budget.total_micros)) });
      }
      return { mandates };
    },

    'create-mandate': async ({ body }: OperationRequest<'create-mandate'>, ctx, principal) => {
      const account = (principal as Extract<Principal, { kind: 'human' }>).account;
      const document = hostedMandate(account, body as Record<string, any>, deps.fx);
      const stored = await db.transaction(async (trx) => {
        if (await trx('gateway_mandates').where({ id: document.id }).first('id')) throw new HttpError(409, 'mandate_exists', `the mandate ${document.id} exists: choose another name`);
        return storeMandate(trx, document, { parent: null, payer: account }).catch(mandateRefused);
      });
      ctx.status = 201;
      return { mandate: mandateDocument(stored.document), budget: budgetView('EUR', await budgetOf(db, stored.id, stored.mandate.budget.total_micros)) };
    },

    'create-key': async ({ body }: OperationRequest<'create-key'>, ctx, principal) => {
      const account = (principal as Extract<Principal, { kind: 'human' }>).account;
      await requireScope(db, principal, body.mandate, 'no_such_mandate', 'mandate', body.mandate);
      if (!isRootMandateId(body.mandate)) throw new HttpError(404, 'no_such_mandate', `there is no mandate ${body.mandate}: check its id (issuer/name) against the mandates you were given`);
      const key = await db.transaction(async (trx) => {
        await trx('hosted_accounts').where({ handle: account }).forUpdate().first('handle');
        if ((await liveKeys(trx, account)).length >= MAX_LIVE_KEYS) throw new HttpError(422, 'too_many_keys', `an account holds at most ${MAX_LIVE_KEYS} live keys: revoke one first`);
        return mintKey(trx, { kind: 'agent', account, mandate: body.mandate, ask_in_client: body.ask_in_client ?? false, ttl_ms: null });
      });
      ctx.status = 201;
      return key;
    },

    'revoke-key': async ({ params }: OperationRequest<'revoke-key'>, _ctx, principal) => {
      const account = (principal as Extract<Principal, { kind: 'human' }>).account;
      const [row] = await db('hosted_keys').where({ prefix: params.prefix, account }).update({ revoked_at: db.raw('coalesce(revoked_at, now())') }).returning('*');
      if (!row) throw new HttpError(404, 'no_such_key', `there is no key ${params.prefix}`);
      const { account: _account, ...view } = keyView(row);
      return view;
    },

    'publish-agent': async ({ body }: OperationRequest<'publish-agent'>, ctx, principal) => {
      const published = await publishVersion(deps.publish, (principal as Extract<Principal, { kind: 'human' }>).account, body);
      ctx.status = 201;
      return published;
    },

    'yank-agent': async ({ params }: OperationRequest<'yank-agent'>, _ctx, principal) => {
      const account = (principal as Extract<Principal, { kind: 'human' }>).account;
      // Anyone else's version answers as if it did not exist (gateway §7 "Principals").
      if (params.ns !== account) throw new HttpError(404, 'no_such_agent', `there is no published version ${params.ns}/${params.name}@${params.version}`);
      return yankByAuthor(deps.publish, account, `${params.ns}/${params.name}`, params.version);
    },

    'my-agents': async (_request, _ctx, principal) => myAgents(deps.earnings, (principal as Extract<Principal, { kind: 'human' }>).account),

    'admin-list-accounts': async ({ query }: OperationRequest<'admin-list-accounts'>) => ({ accounts: await listAccounts(db, query.q, query.limit ?? 50) }),

    'admin-disable-account': async ({ params, body }: OperationRequest<'admin-disable-account'>) =>
      disableAccount(deps.publish, params.handle, body.reason, body.yank_agents ?? false),

    'admin-yank-agent': async ({ params, body }: OperationRequest<'admin-yank-agent'>) => yankByOperator(deps.publish, `${params.ns}/${params.name}`, params.version, body.reason),

    // Signed again with the gateway's key, whichever binding answered (its own key when it is not in this process), so the admin verifies it with the gateway's JWKS.
    'read-journal-checkpoint': async () => {
      const { size, head, signed_at } = await clearing.readCheckpoint().catch(clearingFailure);
      return signCheckpoint(deps.signer, { size, head }, signed_at);
    },

    'admin-log': async ({ query }: OperationRequest<'admin-log'>) => ({ entries: await readLog(db, query.limit ?? 100, query.before) }),
    'upload-file': async (_request, ctx, principal) => uploadFile(deps.files, ctx, (principal as Extract<Principal, { kind: 'human' | 'agent' }>).account),

    'download-file': async (request: OperationRequest<'download-file'>, ctx) => downloadFile(deps.files, ctx, request),
    'read-catalog': async () => deps.catalog(),
    'read-features': async () => deps.features,

    'try-demo': async ({ params, body }: OperationRequest<'try-demo'>, ctx) => deps.demo(params.ns, params.name, body, ctx),

    'admin-credit': async ({ body }: OperationRequest<'admin-credit'>) => {
      const credited = await adminCredit(deps, body.account, body.amount);
      const balance = await readAccountBalance(clearing, { name: body.account, account: body.account }).catch(clearingFailure);
      return { ...credited, balance: balance?.balance ?? credited.amount };
    },
  } satisfies { [K in OperationId]?: HostedHandler<K> };


  const fallbacks: Partial<Record<string, MountedHandler>> = { ...defaults, ...deps.github };
  const owned: Partial<Record<string, (request: any, ctx: Koa.Context, principal: Principal) => Promise<unknown>>> = declaredOnly(own);
  const table: Partial<Record<OperationId, MountedHandler>> = {};
  for (const [operation, kinds] of Object.entries(OPERATION_PRINCIPALS)) {
    const handler = owned[operation];
    const fallback = fallbacks[operation];
    if (!handler && !fallback) continue;
    table[operation as OperationId] = async (request, ctx) => {
      const principal = requirePrincipal(ctx, kinds);
      return handler ? handler(request, ctx, principal) : fallback!(request, ctx);
    };
  }
  return table;
}
