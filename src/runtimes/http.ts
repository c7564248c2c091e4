/**
 * HTTP plumbing shared by the remote runtimes (`mcp`, `webhook`; gateway §6, §7 "Limits"):
 * the answer size limit, redirect detection and naming a connection failure.
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

/** `response` whose body errors, and the source is cancelled, once more than `max_bytes` bytes came in. */
export function limitBody(response: Response, max_bytes: number, onExceeded: () => void): Response {
  if (response.body === null) return response;
  const declared = Number(response.headers.get('content-length'));
  let received = 0;
  const tooLarge = (controller: TransformStreamDefaultController<Uint8Array>) => {
    onExceeded();
    controller.error(new RangeError(`the answer is larger than ${max_bytes} bytes`));
  };
  const counter = new TransformStream<Uint8Array, Uint8Array>({
    start(controller) {
      if (declared > max_bytes) tooLarge(controller);
    },
    transform(chunk, controller) {
      received += chunk.byteLength;
      if (received > max_bytes) tooLarge(controller);
      else controller.enqueue(chunk);
    },
  });
  return new Response(response.body.pipeThrough(counter), {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
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
