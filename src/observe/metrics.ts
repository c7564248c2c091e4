/**
 * The process's Prometheus metrics (issue 22 §1), on prom-client's default registry: one set per
 * process, so a gateway and the reference binding it runs in-process share it, and a counter
 * counts everything this process did. Every name starts with `holon_`. Counters and histograms
 * move where the event happens; gauges that read a database (reservations, holds, outbox depth,
 * pool) are read when scraped, each from the sources a running gateway or binding added
 * ({@link addScrapeSource}), with a bounded statement. Label values are bounded: routes are
 * templates, agents beyond {@link AGENT_LABEL_CAP} are folded into `other`, codes come from the
 * contract's enums and manifests (at most 64 characters each).
 */
import client from 'prom-client';

/** The registry `/metrics` answers (prom-client's default: Node's metrics land there too). */
export const registry = client.register;

/** Distinct agent label values kept; the agents seen after these are counted as `other`. */
export const AGENT_LABEL_CAP = 100;

/** Distinct error-code label values kept per metric (agents declare their own codes); later ones are `other`. */
export const CODE_LABEL_CAP = 200;

/** The label values a metric has kept so far, and the fold beyond its cap. */
class LabelCap {
  private readonly seen = new Set<string>();

  constructor(private readonly cap: number) {}

  /** `value` itself while fewer than the cap were kept (or it was kept before), else `other`. */
  of(value: string): string {
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.cap) return 'other';
    this.seen.add(value);
    return value;
  }
}

const agents = new LabelCap(AGENT_LABEL_CAP);
const codes = new LabelCap(CODE_LABEL_CAP);

/** Seconds buckets for requests and calls: 1 ms to 60 s. */
const LATENCY_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Seconds buckets for settlement lag (a receipt's commit to its posting): 10 ms to 1 h. */
const LAG_BUCKETS_S = [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600];

/** HTTP requests answered, by `service` (`gateway`, `clearing`), route template, method and status. */
export const httpRequests = new client.Counter({ name: 'holon_http_requests_total', help: 'HTTP requests answered, by route template and status', labelNames: ['service', 'route', 'method', 'status'] as const });

/** Their duration in seconds, by `service`, route template and method. */
export const httpDuration = new client.Histogram({ name: 'holon_http_request_duration_seconds', help: 'HTTP request duration in seconds', labelNames: ['service', 'route', 'method'] as const, buckets: LATENCY_BUCKETS_S });

/** Requests refused 429 `rate_limited`, by route template. */
export const rateLimited = new client.Counter({ name: 'holon_rate_limited_total', help: 'requests refused 429 rate_limited', labelNames: ['route'] as const });

/** Calls ended, by outcome (a receipt status), error code (`none` on success) and agent id. */
const calls = new client.Counter({ name: 'holon_calls_total', help: 'calls by outcome, error code and agent (agents beyond the cap folded into other)', labelNames: ['outcome', 'code', 'agent'] as const });

/** Micro-units billed for calls' own runs, by currency. */
const billed = new client.Counter({ name: 'holon_billed_micros_total', help: 'micro-units billed for calls (own cost, each call once)', labelNames: ['currency'] as const });

/** Latency of clearing requests in seconds, by operation and result (`ok`, `refused`, `unreachable`). */
const clearingDuration = new client.Histogram({ name: 'holon_clearing_request_duration_seconds', help: 'clearing requests by operation and result', labelNames: ['operation', 'result'] as const, buckets: LATENCY_BUCKETS_S });

/** Clearing refusals by operation and clearing-contract §7 code. */
const clearingRefusals = new client.Counter({ name: 'holon_clearing_refusals_total', help: 'clearing refusals by operation and §7 code', labelNames: ['operation', 'code'] as const });

/** Settlement lag: from an intent's write (its receipt's commit) to its posting, seconds. */
const settlementLag = new client.Histogram({ name: 'holon_settlement_lag_seconds', help: 'seconds from a settlement intent written to its posting', labelNames: ['operation'] as const, buckets: LAG_BUCKETS_S });

/** What a call ended as, for {@link countCall}: the receipt's fields. */
export interface CallCounted {
  /** The receipt status: `succeeded`, `failed`, `denied`, `pending_approval`, `rejected_input`. */
  status: string;
  /** The error code, null on success. */
  code: string | null;
  /** `id@version`, or null when no agent was resolved. */
  agent: string | null;
  /** The call's own cost in micro-units, billed when > 0. */
  own_micros: number;
  currency: string;
}

/** Counts one ended call (issue 22 §1): its outcome, and what was billed for its own run. */
export function countCall(call: CallCounted): void {
  const agent = call.agent === null ? 'none' : agents.of(call.agent.split('@')[0]);
  calls.inc({ outcome: call.status, code: call.code === null ? 'none' : codes.of(call.code.slice(0, 64)), agent });
  if (call.own_micros > 0) billed.inc({ currency: call.currency }, call.own_micros);
}

/** Records one clearing request: `seconds` taken; `refused` the §7 code when the binding refused it. */
export function countClearing(operation: string, seconds: number, result: 'ok' | 'refused' | 'unreachable', refused_code?: string): void {
  clearingDuration.observe({ operation, result }, seconds);
  if (result === 'refused') clearingRefusals.inc({ operation, code: codes.of((refused_code ?? 'unknown').slice(0, 64)) });
}

/** Observes the settlement lag of intents posted now: each row's `created_at` (a Date or an ISO text) and `operation`. */
export function observeSettled(rows: ReadonlyArray<{ created_at?: unknown; operation?: unknown }>): void {
  const now_ms = Date.now();
  for (const row of rows) {
    const created_ms = row.created_at instanceof Date ? row.created_at.getTime() : typeof row.created_at === 'string' ? Date.parse(row.created_at) : NaN;
    if (Number.isFinite(created_ms)) settlementLag.observe({ operation: String(row.operation) }, Math.max(0, (now_ms - created_ms) / 1000));
  }
}

/** A reader of gauge values on scrape: label values (joined by `|`, '' when unlabeled) to a number. */
export type ScrapeReader = () => Promise<Record<string, number>>;

/** A gauge read on scrape from the sources added to it; sources' values for the same labels add up. */
class ScrapeGauge {
  private readonly readers = new Set<ScrapeReader>();
  readonly gauge: client.Gauge<string>;

  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    const readers = this.readers;
    this.gauge = new client.Gauge({
      name,
      help,
      labelNames,
      async collect() {
        this.reset();
        const totals = new Map<string, number>();
        for (const values of await Promise.all([...readers].map((read) => read().catch(() => ({}) as Record<string, number>)))) {
          for (const [key, value] of Object.entries(values)) totals.set(key, (totals.get(key) ?? 0) + value);
        }
        for (const [key, value] of totals) {
          const parts = key === '' ? [] : key.split('|');
          this.set(Object.fromEntries(labelNames.map((label, index) => [label, parts[index] ?? ''])), value);
        }
      },
    });
  }

  /** Adds a source; answers the function that removes it (when its gateway or binding closes). */
  add(read: ScrapeReader): () => void {
    this.readers.add(read);
    return () => void this.readers.delete(read);
  }
}

/** The gauges read on scrape, by the name a source adds itself under. */
export const scrapeGauges = {
  reservations_open: new ScrapeGauge('holon_reservations_open', 'budget reservations open (calls reserved and not yet settled)'),
  reservations_open_micros: new ScrapeGauge('holon_reservations_open_micros', 'micro-units reserved by the open reservations, not yet spent'),
  holds_open: new ScrapeGauge('holon_holds_open', 'holds open at the reference binding'),
  holds_open_micros: new ScrapeGauge('holon_holds_open_micros', 'micro-units held and not drawn by the open holds'),
  outbox_depth: new ScrapeGauge('holon_outbox_depth', 'settlement intents waiting to be posted'),
  pool_connections: new ScrapeGauge('holon_db_pool_connections', 'database pool connections by state (used, free, pending acquires)', ['database', 'state']),
  lease_held: new ScrapeGauge('holon_lease_held', '1 while this process holds its lease, 0 once it lost it'),
  mcp_sessions_open: new ScrapeGauge('holon_mcp_sessions_open', 'MCP sessions open on /mcp'),
};

/** A name of {@link scrapeGauges}. */
export type ScrapeGaugeName = keyof typeof scrapeGauges;

/** Adds a source to gauge `name`; answers the function that removes it. */
export function addScrapeSource(name: ScrapeGaugeName, read: ScrapeReader): () => void {
  return scrapeGauges[name].add(read);
}

let defaults = false;

/** Starts Node's default metrics (`holon_process_*`, `holon_nodejs_*`) once per process. */
export function collectProcessMetrics(): void {
  if (defaults) return;
  defaults = true;
  client.collectDefaultMetrics({ register: registry, prefix: 'holon_' });
}

/** The Prometheus text exposition of every metric, and its content type. */
export async function exposition(): Promise<{ text: string; content_type: string }> {
  return { text: await registry.metrics(), content_type: registry.contentType };
}

/** Knex's pool as far as the pool gauge reads it (tarn's counters). */
interface CountedPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
}

/**
 * Adds `knex`'s connection pool to `holon_db_pool_connections` under `database` (`gateway`,
 * `clearing`): connections in use, idle, and acquires waiting. Answers the remover.
 */
export function addPoolSource(database: string, knex: { client: { pool?: CountedPool | null } }): () => void {
  return addScrapeSource('pool_connections', async () => {
    const pool = knex.client.pool;
    if (!pool) return {};
    return { [`${database}|used`]: pool.numUsed(), [`${database}|free`]: pool.numFree(), [`${database}|pending`]: pool.numPendingAcquires() };
  });
}
