/**
 * HTTP plumbing shared by the remote runtimes (`mcp`, `webhook`; gateway §6, §7 "Limits"): their
 * options, the answer size limit, redirect detection and naming a connection failure.
 *
 * "10 MB" (DESIGN open point 12) is 10 MiB, 10,485,760 bytes, of one HTTP response body as
 * the runtime reads it, after any content decoding (so a compressed bomb is stopped too). It is
 * measured while the body streams in: a `content-length` above it is refused before reading, and
 * a body that grows past it is cut off at that byte and the connection dropped.
 */

/** The most one answer body may weigh, in bytes (10 MiB). */
export const MAX_ANSWER_BYTES = 10 * 1024 * 1024;

/** A fetch function: the global one, or the hosted gateway's guarded client (gateway §7 "Network safety"). */
export type Fetch = typeof fetch;

/** Options of a remote runtime (`createMcpRuntime`, `createWebhookRuntime`). */
export interface RemoteRuntimeOptions {
  /** The fetch used for every request to the agent's endpoint (default: global fetch). */
  fetch?: Fetch;
  /** The answer size limit in bytes (default {@link MAX_ANSWER_BYTES}). */
  max_answer_bytes?: number;
}

/** `options` with their defaults filled in: the global fetch and {@link MAX_ANSWER_BYTES}. */
export function remoteRuntimeSettings(options: RemoteRuntimeOptions): Required<RemoteRuntimeOptions> {
  return { fetch: options.fetch ?? fetch, max_answer_bytes: options.max_answer_bytes ?? MAX_ANSWER_BYTES };
}

/**
 * `Authorization: Bearer <token>` when the author set an endpoint credential, else nothing: the
 * only credential a runtime ever sends (DESIGN open point 13).
 */
export function credentialHeaders(credential: string | null): Record<string, string> {
  return credential === null ? {} : { authorization: `Bearer ${credential}` };
}

/** Whether `status` is a redirect, which the runtimes never follow (gateway §6). */
export function isRedirect(status: number): boolean {
  return status >= 300 && status < 400;
}

/** Why a redirect answer from `endpoint` is refused, naming its target. */
export function redirectRefused(endpoint: string, response: Response): string {
  const location = response.headers.get('location') ?? 'nowhere';
  return `${endpoint} answered ${response.status} to ${location}: redirects are not followed; set runtime.endpoint to the final URL`;
}

/** Why an answer over `max_bytes` is refused. */
export function tooLarge(max_bytes: number): string {
  return `the answer is larger than ${max_bytes} bytes (gateway §7 "Limits")`;
}

/** What {@link watchBody} watches for. */
export interface BodyWatch {
  /** The most bytes the body may weigh; beyond it the body errors and the connection is dropped. */
  max_bytes: number;
  /** Called once when the body is over `max_bytes` (declared by `content-length`, or as it streams in). */
  onExceeded(): void;
  /** Called once when the body ended, completely or not (not when the reader cancelled it). */
  onEnd?(): void;
}

/** `response` with its body read through `watch`: counted, cut off past the limit, its end reported. */
export function watchBody(response: Response, watch: BodyWatch): Response {
  if (response.body === null) return response;
  const reader = response.body.getReader();
  let received = 0;
  const exceeded = () => {
    watch.onExceeded();
    void reader.cancel().catch(() => {});
    return new RangeError(tooLarge(watch.max_bytes));
  };
  const declared = Number(response.headers.get('content-length'));
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      if (declared > watch.max_bytes) controller.error(exceeded());
    },
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          controller.close();
          watch.onEnd?.();
          return;
        }
        received += value.byteLength;
        if (received > watch.max_bytes) controller.error(exceeded());
        else controller.enqueue(value);
      } catch (error) {
        controller.error(error);
        watch.onEnd?.();
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** Why a fetch got no response at all, in a few words (`ECONNREFUSED`, `ENOTFOUND`, …). */
export function networkReason(error: unknown): string {
  const cause = error instanceof Error ? (error.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return error instanceof Error ? error.message : String(error);
}

/** A hint for an HTTP status the author can fix (401/403: the endpoint credential). */
export function statusHint(status: number): string {
  return status === 401 || status === 403
    ? ': the endpoint refused the credential; its author sets it with `holon credential set`'
    : '';
}
