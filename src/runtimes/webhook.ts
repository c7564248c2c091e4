/**
 * The webhook runtime (gateway §6, second table): for an endpoint that is not an MCP server (an
 * n8n or Make workflow, a small API).
 *
 * Request: `POST runtime.endpoint`, body = the input as JSON, headers `x-holon-agent: <id>@<version>`,
 * `x-holon-call: <call_id>` and `Authorization: Bearer <token>` when the author set an endpoint
 * credential (never any credential of the caller: DESIGN open point 13).
 *
 * Answer → outcome, in this order:
 * 1. no HTTP response at all (refused, DNS, reset, TLS) → `failure runtime_unavailable`;
 * 2. a redirect (3xx): not followed, its target is never contacted → `failure agent_error`;
 * 3. a body over 10 MiB (cut off as it streams in) → `failure agent_error`;
 * 4. a JSON body `{"error": {"code", "message"?}}`, whatever the status → `error` with that code
 *    (a code that is not a valid error code → `failure agent_error`);
 * 5. a 2xx JSON body → `output`;
 * 6. anything else: a non-2xx status, or a body that is not JSON → `failure agent_error`.
 * The hard timeout aborts the request and the body read → `failure timeout`.
 *
 * Rule 4 settles DESIGN open point 11: the table's error row says "any status", and n8n, Make and
 * most APIs answer a failure with a 4xx/5xx status and a body; the code still only bills when the
 * author declared it `billed: true` under `charge_on: attempt` (gateway §2), so a crashing server
 * answering 500 cannot bill the payer by accident.
 *
 * A webhook is called once, never retried (DESIGN open point 12): it may not be idempotent;
 * `x-holon-call` lets its author recognise a call. Webhook answers carry no units or quote.
 */
import { ERROR_CODE_PATTERN } from './agent-context.mjs';
import { credentialHeaders, isRedirect, networkReason, redirectRefused, remoteRuntimeSettings, statusHint, tooLarge, watchBody, type RemoteRuntimeOptions } from './http.ts';
import { clip, failure, isObject, timedOut } from './outcome.ts';
import type { RunOutcome, RunRequest, Runtime } from './types.ts';
import { traceHeaders } from '../observe/trace.ts';

/** The webhook runtime. Never throws: every problem is a `RunOutcome`. */
export function createWebhookRuntime(options: RemoteRuntimeOptions = {}): Runtime {
  const { fetch: baseFetch, max_answer_bytes: maxBytes } = remoteRuntimeSettings(options);
  return {
    async run(request) {
      const { endpoint } = request.target.runtime;
      if (!endpoint) return failure('runtime_unavailable', 'a webhook agent needs runtime.endpoint');
      if (request.signal.aborted) return timedOut();
      let response: Response;
      try {
        response = await baseFetch(endpoint, {
          method: 'POST',
          headers: webhookHeaders(request),
          body: JSON.stringify(request.input),
          redirect: 'manual',
          signal: request.signal,
        });
      } catch (error) {
        if (request.signal.aborted) return timedOut();
        return failure('runtime_unavailable', `could not reach ${endpoint} (${networkReason(error)}): is the webhook up?`);
      }
      if (isRedirect(response.status)) {
        await response.body?.cancel().catch(() => {});
        return failure('agent_error', redirectRefused(endpoint, response));
      }
      let exceeded = false;
      let text: string;
      try {
        text = await watchBody(response, { max_bytes: maxBytes, onExceeded: () => (exceeded = true) }).text();
      } catch (error) {
        if (request.signal.aborted) return timedOut();
        if (exceeded) return failure('agent_error', tooLarge(maxBytes));
        return failure('agent_error', `the answer broke off (${networkReason(error)})`);
      }
      return outcomeOfAnswer(response.status, text);
    },
  };
}

/** The request headers of one call (gateway §6). */
function webhookHeaders(request: RunRequest): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json',
    'x-holon-agent': `${request.target.id}@${request.target.version}`,
    'x-holon-call': request.call_id,
    ...credentialHeaders(request.credential),
    // The call's trace context (W3C traceparent): the endpoint may continue the trace (issue 22 §2).
    ...traceHeaders(),
  };
}

/** Rules 4 to 6 above, for a read answer. */
function outcomeOfAnswer(status: number, text: string): RunOutcome {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return failure('agent_error', `the endpoint answered ${status} with a body that is not JSON: ${clip(text) || '(empty)'}`);
  }
  if (isObject(body) && isObject(body.error) && 'code' in body.error) {
    const { code, message } = body.error;
    if (typeof code !== 'string' || !ERROR_CODE_PATTERN.test(code)) {
      return failure('agent_error', `the endpoint answered ${status} with error code ${clip(JSON.stringify(code))}, not a valid error code`);
    }
    return { kind: 'error', code, message: clip(typeof message === 'string' ? message : code), units: null, quote: null };
  }
  if (status >= 200 && status < 300) return { kind: 'output', output: body, units: null, quote: null };
  return failure('agent_error', `the endpoint answered ${status} without an {"error": {"code"}} body${statusHint(status)}`);
}
