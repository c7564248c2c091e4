/**
 * The ranked search of gateway §5 (`GET /v0/agents`, and the MCP server's `search_agents`):
 * agents matching words and a capability, priced in the mandate's currency when one is given,
 * with the mandate's answer for each, ranked by cost per successful run.
 */
import type { Knex } from 'knex';
import { checkCall } from '../contracts/check-call.ts';
import { int } from '../db/index.ts';
import { formatMoney } from '../contracts/money.ts';
import { worstCase } from '../contracts/pricing.ts';
import type { StoredMandate } from './mandates.ts';
import type { Registry } from './registry.ts';

/** Measured runs and successes by agent id. */
export type Measured = ReadonlyMap<string, { runs: number; successes: number }>;

/**
 * What a run is, counted the same by every door (issue 25 §4): one row of the append-only
 * `call_events`, which the receipt's statement writes once for a finished call that reached its
 * agent (`measured` in `receipts.ts`; a call refused before its agent ran is none). `id` is the
 * agent id (`ns/name`) of the row's agent reference (`ns/name@version`): a record spans versions.
 */
export const RUN_COUNTS = {
  id: `split_part(agent, '@', 1)`,
  runs: 'count(*)',
  successes: `count(*) FILTER (WHERE status = 'succeeded')`,
} as const;

/**
 * The measured runs and successes ({@link RUN_COUNTS}) of the agents `ids`, or of every agent:
 * read from the database each time, so every gateway process ranks on the same figures (issue 12
 * §4), and the dev search and the hosted catalogue answer the same counts.
 */
export async function readMeasured(db: Knex, ids?: readonly string[]): Promise<Measured> {
  const query = db('call_events')
    .whereNotNull('agent')
    .groupByRaw(RUN_COUNTS.id)
    .select(db.raw(`${RUN_COUNTS.id} AS id`), db.raw(`${RUN_COUNTS.runs} AS runs`), db.raw(`${RUN_COUNTS.successes} AS successes`));
  if (ids?.length === 0) return new Map();
  if (ids) query.whereRaw(`${RUN_COUNTS.id} IN (${ids.map(() => '?').join(', ')})`, [...ids]);
  return new Map((await query).map((row) => [row.id as string, { runs: int(row.runs), successes: int(row.successes) }]));
}

/**
 * The success rate used for ranking: (successes + 1) / (runs + 1), so an agent without runs is
 * neither favoured nor shut out (gateway §1 "Resolve": cost per successful run).
 */
export function rankingRate(measured: Measured, id: string): number {
  const stats = measured.get(id) ?? { runs: 0, successes: 0 };
  return (stats.successes + 1) / (stats.runs + 1);
}

/** One search result (the `AgentListing` of `openapi/gateway.yaml`). Money as decimal strings. */
export interface Listing {
  id: string;
  version: string;
  summary: string;
  capabilities: string[];
  price: Record<string, unknown>;
  worst_case: string | null;
  currency: string;
  success_rate: number | null;
  cost_per_success: string | null;
  allowed: 'allow' | 'approve' | 'deny' | null;
  reason: string | null;
  license: string;
  /** A `proprietary` agent, labelled as such everywhere it is listed (gateway §7 "Publishing agents"). */
  proprietary: boolean;
  published: boolean;
}

/** Searches the catalogue; every word of `q` must appear in an agent's id, summary or capabilities. */
export function searchAgents(registry: Registry, measured: Measured, mandate: StoredMandate | null, query: { q?: string; capability?: string }): Listing[] {
  const words = (query.q ?? '').toLowerCase().split(/\s+/).filter(Boolean);
  return (query.capability ? registry.implementers(query.capability) : registry.latest())
    .filter(({ loaded: { manifest } }) => words.every((w) => [manifest.id, manifest.summary, ...manifest.capabilities].join(' ').toLowerCase().includes(w)))
    .map((agent) => {
      const manifest = agent.loaded.manifest;
      const stats = measured.get(manifest.id) ?? { runs: 0, successes: 0 };
      const terms = mandate?.mandate.budget ?? { currency: manifest.price.currency, fx: {} };
      const wc = worstCase(manifest, terms, null);
      const admission = mandate
        ? checkCall(mandate.mandate, manifest, wc, { now_ms: Date.now(), remaining_micros: Number.MAX_SAFE_INTEGER, capability: query.capability ?? null, published: agent.published, delegated: false })
        : null;
      const worst = wc.ok ? wc.worst_case_micros : null;
      const score = worst === null ? Number.MAX_SAFE_INTEGER : worst / rankingRate(measured, manifest.id);
      const listing: Listing = {
        id: manifest.id,
        version: manifest.version,
        summary: manifest.summary,
        capabilities: manifest.capabilities,
        price: agent.document.price as Record<string, unknown>,
        worst_case: worst === null ? null : formatMoney(worst),
        currency: terms.currency,
        success_rate: stats.runs === 0 ? null : stats.successes / stats.runs,
        cost_per_success: worst === null ? null : formatMoney(Math.ceil(score)),
        allowed: admission?.decision ?? null,
        reason: admission?.decision === 'deny' ? admission.reason : null,
        license: manifest.license,
        proprietary: manifest.license === 'proprietary',
        published: agent.published,
      };
      return { listing, score };
    })
    .sort((a, b) => a.score - b.score || a.listing.id.localeCompare(b.listing.id))
    .map(({ listing }) => listing);
}
