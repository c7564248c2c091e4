/**
 * The public catalogue (gateway §7 "Extra endpoints", `GET /v0/catalog`; issue 10 §9): every
 * agent the registry lists, shipped and published alike, with what its author declares and what
 * the platform measured. The measured record is computed from `call_events` (gateway §7 "The
 * journal": the platform's own measurements), over all versions of an agent, runs counted as the
 * gateway's search counts them (`RUN_COUNTS` of `src/gateway/catalogue.ts`), and shown only when
 * the operator turns records on (`HOLON_RECORDS=1`): on a young platform the events are sample
 * traffic, and sample records are not measurements.
 */
import type { Knex } from 'knex';
import type { components } from '../../generated/gateway/types.ts';
import { formatMoney } from '../contracts/money.ts';
import { int } from '../db/index.ts';
import { RUN_COUNTS } from '../gateway/catalogue.ts';
import type { Registry } from '../gateway/registry.ts';

/** What the platform measured of one agent (`MeasuredRecord` of `openapi/gateway.yaml`); money in EUR. */
export type MeasuredRecord = components['schemas']['MeasuredRecord'];

/** An agent id (`ns/name`) from an event's agent reference (`ns/name@version`), as the gateway counts runs. */
const AGENT_ID = RUN_COUNTS.id;

/**
 * The measured record of every agent with at least one event, by agent id: counts, latency
 * percentiles (nearest rank, whole milliseconds) and the amount billed (integer micro-units summed
 * by the database, formatted at the edge), and failures by code. Two grouped reads, whatever the
 * number of events.
 */
export async function measuredRecords(db: Knex): Promise<Map<string, MeasuredRecord>> {
  const totals = await db('call_events')
    .whereNotNull('agent')
    .groupByRaw(AGENT_ID)
    .select(
      db.raw(`${AGENT_ID} AS id`),
      db.raw(`${RUN_COUNTS.runs} AS runs`),
      db.raw(`${RUN_COUNTS.successes} AS successes`),
      db.raw('count(*) FILTER (WHERE delegated) AS delegated_runs'),
      db.raw('percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_ms) AS median'),
      db.raw('percentile_disc(0.95) WITHIN GROUP (ORDER BY latency_ms) AS p95'),
      db.raw('coalesce(sum(cost_micros), 0) AS billed_micros'),
    );
  const errors = await db('call_events')
    .whereNotNull('agent')
    .whereNot({ status: 'succeeded' })
    .groupByRaw(`${AGENT_ID}, coalesce(error, 'failed')`)
    .select(db.raw(`${AGENT_ID} AS id`), db.raw(`coalesce(error, 'failed') AS code`), db.raw('count(*) AS runs'))
    .orderByRaw('count(*) DESC, 2');
  const records = new Map<string, MeasuredRecord>();
  for (const row of totals) {
    const runs = int(row.runs);
    const successes = int(row.successes);
    records.set(row.id, {
      runs,
      successes,
      success_rate: runs === 0 ? null : successes / runs,
      delegated_runs: int(row.delegated_runs),
      median_latency_ms: row.median === null ? null : int(row.median),
      p95_latency_ms: row.p95 === null ? null : int(row.p95),
      billed: formatMoney(int(row.billed_micros)),
      errors: [],
    });
  }
  for (const row of errors) records.get(row.id)?.errors.push({ code: row.code, runs: int(row.runs) });
  return records;
}

/** The catalogue (`Catalog` of `openapi/gateway.yaml`): every listed agent in id order, its latest version declared, measured when `records` is on. */
export async function readCatalog(db: Knex, registry: Registry, records: boolean) {
  const measured = records ? await measuredRecords(db) : new Map<string, MeasuredRecord>();
  const agents = registry
    .latest()
    .map((agent) => {
      const manifest = agent.loaded.manifest;
      const empty: MeasuredRecord = { runs: 0, successes: 0, success_rate: null, delegated_runs: 0, median_latency_ms: null, p95_latency_ms: null, billed: formatMoney(0), errors: [] };
      return {
        id: manifest.id,
        version: manifest.version,
        versions: registry.versionsOf(manifest.id),
        published: agent.published,
        proprietary: manifest.license === 'proprietary',
        declared: {
          summary: manifest.summary,
          capabilities: manifest.capabilities,
          price: agent.document.price as Record<string, unknown>,
          license: manifest.license,
          runtime: manifest.runtime.kind,
          errors: Object.keys(manifest.interface.errors).sort(),
        },
        measured: records ? (measured.get(manifest.id) ?? empty) : null,
      };
    })
    .sort((a, b) => a.id.localeCompare(b.id));
  return { records, agents };
}
