/**
 * The HTTP answer of a call (gateway §5 `POST /v0/calls`, and `POST /v0/approvals/{id}` when it
 * runs the held call): one rule for every door that runs one, the gateway's own handlers and
 * the hosted gateway's (its idempotent calls, its agent keys' calls).
 */
import type Koa from 'koa';
import type { components } from '../../generated/gateway/types.ts';
import { HttpError, invalidRequest } from '../http/errors.ts';
import { approvalView } from './approvals.ts';
import type { CallResult, Gateway } from './lifecycle.ts';

/**
 * 422 `invalid_request` for a call that names no mandate: `mandate` is optional in the document
 * only because a hosted agent key's calls run under its mandate (gateway §7 "Extra endpoints");
 * everywhere else there is no key to take it from.
 */
export const mandateRequired = (): HttpError =>
  invalidRequest('invalid request: body.mandate is required: name the mandate the call runs under (only an agent key may leave it out, its calls run under its mandate)');

type Schemas = components['schemas'];

/** A call's answer (gateway §5): its output (200), the approval it waits for (202), or its refusal; each with the receipt. */
export type CallAnswer = Schemas['CallSucceeded'] | Schemas['CallPending'] | Schemas['CallRefused'];

/** Sets a call's HTTP answer: gateway §5's status and `{output, receipt}`, `{approval, receipt}` or `{error, code, receipt}`; `Retry-After` and `Server-Timing` when the result has them. */
export async function answer(ctx: Koa.Context, gateway: Gateway, result: CallResult, currency: string): Promise<CallAnswer> {
  ctx.status = result.http;
  if (result.retry_after_s !== undefined) ctx.set('Retry-After', String(result.retry_after_s));
  if (result.server_timing !== undefined) ctx.set('Server-Timing', result.server_timing);
  const receipt = await gateway.tree(result.receipt);
  if (result.http === 200) return { output: result.output, receipt };
  if (result.http === 202) return { approval: approvalView(result.approval!, currency), receipt };
  return { error: result.error!.message, code: result.error!.code, receipt };
}
