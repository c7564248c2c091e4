/**
 * Earnings (gateway §7 "Earnings", `GET /v0/me/agents`, `holon earnings`): the author's published
 * versions, their evaluations, whether an endpoint credential is set, and what each version
 * earned, computed from the journal: the settlements the gateway posted through the clearing seam
 * (outbox rows `posted`, one journal entry each under its transaction id). A paid call is the
 * entry `settle:<work>` (payer → the called version's author: `rate`, the charge less the
 * platform fee) and one entry `royalty:<work>:<k>` per level of its fork chain (level k-1's author
 * → level k's: its royalty, memo `royalty to <ns/name@x.y.z>`). A version's share is what its
 * author received as level 0 less the royalty it paid upstream; its royalties are what it
 * received as an upstream level less what it paid further up. Exact in integer micro-units.
 */
import type { Knex } from 'knex';
import { formatMoney, type Micros } from '../contracts/money.ts';
import { int } from '../db/index.ts';
import { publicationView, type PublicationView } from './publish.ts';

/** What the author's view needs besides the database; both hooks are wired by the hosted layer (`extension.ts`). */
export interface EarningsDeps {
  db: Knex;
  /** The evaluation results of `ns/name@x.y.z` (public cases in detail, hidden as pass/fail); none until the evaluation runner is wired. */
  evaluationsOf: (agent: string) => Promise<Record<string, unknown>[]>;
  /** Whether the author set an endpoint credential for agent `ns/name` (never the credential itself). */
  credentialSet: (id: string) => Promise<boolean>;
}

/** What one version earned, in micro-units. */
export interface Earned {
  /** Paid calls of this version (settlements it received as the called agent). */
  calls: number;
  share_micros: Micros;
  royalties_micros: Micros;
}

/** The prefix of a royalty settlement's memo, before the upstream version it pays (`src/gateway/lifecycle.ts`). */
const ROYALTY_MEMO = 'royalty to ';

/** How many UTC days the author's chart covers (`MyAgents.by_day`), today included. */
export const EARNINGS_DAYS = 30;

/** What an account earned: by version (`ns/name@x.y.z`), and by UTC day (`YYYY-MM-DD`, the day each settlement was posted). */
export interface AccountEarnings {
  byVersion: Map<string, Earned>;
  byDay: Map<string, Micros>;
}

/**
 * What `account` received per version, kind (as the called version, or as an upstream level) and
 * UTC day, net of the royalty it paid one level further up: a settlement is level 0
 * (`settle:…`, received `rate`) or level k (`royalty:…:<k>`, received `retail`, the version after
 * the memo's prefix). Summed by the database, so the rows read are versions × days, however
 * many calls were paid. Bindings: where the version starts in a royalty's memo (after
 * {@link ROYALTY_MEMO}), then the account twice.
 */
const EARNINGS_SQL = `
  WITH levels AS (
    SELECT i.receipt, i.posted_at, i.body->>'owner' AS account,
           CASE WHEN i.txn_id LIKE 'settle:%' THEN 0 ELSE substring(i.txn_id FROM ':([0-9]+)$')::integer END AS level,
           CASE WHEN i.txn_id LIKE 'settle:%' THEN i.body->>'memo' ELSE substr(i.body->>'memo', ?::integer) END AS agent,
           CASE WHEN i.txn_id LIKE 'settle:%' THEN (i.body->>'rate')::bigint ELSE (i.body->>'retail')::bigint END AS received
      FROM gateway_settlement_intents i
     WHERE i.operation = 'settle' AND i.status = 'posted'
       AND i.receipt IN (SELECT receipt FROM gateway_settlement_intents WHERE operation = 'settle' AND status = 'posted' AND body->>'owner' = ?)
  )
  SELECT l.agent, l.level = 0 AS own, to_char(l.posted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day,
         count(*) AS calls, sum(l.received - coalesce(u.received, 0))::bigint AS net
    FROM levels l LEFT JOIN levels u ON u.receipt = l.receipt AND u.level = l.level + 1
   WHERE l.account = ?
   GROUP BY 1, 2, 3`;

/**
 * What each version of `account`'s agents earned, by `ns/name@x.y.z`, and what they earned
 * together on each UTC day, from the posted settlements of every paid call in which `account`
 * received money.
 */
export async function earningsOf(db: Knex, account: string): Promise<AccountEarnings> {
  const { rows } = await db.raw(EARNINGS_SQL, [ROYALTY_MEMO.length + 1, account, account]);
  const byVersion = new Map<string, Earned>();
  const byDay = new Map<string, Micros>();
  for (const row of rows as Array<{ agent: string; own: boolean; day: string; calls: unknown; net: unknown }>) {
    const net_micros = int(row.net);
    const figures = byVersion.get(row.agent) ?? { calls: 0, share_micros: 0, royalties_micros: 0 };
    if (row.own) {
      figures.calls += int(row.calls);
      figures.share_micros += net_micros;
    } else {
      figures.royalties_micros += net_micros;
    }
    byVersion.set(row.agent, figures);
    byDay.set(row.day, (byDay.get(row.day) ?? 0) + net_micros);
  }
  return { byVersion, byDay };
}

/** The UTC day of an instant, `YYYY-MM-DD`. */
function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** The last `EARNINGS_DAYS` UTC days up to `now`'s, oldest first, with what was earned on each (0 when nothing). */
export function earningsByDay(byDay: Map<string, Micros>, now: Date): Array<{ day: string; total: string }> {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return Array.from({ length: EARNINGS_DAYS }, (_, index) => {
    const day = utcDay(new Date(today - (EARNINGS_DAYS - 1 - index) * 86_400_000));
    return { day, total: formatMoney(byDay.get(day) ?? 0) };
  });
}

/** One version in the author's view (`MyAgentVersion` of `openapi/gateway.yaml`). */
export interface MyVersion extends PublicationView {
  credential_set: boolean;
  evaluations: Record<string, unknown>[];
  earned: { calls: number; share: string; royalties: string; total: string };
}

/**
 * The author's view: every version it published (yanked ones included), newest first, the total
 * earned, and what was earned on each of the last `EARNINGS_DAYS` UTC days up to `now`.
 */
export async function myAgents(
  deps: EarningsDeps,
  account: string,
  now: Date = new Date(),
): Promise<{ currency: 'EUR'; versions: MyVersion[]; total: string; by_day: Array<{ day: string; total: string }> }> {
  const { db } = deps;
  const rows = await db('hosted_publications as p')
    .join('gateway_agents as g', function joinVersion() {
      this.on('g.id', 'p.id').andOn('g.version', 'p.version');
    })
    .where('p.account', account)
    .orderBy([{ column: 'p.published_at', order: 'desc' }, { column: 'p.id' }, { column: 'p.version', order: 'desc' }])
    .select('p.*', 'g.manifest');
  const { byVersion: earned, byDay } = await earningsOf(db, account);
  const credentials = new Map<string, boolean>();
  let total_micros = 0;
  const versions: MyVersion[] = [];
  for (const row of rows) {
    const manifest = typeof row.manifest === 'string' ? JSON.parse(row.manifest) : row.manifest;
    const view = publicationView(row, manifest.license);
    if (!credentials.has(view.id)) credentials.set(view.id, await deps.credentialSet(view.id));
    const figures = earned.get(view.agent) ?? { calls: 0, share_micros: 0, royalties_micros: 0 };
    const version_micros = figures.share_micros + figures.royalties_micros;
    total_micros += version_micros;
    versions.push({
      ...view,
      credential_set: credentials.get(view.id)!,
      evaluations: await deps.evaluationsOf(view.agent),
      earned: { calls: figures.calls, share: formatMoney(figures.share_micros), royalties: formatMoney(figures.royalties_micros), total: formatMoney(version_micros) },
    });
  }
  return { currency: 'EUR', versions, total: formatMoney(total_micros), by_day: earningsByDay(byDay, now) };
}
