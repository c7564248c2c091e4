/**
 * The gateway's side of the clearing seam (clearing-contract §6, §13): {@link ClearingPort}, the
 * operations the gateway uses, with the two ways a call can go wrong kept apart: the binding
 * refused (a 4xx with a §7.2 code, {@link ClearingRefused}) or could not be reached (network
 * failure, timeout or 5xx, {@link ClearingUnreachable}). Two forms answer alike: over HTTP to any
 * binding's URL ({@link HttpClearingPort}, here) and in the process of the reference binding
 * (`InProcessClearingPort`, `clearing-in-process.ts`). Amounts are integer micro-units of the
 * binding's unit. A binding that is not co-located is reached over mutual TLS (issue 23 §4):
 * {@link checkClearingChannel} says which URLs and credentials may go together.
 */
import { Agent, fetch as undiciFetch } from 'undici';
import { mutualTlsFromEnv, type MutualTls, type TlsVariables } from '../clearing/tls.ts';
import { isLoopback } from '../http/access.ts';
import { createClient } from '../../generated/clearing/client/client/index.ts';
import * as sdk from '../../generated/clearing/client/sdk.gen.ts';
import type { Client } from '../../generated/clearing/client/client/index.ts';
import type { OperationRequest, OperationResult } from '../../generated/clearing/server.ts';
import { envNumber, type NumberVariable } from '../config/env.ts';
import { traceHeaders } from '../observe/trace.ts';

/** The binding answered with a refusal (4xx): `code` is its §7.2 code, or `unknown` when absent (§7.3). */
export class ClearingRefused extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The binding could not be reached, or failed inside (5xx): callers fail closed (§13). */
export class ClearingUnreachable extends Error {}

type Result<T> = { data?: T; error?: unknown; response?: Response };

/** Turns a generated client's `{data, error, response}` into the data, or throws one of the two errors above. */
async function settled<T>(what: string, call: Promise<Result<T>>): Promise<T> {
  let result: Result<T>;
  try {
    result = await call;
  } catch (error) {
    throw new ClearingUnreachable(`the clearing binding could not be reached for ${what}: ${(error as Error).message}`);
  }
  // The generated client answers a network failure (no response at all) instead of throwing it.
  if (result.response === undefined) {
    throw new ClearingUnreachable(`the clearing binding could not be reached for ${what}: ${(result.error as Error | undefined)?.message ?? 'no response'}`);
  }
  const status = result.response.status;
  if (status >= 200 && status < 300 && result.data !== undefined) return result.data;
  const body = (result.error ?? {}) as { error?: string; code?: string };
  // The §3 gate refusing the gateway itself (no client certificate, or one the binding's CA did
  // not sign) is a broken channel, not a refused operation: fail closed as unreachable, so a call
  // answers 503 and a settlement stays pending until the operator fixes the credentials.
  if (status === 403 && body.code === 'not_permitted') {
    throw new ClearingUnreachable(`the clearing binding does not accept this gateway as a caller (403 not_permitted) for ${what}: ${body.error ?? 'no reason given'}; check HOLON_CLEARING_CLIENT_CERT, HOLON_CLEARING_CLIENT_KEY and the binding's CA`);
  }
  if (status >= 400 && status < 500) {
    throw new ClearingRefused(status, body.code ?? 'unknown', `the clearing binding refused ${what}: ${body.error ?? `HTTP ${status}`}`);
  }
  throw new ClearingUnreachable(`the clearing binding failed on ${what}: ${body.error ?? `HTTP ${status}`}`);
}

/**
 * How long the gateway waits for the binding, in seconds (issue 8 §1.4): `connect_s` to open a
 * connection, `request_s` for a whole request, answer included. A request past either fails as
 * unreachable, so the call fails closed and nothing waits on a hung binding.
 */
export interface ClearingTimeouts {
  connect_s: number;
  request_s: number;
}

/** The defaults: 5 s to connect, 15 s per request (the slowest reference operation takes milliseconds). */
export const DEFAULT_CLEARING_TIMEOUTS: ClearingTimeouts = { connect_s: 5, request_s: 15 };

/** The largest timeout accepted, in seconds: a call's hold must not wait longer on its binding. */
export const MAX_CLEARING_TIMEOUT_S = 300;

/** A clearing timeout's variable: seconds, decimals allowed, from 0.001 (one millisecond, the finest a timer counts) to {@link MAX_CLEARING_TIMEOUT_S}. */
const timeoutVariable = (name: string, what: string, fallback: number): NumberVariable => ({ name, what, default: fallback, min: 0.001, max: MAX_CLEARING_TIMEOUT_S, integer: false });

/** `HOLON_CLEARING_CONNECT_TIMEOUT_S` (default 5) and `HOLON_CLEARING_TIMEOUT_S` (default 15), by the field of {@link ClearingTimeouts} they set. */
export const CLEARING_TIMEOUT_VARIABLES: Record<keyof ClearingTimeouts, NumberVariable> = {
  connect_s: timeoutVariable('HOLON_CLEARING_CONNECT_TIMEOUT_S', 'seconds to connect to the clearing binding', DEFAULT_CLEARING_TIMEOUTS.connect_s),
  request_s: timeoutVariable('HOLON_CLEARING_TIMEOUT_S', 'seconds for one clearing request, answer included', DEFAULT_CLEARING_TIMEOUTS.request_s),
};

/** The timeouts {@link CLEARING_TIMEOUT_VARIABLES} name. Throws `SettingRefused` for a value outside its range. */
export function clearingTimeoutsFromEnv(env: NodeJS.ProcessEnv = process.env): ClearingTimeouts {
  return { connect_s: envNumber(env, CLEARING_TIMEOUT_VARIABLES.connect_s), request_s: envNumber(env, CLEARING_TIMEOUT_VARIABLES.request_s) };
}

/** The gateway's side of mutual TLS: `HOLON_CLEARING_CLIENT_CERT`, `HOLON_CLEARING_CLIENT_KEY` (what it presents) and `HOLON_CLEARING_CA` (what signed the binding's certificate). */
export const CLEARING_CLIENT_TLS_VARIABLES = { cert: 'HOLON_CLEARING_CLIENT_CERT', key: 'HOLON_CLEARING_CLIENT_KEY', ca: 'HOLON_CLEARING_CA' } as const satisfies TlsVariables;

/** The gateway's client certificate, key and trusted CA (PEM) from {@link CLEARING_CLIENT_TLS_VARIABLES}, all three or none (null). Throws naming a missing one or an unreadable file. */
export function clearingClientTlsFromEnv(env: NodeJS.ProcessEnv = process.env): MutualTls | null {
  return mutualTlsFromEnv(env, CLEARING_CLIENT_TLS_VARIABLES);
}

/** Whether a binding URL's host is a loopback address (`127.0.0.0/8`, `[::1]`) or `localhost`: the co-location clearing-contract §3 assumes. */
export function isLoopbackUrl(url: string): boolean {
  const host = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
  return host === 'localhost' || isLoopback(host);
}

/**
 * Refuses, before anything starts, a channel to the binding at `url` that cannot be what the
 * operator meant (issue 23 §4): an `https://` URL without the gateway's mutual TLS (no CA to trust
 * the binding's certificate, no certificate to present), a client certificate with an `http://`
 * URL (it would never be sent), and in production a binding off loopback without mutual TLS. A
 * plain `http://` binding off loopback outside production is allowed as before: only a private
 * network makes it safe (docs/operators.md). Throws an Error whose sentence names the settings.
 */
export function checkClearingChannel(url: string, tls: MutualTls | null, production: boolean): void {
  const names = Object.values(CLEARING_CLIENT_TLS_VARIABLES).join(', ');
  const https = new URL(url).protocol === 'https:';
  if (https && !tls) throw new Error(`the clearing binding ${url} is reached over TLS: set ${names} (the gateway's client certificate and key, and the CA that signed the binding's certificate)`);
  if (!https && tls) throw new Error(`${names} are set but the clearing binding ${url} is plain http: a client certificate is only presented over TLS; give its https:// URL`);
  if (production && !tls && !isLoopbackUrl(url)) throw new Error(`refusing to start: the clearing binding ${url} is not on loopback, and in production a remote binding is reached only over mutual TLS: give its https:// URL and set ${names}`);
}

/**
 * A fetch bounded by `timeouts`: the connection by undici's connect timeout, the whole request by
 * an abort signal. With `tls`, every connection presents its certificate and trusts only its CA;
 * connections are kept alive and reused, as without.
 */
function boundedFetch(timeouts: ClearingTimeouts, tls: MutualTls | null): typeof fetch {
  const dispatcher = new Agent({ connect: { timeout: timeouts.connect_s * 1000, ...(tls ? { cert: tls.cert, key: tls.key, ca: tls.ca } : {}) } });
  return (async (request: Request) => {
    const body = request.body === null ? undefined : await request.arrayBuffer();
    try {
      // The request's span travels with it (W3C traceparent): the binding continues the trace (issue 22 §2).
      const headers = [...request.headers, ...Object.entries(traceHeaders())];
      const answer = await undiciFetch(request.url, { method: request.method, headers, body, dispatcher, signal: AbortSignal.timeout(timeouts.request_s * 1000) });
      // The whole answer is read inside the bound, so a binding that stalls mid-body fails too.
      const text = await answer.arrayBuffer();
      const empty = answer.status === 204 || answer.status === 304;
      return new Response(empty ? null : text, { status: answer.status, headers: [...answer.headers] });
    } catch (error) {
      const { name, cause } = error as { name?: string; cause?: { code?: string; message?: string } };
      if (name === 'TimeoutError') throw new Error(`no answer within ${timeouts.request_s} s (the clearing request timeout, HOLON_CLEARING_TIMEOUT_S)`);
      if (cause?.code === 'UND_ERR_CONNECT_TIMEOUT') throw new Error(`no connection within ${timeouts.connect_s} s (the clearing connect timeout, HOLON_CLEARING_CONNECT_TIMEOUT_S)`);
      // fetch says only "fetch failed": its cause says why (refused, a certificate not trusted, …).
      if (cause?.message) throw new Error(`${(error as Error).message} (${cause.message})`);
      throw error;
    }
  }) as typeof fetch;
}

/** The body of a settle (§6.8): the caller pays `retail`, the owner earns `rate`, micro-units. */
export type SettleBody = OperationRequest<'settle'>['body'];

/**
 * The operations of the seam the gateway uses (clearing-contract §6), on one binding. Each
 * answers the operation's §6 result, or throws {@link ClearingRefused} (the binding's §7 status
 * and code) or {@link ClearingUnreachable} (outcome unknown: fail closed, §13).
 */
export interface ClearingPort {
  /** read-balance (§6.2). */
  readBalance(account: string): Promise<OperationResult<'read-balance'>>;
  /** open-hold (§6.11): `amount` micro-units on `account` until `expiresAt`. */
  openHold(holdId: string, account: string, amount: number, expiresAt: Date, ref: string): Promise<OperationResult<'open-hold'>>;
  /** release-hold (§6.14). */
  releaseHold(holdId: string, reason: string): Promise<OperationResult<'release-hold'>>;
  /** settle (§6.8). */
  settle(body: SettleBody): Promise<OperationResult<'settle'>>;
  /** credit (§6.7), keyed by the payment's identity `txnId`. */
  credit(txnId: string, account: string, amount: number, ref: string, simulated: boolean): Promise<OperationResult<'credit'>>;
  /** The reference binding's own door (an extension, not the contract, §14): create a holder account. */
  createAccount(account: string): Promise<OperationResult<'create-account'>>;
  /** The reference binding's own door (§14, issue 23 §3): a signed checkpoint of its journal's hash chain. */
  readCheckpoint(): Promise<OperationResult<'read-checkpoint'>>;
}

/** The seam over HTTP: the generated clearing client bound to one binding's URL, every request bounded by the timeouts. */
export class HttpClearingPort implements ClearingPort {
  readonly client: Client;

  /**
   * `url`: the binding's base URL, e.g. `http://127.0.0.1:4100`, or `https://…` with `tls` (the
   * gateway's side of mutual TLS, issue 23 §4); every request is bounded by `timeouts`.
   */
  constructor(
    readonly url: string,
    timeouts: ClearingTimeouts = DEFAULT_CLEARING_TIMEOUTS,
    tls: MutualTls | null = null,
  ) {
    this.client = createClient({ baseUrl: url, fetch: boundedFetch(timeouts, tls) });
  }

  readBalance(account: string) {
    return settled(`read-balance of ${account}`, sdk.readBalance({ client: this.client, path: { account } }));
  }

  openHold(holdId: string, account: string, amount: number, expiresAt: Date, ref: string) {
    return settled(`open-hold ${holdId}`, sdk.openHold({ client: this.client, body: { holdId, account, amount, expiresAt: expiresAt.toISOString(), ref } }));
  }

  releaseHold(holdId: string, reason: string) {
    return settled(`release-hold ${holdId}`, sdk.releaseHold({ client: this.client, body: { holdId, reason } }));
  }

  settle(body: SettleBody) {
    return settled(`settle ${body.txnId}`, sdk.settle({ client: this.client, body }));
  }

  credit(txnId: string, account: string, amount: number, ref: string, simulated: boolean) {
    return settled(`credit ${txnId}`, sdk.credit({ client: this.client, body: { txnId, account, amount, ref, simulated } }));
  }

  createAccount(account: string) {
    return settled(`create-account ${account}`, sdk.createAccount({ client: this.client, body: { account } }));
  }

  readCheckpoint() {
    return settled('read-checkpoint', sdk.readCheckpoint({ client: this.client }));
  }
}
