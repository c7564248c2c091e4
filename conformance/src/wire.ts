/**
 * The kit's view of a binding: the generated clearing client, one method per contract operation,
 * every call recorded. A method never throws for what the binding answered; it returns a Reply
 * and the check decides what the answer means.
 */
import { createClient, type Client } from '../../generated/clearing/client/client/index.ts';
import * as sdk from '../../generated/clearing/client/sdk.gen.ts';
import type {
  AdjustRequest, CreditRequest, DrawRequest, OpenHoldRequest, ReleaseHoldRequest,
  ResizeHoldRequest, ReverseRequest, SettleRequest,
} from '../../generated/clearing/client/types.gen.ts';
import type { Dispatcher } from 'undici';
import type { ConformanceConfig, TlsFiles } from './config.ts';
import type { OperationName } from './contract.ts';
import { dispatcherFor, recordingFetch, type Exchange, type ExchangeLog } from './http.ts';

/** What the binding answered to one call: status (null when nothing came back) and parsed body. */
export interface Reply {
  readonly status: number | null;
  /** The JSON body, or undefined when the body was empty or not JSON. */
  readonly body: unknown;
  readonly exchange: Exchange;
}

/** Extra request headers for one call, e.g. `{ 'x-forwarded-for': '203.0.113.7' }` (§3). */
export type ExtraHeaders = Readonly<Record<string, string>>;

/** Where the wire sends and records: base URL, headers for every request, per-request timeout, TLS credentials. */
export interface WireTarget {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeout_ms: number;
  /** The TLS files of an `https://` binding (the config's `tls`), or null. */
  readonly tls: TlsFiles | null;
  /** Told every hold id this wire asks to open, before the request goes out, so the run can release them all at the end. */
  readonly onHold?: (holdId: string) => void;
}

/** The config's binding as a wire's target, or `url` in its place (explore's fault proxy, which carries the credentials itself). */
export function wireTarget(config: ConformanceConfig, url: string = config.url): WireTarget {
  return { url, headers: config.headers, timeout_ms: config.timeout_ms, tls: url === config.url ? config.tls : null };
}

/**
 * A deliberately malformed request body, typed as the operation's request so it can travel
 * through the typed client. Used only to check refusals (§7.2 invalid_request).
 */
export function malformed<T>(body: Record<string, unknown>): T {
  return body as T;
}

/**
 * One check's connection to the binding. Every exchange goes to the run's log and to this
 * wire's own list, which is what a failure report shows.
 */
export class Wire {
  readonly #client: Client;
  readonly #target: WireTarget;
  readonly #log: ExchangeLog;
  readonly #dispatcher: Dispatcher;
  readonly #mine: Exchange[] = [];

  constructor(target: WireTarget, log: ExchangeLog) {
    this.#target = target;
    this.#log = log;
    this.#dispatcher = dispatcherFor(target.tls);
    this.#client = createClient({ baseUrl: target.url, headers: { ...target.headers } });
  }

  /** Exchanges this wire recorded, oldest first. */
  exchanges(): readonly Exchange[] {
    return this.#mine;
  }

  /** GET /healthz (§3). */
  health(headers?: ExtraHeaders): Promise<Reply> {
    return this.#call('health', (o) => sdk.health({ ...o, headers }));
  }

  /** GET /internal/clearing/capabilities (§5). */
  capabilities(headers?: ExtraHeaders): Promise<Reply> {
    return this.#call('capabilities', (o) => sdk.capabilities({ ...o, headers }));
  }

  /** resolve-account (§6.1). */
  resolveAccount(agentKey: string): Promise<Reply> {
    return this.#call('resolve-account', (o) => sdk.resolveAccount({ ...o, path: { agentKey } }));
  }

  /** read-balance (§6.2). */
  readBalance(account: string, headers?: ExtraHeaders): Promise<Reply> {
    return this.#call('read-balance', (o) => sdk.readBalance({ ...o, headers, path: { account } }));
  }

  /** read-summary (§6.3). */
  readSummary(account: string): Promise<Reply> {
    return this.#call('read-summary', (o) => sdk.readSummary({ ...o, path: { account } }));
  }

  /** read-settlement (§6.4). */
  readSettlement(txnId: string): Promise<Reply> {
    return this.#call('read-settlement', (o) => sdk.readSettlement({ ...o, path: { txnId } }));
  }

  /** list-reservations (§6.5). */
  listReservations(account: string): Promise<Reply> {
    return this.#call('list-reservations', (o) => sdk.listReservations({ ...o, path: { account } }));
  }

  /** read-reservation (§6.6). */
  readReservation(holdId: string): Promise<Reply> {
    return this.#call('read-reservation', (o) => sdk.readReservation({ ...o, path: { holdId } }));
  }

  /** credit (§6.7). */
  credit(body: CreditRequest): Promise<Reply> {
    return this.#call('credit', (o) => sdk.credit({ ...o, body }));
  }

  /** settle (§6.8). */
  settle(body: SettleRequest, headers?: ExtraHeaders): Promise<Reply> {
    return this.#call('settle', (o) => sdk.settle({ ...o, headers, body }));
  }

  /** reverse (§6.9). */
  reverse(body: ReverseRequest): Promise<Reply> {
    return this.#call('reverse', (o) => sdk.reverse({ ...o, body }));
  }

  /** adjust (§6.10). */
  adjust(body: AdjustRequest): Promise<Reply> {
    return this.#call('adjust', (o) => sdk.adjust({ ...o, body }));
  }

  /** open-hold (§6.11). */
  openHold(body: OpenHoldRequest): Promise<Reply> {
    if (typeof body.holdId === 'string') this.#target.onHold?.(body.holdId);
    return this.#call('open-hold', (o) => sdk.openHold({ ...o, body }));
  }

  /** resize-hold (§6.12). */
  resizeHold(body: ResizeHoldRequest): Promise<Reply> {
    return this.#call('resize-hold', (o) => sdk.resizeHold({ ...o, body }));
  }

  /** draw (§6.13). */
  draw(body: DrawRequest): Promise<Reply> {
    return this.#call('draw', (o) => sdk.draw({ ...o, body }));
  }

  /** release-hold (§6.14). */
  releaseHold(body: ReleaseHoldRequest): Promise<Reply> {
    return this.#call('release-hold', (o) => sdk.releaseHold({ ...o, body }));
  }

  /**
   * A request outside the typed operations: an unknown route, or a body that is not JSON.
   * `body` is sent verbatim with `content-type: application/json`.
   */
  raw(method: 'GET' | 'POST', path: string, body?: string): Promise<Reply> {
    return this.#call('raw', (o) => this.#client.request({
      ...o,
      method,
      url: path,
      ...(body === undefined ? {} : {
        body,
        bodySerializer: (b: unknown) => String(b),
        headers: { 'content-type': 'application/json' },
      }),
    }));
  }

  /**
   * Sends one request through the generated client with a recording fetch and answers the
   * recorded exchange. The client is told to hand back text, so a body that is not JSON is
   * reported rather than thrown.
   */
  async #call(
    op: OperationName | 'health' | 'capabilities' | 'raw',
    send: (options: { client: Client; fetch: typeof fetch; parseAs: 'text' }) => Promise<unknown>,
  ): Promise<Reply> {
    let recorded: Exchange | undefined;
    const fetchFn = recordingFetch(op, () => this.#log.nextSeq(), this.#target.timeout_ms, (e) => {
      recorded = this.#log.add(e);
      this.#mine.push(e);
    }, this.#dispatcher);
    await send({ client: this.#client, fetch: fetchFn, parseAs: 'text' });
    if (recorded === undefined) throw new Error(`holon-conformance: ${op} sent no request`);
    return { status: recorded.status, body: recorded.json, exchange: recorded };
  }
}
