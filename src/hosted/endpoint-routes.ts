/**
 * The hosted operations on an author's endpoint (gateway §6 "Authentication", "Drafting a
 * listing"): setting and removing the endpoint credential of `ns/name`, and drafting a webhook
 * agent's manifest from one example call. The namespace is the caller's own handle; anyone
 * else's answers 404, as every other account's resource does (gateway §7 "Principals").
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { createSchema } from 'genson-js';
import { stringify } from 'yaml';
import type { OperationRequest } from '../../generated/gateway/server.ts';
import { ContractError } from '../contracts/errors.ts';
import { validateManifest } from '../contracts/manifest.ts';
import { manifestDocument } from '../contracts/schemas.ts';
import { HttpError } from '../http/errors.ts';
import { createWebhookRuntime } from '../runtimes/webhook.ts';
import type { Delegate } from '../runtimes/types.ts';
import { readCredential, removeCredential, storeCredential } from './credentials.ts';
import type { EndpointAccess } from './endpoints.ts';
import { CREDENTIALS_OFF } from './features.ts';
import type { Principal } from './principal.ts';

/** The largest example input and example answer a draft holds, in bytes of JSON (64 KiB each). */
export const MAX_DRAFT_EXAMPLE_BYTES = 64 * 1024;

/** The hard timeout of a draft's one call, in ms. */
export const DRAFT_TIMEOUT_MS = 30_000;

/** An agent name (manifest `id` after the slash). */
const AGENT_NAME = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/;

/** What the endpoint handlers need. */
export interface EndpointRouteDeps {
  db: Knex;
  endpoints: EndpointAccess;
}

type Human = Extract<Principal, { kind: 'human' }>;

/** `ns/name` when `ns` is the caller's namespace and `name` an agent name; 404 for another namespace, 422 for a malformed name. */
function ownAgent(principal: Human, ns: string, name: string): string {
  if (ns !== principal.account) throw new HttpError(404, 'no_such_agent', `there is no agent ${ns}/${name} of yours: your namespace is ${principal.account}/`);
  if (!AGENT_NAME.test(name)) throw new HttpError(422, 'invalid_request', `invalid request: agent name "${name}" must be 1 to 64 lowercase letters, digits or inner hyphens`);
  return `${ns}/${name}`;
}

/** Size of `value` as JSON, in bytes; 422 naming the bound when over {@link MAX_DRAFT_EXAMPLE_BYTES}. */
function boundedExample(value: unknown, what: string): void {
  const bytes = Buffer.byteLength(JSON.stringify(value) ?? '');
  if (bytes > MAX_DRAFT_EXAMPLE_BYTES) {
    throw new HttpError(422, 'invalid_request', `invalid request: ${what} is ${bytes} bytes of JSON; a draft's example holds at most ${MAX_DRAFT_EXAMPLE_BYTES}: use a smaller example`);
  }
}

/** A draft call never delegates: webhooks have no `ctx.call`. */
const noDelegation: Delegate = async () => {
  throw new Error('a webhook draft cannot delegate');
};

/**
 * The draft manifest of gateway §6 "Drafting a listing": schemas describing the example input and
 * answer (genson), license `proprietary`, the call as its one example, version 0.1.0.
 */
export function draftManifest(draft: { id: string; endpoint: string; input: unknown; output: unknown; summary?: string; price?: Record<string, unknown> }): Record<string, unknown> {
  return {
    id: draft.id,
    version: '0.1.0',
    summary: draft.summary ?? `A webhook agent at ${new URL(draft.endpoint).host}.`,
    capabilities: [],
    interface: { input: createSchema(draft.input), output: createSchema(draft.output) },
    price: draft.price ?? { model: 'free', currency: 'EUR' },
    runtime: { kind: 'webhook', endpoint: draft.endpoint },
    license: 'proprietary',
    examples: [{ input: draft.input, output: draft.output }],
  };
}

/** {@link draftManifest}, checked as a manifest; throws 422 `invalid_request` with the manifest's own refusal. */
function validDraft(draft: Parameters<typeof draftManifest>[0]): Record<string, unknown> {
  const manifest = draftManifest(draft);
  try {
    validateManifest(manifest);
  } catch (error) {
    if (!(error instanceof ContractError)) throw error;
    throw new HttpError(422, 'invalid_request', `invalid request: the draft would not be a valid manifest: ${error.message}`);
  }
  return manifest;
}

/** The handlers of `set-credential`, `delete-credential` and `draft-agent`, each for a human key. */
export function endpointHandlers(deps: EndpointRouteDeps) {
  const { db, endpoints } = deps;
  return {
    'set-credential': async ({ params, body }: OperationRequest<'set-credential'>, _ctx: unknown, principal: Principal) => {
      const agent = ownAgent(principal as Human, params.ns, params.name);
      if (endpoints.key === null) throw new HttpError(503, 'credentials_unavailable', CREDENTIALS_OFF);
      await storeCredential(db, endpoints.key, (principal as Human).account, agent, body.token);
      return { agent, set: true };
    },

    'delete-credential': async ({ params }: OperationRequest<'delete-credential'>, _ctx: unknown, principal: Principal) => {
      const agent = ownAgent(principal as Human, params.ns, params.name);
      await removeCredential(db, agent);
      return { agent, set: false };
    },

    'draft-agent': async ({ body }: OperationRequest<'draft-agent'>, _ctx: unknown, principal: Principal) => {
      const account = (principal as Human).account;
      const id = ownAgent(principal as Human, account, body.name);
      boundedExample(body.input, 'the example input');
      await endpoints.check(body.endpoint);
      const fields = { id, endpoint: body.endpoint, input: body.input, summary: body.summary, price: body.price };
      // Checked before the call with a stand-in answer, so a draft that cannot be valid (e.g. per_run without an amount) calls nobody.
      validDraft({ ...fields, output: null });
      const credential = endpoints.key === null ? null : await readCredential(db, endpoints.key, id);
      const outcome = await createWebhookRuntime({ fetch: endpoints.fetch }).run({
        target: { id, version: '0.1.0', runtime: { kind: 'webhook', endpoint: body.endpoint } },
        input: body.input,
        call_id: `draft-${randomUUID()}`,
        max_cost: null,
        credential,
        signal: AbortSignal.timeout(DRAFT_TIMEOUT_MS),
        delegate: noDelegation,
      });
      if (outcome.kind === 'failure') throw new HttpError(502, outcome.code, `the example call failed: ${outcome.message}`);
      if (outcome.kind === 'error') throw new HttpError(502, 'agent_error', `the endpoint answered the example with error ${outcome.code} (${outcome.message}): draft from an input it succeeds on`);
      boundedExample(outcome.output, "the endpoint's answer");
      const manifest = validDraft({ ...fields, output: outcome.output });
      return { manifest: manifestDocument(manifest), yaml: stringify(manifest) };
    },
  };
}
