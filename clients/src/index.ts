/**
 * `@holon/client`: a typed client for the Holon gateway's `/v0` API (gateway §5), generated from
 * `openapi/gateway.yaml`. `createHolonClient` gives one method per operation that resolves with
 * the 2xx body and throws `HolonError` (any other answer, with its `{error, code}` body) or
 * `HolonUnreachable` (no answer). The generated functions and every schema type are exported too.
 */
import { createClient, createConfig, type Client } from '../../generated/gateway/client/client/index.js';
import * as sdk from '../../generated/gateway/client/sdk.gen.js';
import type {
  ApprovalRejected,
  CallPending,
  CallRequest,
  CallSucceeded,
  DraftRequest,
  CreateKeyData,
  ListReceiptsData,
  ListSettlementsData,
  Manifest,
  SearchAgentsData,
} from '../../generated/gateway/client/types.gen.js';
import { clientConfig, toHolonError, type ClientOptions } from './errors.js';

export * from '../../generated/gateway/client/index.js';
/** The generated default client (base URL from the document's `servers`); `createHolonClient` is the configured one. */
export { client } from '../../generated/gateway/client/client.gen.js';
export { createClient, createConfig, type Client } from '../../generated/gateway/client/client/index.js';
export { HolonError, HolonUnreachable, type ClientOptions, type HolonErrorBody } from './errors.js';
export { verifyCheckpoint, verifyMandate, verifyReceipt, VerificationError, CHECKPOINT_TYP, MANDATE_TYP, RECEIPT_TYP, type CheckpointClaims, type HolonJwk, type MandateClaims, type ReceiptClaims, type SignedReceiptTree, type VerificationCode, type VerifyOptions } from './verify.js';

/** What `call` resolves with: the output (200) or, when the mandate sends it to a human, the pending approval (202). Narrow with `'approval' in answer`. */
export type CallAnswer = CallSucceeded | CallPending;

/** What `decideApproval` resolves with: the approved call's output, or the rejected approval. */
export type DecisionAnswer = CallSucceeded | ApprovalRejected;

/** Resolves with the body of a generated call made with `throwOnError`. */
async function data<T>(pending: Promise<{ data: T }>): Promise<T> {
  return (await pending).data;
}

/** Splits `ns/name` (or `issuer/name`) into its two path parts; throws a `TypeError` otherwise. */
function pair(id: string, what: string): [string, string] {
  const parts = id.split('/');
  if (parts.length !== 2 || !parts[0] || !parts[1]) throw new TypeError(`${what} ${JSON.stringify(id)} must be written ns/name`);
  return [parts[0], parts[1]];
}

/**
 * Creates a client for the gateway at `options.baseUrl` (e.g. `http://127.0.0.1:4000`), sending
 * `options.key` as a bearer key. Throws a `TypeError` when the URL has no http(s) scheme.
 */
export function createHolonClient(options: ClientOptions) {
  const client: Client = createClient(createConfig(clientConfig(options)));
  client.interceptors.error.use(toHolonError);
  const opts = { client, throwOnError: true as const };
  return {
    /** The configured generated client, for `sdk` functions: `listReceipts({ client })`. */
    client,
    /** `GET /healthz`. */
    health: () => data(sdk.health(opts)),
    /** `GET /v0/agents`: agents matching words, a capability, or what a mandate allows. */
    searchAgents: (query: SearchAgentsData['query'] = {}) => data(sdk.searchAgents({ ...opts, query })),
    /** `GET /v0/agents/{ns}/{name}`: the manifest, versions and measured success of `ns/name[@range]`. */
    readAgent: (ref: string) => {
      const [ns, name] = pair(ref, 'agent');
      return data(sdk.readAgent({ ...opts, path: { ns, name } }));
    },
    /** `POST /v0/calls` (gateway §1): 200 with the output, or 202 with the approval it waits for; a refusal throws `HolonError` carrying the receipt in `body.receipt`. */
    call: (request: CallRequest): Promise<CallAnswer> => data(sdk.call({ ...opts, body: request })),
    /** `GET /v0/approvals/{id}`: one approval; with `wait_s` (at most 60) a pending one answers once decided, with the approved call's `result`. */
    readApproval: (id: string, query: { wait_s?: number | undefined } = {}) => data(sdk.readApproval({ ...opts, path: { id }, query })),
    /** `GET /v0/approvals`: the approvals still pending. */
    listApprovals: () => data(sdk.listApprovals(opts)),
    /**
     * `POST /v0/approvals/{id}`: approve and run the held call (its output), reject it, or
     * (hosted) `grant` it without running: the agent re-submits the call with `approval`.
     */
    decideApproval: (id: string, decision: 'approve' | 'reject' | 'grant' = 'approve'): Promise<DecisionAnswer> =>
      data(sdk.decideApproval({ ...opts, path: { id }, body: decision === 'grant' ? { run: false } : { decision } })),
    /** `GET /v0/receipts`: receipt trees, newest first (`limit` 1..500, default 50). */
    listReceipts: (query: ListReceiptsData['query'] = {}) => data(sdk.listReceipts({ ...opts, query })),
    /** `GET /v0/receipts/{id}`: one receipt tree. */
    readReceipt: (id: string) => data(sdk.readReceipt({ ...opts, path: { id } })),
    /** `GET /v0/mandates/{issuer}/{name}`: the mandate and its budget (spent, reserved, remaining). */
    readMandate: (id: string) => {
      const [issuer, name] = pair(id, 'mandate');
      return data(sdk.readMandate({ ...opts, path: { issuer, name } }));
    },
    /** `GET /v0/accounts`: balances of the payers and authors. */
    listAccounts: () => data(sdk.listAccounts(opts)),
    /** `POST /v0/agents` (hosted, human key; gateway §7 "Publishing agents"): publish a version of one of your agents; resolves with the publication. */
    publishAgent: (manifest: Manifest) => data(sdk.publishAgent({ ...opts, body: manifest })),
    /** `GET /v0/me/agents` (hosted, human key; gateway §7 "Earnings"): your versions, their evaluations and what each earned. */
    myAgents: () => data(sdk.myAgents(opts)),
    /** `GET /v0/settlements`: settlement intents, optionally by status. */
    listSettlements: (query: ListSettlementsData['query'] = {}) => data(sdk.listSettlements({ ...opts, query })),
    /** `PUT /v0/agents/{ns}/{name}/credential` (hosted, human key): sets the token sent to that agent's endpoint; answers only whether one is set. */
    setCredential: (agent: string, token: string) => {
      const [ns, name] = pair(agent, 'agent');
      return data(sdk.setCredential({ ...opts, path: { ns, name }, body: { token } }));
    },
    /** `DELETE /v0/agents/{ns}/{name}/credential` (hosted, human key): removes it. */
    deleteCredential: (agent: string) => {
      const [ns, name] = pair(agent, 'agent');
      return data(sdk.deleteCredential({ ...opts, path: { ns, name } }));
    },
    /** `POST /v0/agents/draft` (hosted, human key): calls a webhook once and answers a draft manifest and its YAML. */
    draftAgent: (request: DraftRequest) => data(sdk.draftAgent({ ...opts, body: request })),
    /** Hosted, `POST /v0/auth/exchange`: trades the one-time code of `/console#login=<code>` for the handle and a human key (gateway §7 "Accounts"). */
    exchangeLoginCode: (code: string) => data(sdk.githubExchange({ ...opts, body: { code } })),
    /** Hosted, `GET /v0/features` (no key needed): what the operator switched on (GitHub sign-in, publishing, endpoint credentials), each `{ on }` or `{ on: false, reason }`. */
    readFeatures: () => data(sdk.readFeatures(opts)),
    /** Hosted, `GET /v0/me`: the account, its balance, mandates and keys (human key), or the key's mandate and budget (agent key). */
    readMe: () => data(sdk.readMe(opts)),
    /** Hosted, `GET /v0/mandates`: the caller's root mandates with their budgets (human key). */
    listMandates: () => data(sdk.listMandates(opts)),
    /** Hosted, `POST /v0/keys`: a new agent key under one of the caller's root mandates, shown once (human key). */
    createKey: (body: CreateKeyData['body']) => data(sdk.createKey({ ...opts, body })),
    /** Hosted, `DELETE /v0/keys/{prefix}`: revokes one of the caller's keys, at once and for good (human key). */
    revokeKey: (prefix: string) => data(sdk.revokeKey({ ...opts, path: { prefix } })),
  };
}

/** A client made by `createHolonClient`. */
export type HolonClient = ReturnType<typeof createHolonClient>;
