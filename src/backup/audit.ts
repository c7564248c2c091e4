/**
 * `holon audit` (issue 23 §3): checks the books of a live database or of a backup loaded into a
 * scratch database (`audit-source.ts`), reading every table through cursors, a bounded number of
 * rows at a time, so its memory does not grow with the journal. In this order, stopping at the
 * first failure, which names the entry (or account, or receipt) and says why:
 *
 * 1. The hash chain, position by position (`chain.ts`: migration 020's one-entry links, then the
 *    batch links of migration 026): the chain has no gap, every chained entry is in the journal,
 *    its postings sum to zero, its `terms_text` (when the binding wrote one, migration 027) is the
 *    canonical JSON of its terms, its hash (a one-entry link's) or leaf (a batch link's) is what its
 *    contents give, and each batch link's Merkle root and hash are what its leaves and the link
 *    before give. With a checkpoint: the link ending at its `size` hashes to its `head` (the
 *    checkpoint is a prefix of this journal).
 * 2. Every entry of the journal is in the chain (none was written without its hash), once.
 * 3. Every account's balance, as the binding keeps it, is the sum of its postings.
 * 4. Every billed receipt with an own cost has exactly one settlement (`settle:<gateway>:<receipt>`)
 *    of that amount, and every such settlement a billed receipt (gateway §4, clearing-contract §13).
 */
import canonicalize from 'canonicalize';
import type { Knex } from 'knex';
import { parseMoney } from '../contracts/money.ts';
import type { ChainPoint } from '../signing/checkpoint.ts';
import { cursorRows } from './backup.ts';
import { batchHash, chainHash, entryLeaf, merkleRoot } from './chain.ts';

/** Rows fetched from a cursor at once: 500 (an entry row carries its postings). */
const FETCH_ROWS = 500;

/** What an audit reads: the binding's tables (`clearing`) and the gateway's (`gateway`, absent for a binding's own database). */
export interface AuditSource {
  clearing: Knex;
  gateway: Knex | null;
}

/** Why the books fail, naming the first thing that does. */
export interface AuditFailure {
  /** The journal entry (transaction id) that fails, when the failure is an entry's. */
  entry: string | null;
  /** Its position in the chain, when it has one. */
  position: number | null;
  /** One sentence: what is wrong, with the figures. */
  reason: string;
}

/** What an audit found: the failure (null when the books pass) and what it read. */
export interface AuditReport {
  failure: AuditFailure | null;
  /** Entries chained and the head of the chain as recomputed. */
  chain: ChainPoint;
  accounts: number;
  /** Billed receipts with an own cost, each matched to its settlement. */
  settled_receipts: number;
}

/** An entry's columns as both link formats hash it (`t`, null when the entry is gone), its terms' text as the binding wrote it, and the sum of its postings. */
const ENTRY_COLUMNS = `t.txn_id, t.door, t.account, t.amount::text AS amount, t.terms, t.terms_text, t.reverses, t.hold_id, t.reason, t.actor, t.ref, t.memo, t.simulated,
    (SELECT coalesce(json_agg(json_build_object('account', p.account, 'delta', p.delta::text, 'kind', p.kind) ORDER BY p.id), '[]')
       FROM clearing_postings p WHERE p.txn_id = t.txn_id) AS postings,
    (SELECT coalesce(sum(p.delta), 0)::text FROM clearing_postings p WHERE p.txn_id = t.txn_id) AS total`;

/** Migration 020's one-entry links, each with its stored hash and its entry. */
const LINKS_SQL = `SELECT c.position::text AS position, c.txn_id AS chained, c.hash, ${ENTRY_COLUMNS}
  FROM clearing_journal_chain c LEFT JOIN clearing_transactions t ON t.txn_id = c.txn_id ORDER BY c.position`;

/** The batch links of migration 026, a row per entry in order: the link's position, size, root and hash, the entry's stored leaf, and the entry. */
const BATCHES_SQL = `SELECT b.position::text AS position, cardinality(b.entries) AS count, b.root, b.hash, x.n, x.txn_id AS chained, x.leaf, ${ENTRY_COLUMNS}
  FROM clearing_journal_batches b CROSS JOIN LATERAL unnest(b.entries, b.leaves) WITH ORDINALITY AS x(txn_id, leaf, n)
  LEFT JOIN clearing_transactions t ON t.txn_id = x.txn_id ORDER BY b.position, x.n`;

/** An entry row of either query without the link's columns: what its hash covers. */
function entryOf(row: Record<string, any>): Record<string, unknown> {
  const { txn_id, door, account, amount, terms, reverses, hold_id, reason, actor, ref, memo, simulated, postings } = row;
  return { txn_id, door, account, amount, terms, reverses, hold_id, reason, actor, ref, memo, simulated, postings };
}

/** Where the walk of the chain is: entries chained so far and the hash of the last link. */
interface Walk {
  size: number;
  prev: string | null;
}

/** A failure of the entry `row` (chained as `row.chained`) at `position`. */
const entryFailure = (row: Record<string, any>, position: number, reason: string): AuditFailure => ({ entry: row.chained, position, reason });

/**
 * What is wrong with a chained entry by itself: gone from the journal, postings that do not sum to
 * zero, or a `terms_text` that is not the canonical JSON of its terms (the leaf was hashed from the
 * text, so one of the two was changed since); null when none.
 */
function entryFault(row: Record<string, any>, position: number): string | null {
  if (row.txn_id === null) return `entry ${row.chained} at position ${position} is missing from the journal`;
  if (row.total !== '0') return `entry ${row.txn_id} at position ${position} does not sum to zero: its postings sum to ${row.total}`;
  if (row.terms_text !== null) {
    const canonical = canonicalize(row.terms);
    if (row.terms_text !== canonical) return `entry ${row.txn_id} at position ${position} has terms_text ${row.terms_text}, which is not the canonical JSON of its terms, ${canonical}`;
  }
  return null;
}

/** A gap in the positions: the link ending at `position` holds `count` entries, but only `size` came before it. */
const jump = (size: number, position: number, count: number) =>
  `the chain jumps from position ${size} to ${position - count + 1}: ${position - count - size} chained entr${position - count - size === 1 ? 'y is' : 'ies are'} gone`;

/** Why `checkpoint` is not a prefix of the journal, when the link just walked (ending with the entry of `row`) ends at its size with another hash; null otherwise. */
function checkpointFault(walk: Walk, checkpoint: ChainPoint | null, row: Record<string, any>): string | null {
  if (checkpoint === null || walk.size !== checkpoint.size || walk.prev === checkpoint.head) return null;
  return `the checkpoint is not a prefix of this journal: at its size ${checkpoint.size}, the link ending with entry ${row.txn_id} hashes to ${walk.prev}, the checkpoint's head is ${checkpoint.head}`;
}

/** Walks migration 020's one-entry links from the start; answers the failure, if any. */
async function walkLinks(trx: Knex.Transaction, walk: Walk, checkpoint: ChainPoint | null): Promise<AuditFailure | null> {
  for await (const row of cursorRows(trx, LINKS_SQL, FETCH_ROWS, 'holon_audit_links')) {
    const position = Number(row.position);
    if (position !== walk.size + 1) return entryFailure(row, position, jump(walk.size, position, 1));
    const fault = entryFault(row, position);
    if (fault) return entryFailure(row, position, fault);
    const hash = chainHash(entryOf(row), walk.prev);
    if (hash !== row.hash) return entryFailure(row, position, `entry ${row.txn_id} at position ${position} does not match its hash: the chain holds ${row.hash}, its contents and the entry before give ${hash}`);
    walk.prev = hash;
    walk.size = position;
    const behind = checkpointFault(walk, checkpoint, row);
    if (behind) return entryFailure(row, position, behind);
  }
  return null;
}

/** Walks the batch links of migration 026 after the one-entry links; answers the failure, if any. */
async function walkBatches(trx: Knex.Transaction, walk: Walk, checkpoint: ChainPoint | null): Promise<AuditFailure | null> {
  let leaves: string[] = [];
  for await (const row of cursorRows(trx, BATCHES_SQL, FETCH_ROWS, 'holon_audit_batches')) {
    const [end, count, n] = [Number(row.position), Number(row.count), Number(row.n)];
    const position = walk.size + 1;
    if (n === 1) {
      if (end !== walk.size + count) return entryFailure(row, position, jump(walk.size, end, count));
      if (checkpoint !== null && checkpoint.size > walk.size && checkpoint.size < end) {
        return entryFailure(row, position, `the checkpoint is not a prefix of this journal: its size ${checkpoint.size} falls inside the link of positions ${position} to ${end}`);
      }
      leaves = [];
    }
    const fault = entryFault(row, position);
    if (fault) return entryFailure(row, position, fault);
    const leaf = entryLeaf(entryOf(row));
    if (leaf !== row.leaf) return entryFailure(row, position, `entry ${row.txn_id} at position ${position} does not match its hash: its link holds ${row.leaf}, its contents give ${leaf}`);
    leaves.push(leaf);
    walk.size = position;
    if (n < count) continue;
    const root = merkleRoot(leaves);
    const hash = batchHash(walk.prev, root, end);
    if (root !== row.root || hash !== row.hash) {
      return entryFailure(row, position, `the link of positions ${end - count + 1} to ${end} does not match its hash: it holds root ${row.root} and hash ${row.hash}, its entries and the link before give ${root} and ${hash}`);
    }
    walk.prev = hash;
    const behind = checkpointFault(walk, checkpoint, row);
    if (behind) return entryFailure(row, position, behind);
  }
  return null;
}

/** Walks the chain (check 1), both link formats in order; answers its recomputed point, or the first failure. */
async function checkChain(trx: Knex.Transaction, checkpoint: ChainPoint | null): Promise<{ point: ChainPoint; failure: AuditFailure | null }> {
  const walk: Walk = { size: 0, prev: null };
  const failure = (await walkLinks(trx, walk, checkpoint)) ?? (await walkBatches(trx, walk, checkpoint));
  const point = { size: walk.size, head: walk.prev };
  if (failure) return { point, failure };
  if (checkpoint !== null && checkpoint.size > walk.size) {
    return { point, failure: { entry: null, position: null, reason: `the checkpoint is not a prefix of this journal: it has ${checkpoint.size} entries, the journal ${walk.size}` } };
  }
  return { point, failure: null };
}

/** Check 2: the first entry of the journal that is in no link, or one that is in two. */
async function checkUnchained(trx: Knex.Transaction): Promise<AuditFailure | null> {
  // Anti-joins on equality (hashed, bounded memory), whatever statistics the scratch database of a backup has.
  const row = (await trx.raw(`SELECT t.txn_id FROM clearing_transactions t
    WHERE NOT EXISTS (SELECT 1 FROM clearing_journal_chain c WHERE c.txn_id = t.txn_id)
      AND NOT EXISTS (SELECT 1 FROM clearing_journal_batches b, unnest(b.entries) AS x(txn_id) WHERE x.txn_id = t.txn_id)
    ORDER BY t.created_at, t.txn_id LIMIT 1`)).rows[0];
  if (row) return { entry: row.txn_id, position: null, reason: `entry ${row.txn_id} is in the journal but not in the chain: it was written without its hash` };
  const twice = (await trx.raw(`SELECT txn_id FROM (SELECT txn_id FROM clearing_journal_chain UNION ALL SELECT unnest(entries) FROM clearing_journal_batches) AS chained
    GROUP BY txn_id HAVING count(*) > 1 ORDER BY txn_id LIMIT 1`)).rows[0];
  return twice ? { entry: twice.txn_id, position: null, reason: `entry ${twice.txn_id} is chained more than once` } : null;
}

/** Each account with the balance the binding keeps (a holder's row, or a machinery account's stripes) and the sum of its postings. */
const BALANCES_SQL = `SELECT a.id,
    (CASE WHEN a.kind = 'holder' THEN a.balance ELSE (SELECT coalesce(sum(m.balance), 0) FROM clearing_machinery_balances m WHERE m.account = a.id) END)::text AS kept,
    (SELECT coalesce(sum(p.delta), 0) FROM clearing_postings p WHERE p.account = a.id)::text AS lines
  FROM clearing_accounts a ORDER BY a.id`;

/** Check 3: answers the accounts read, or the first whose balance is not the sum of its postings. */
async function checkBalances(trx: Knex.Transaction): Promise<{ accounts: number; failure: AuditFailure | null }> {
  let accounts = 0;
  for await (const row of cursorRows(trx, BALANCES_SQL, FETCH_ROWS, 'holon_audit_balances')) {
    accounts += 1;
    if (row.kept !== row.lines) {
      return { accounts, failure: { entry: null, position: null, reason: `account ${row.id} has balance ${row.kept}, but its postings sum to ${row.lines}` } };
    }
  }
  return { accounts, failure: null };
}

/** A side of the receipt ⇄ settlement join: rows sorted by receipt id (byte order). */
type Sorted = AsyncIterator<Record<string, any>>;

/**
 * Check 4: a merge join of the billed receipts with an own cost (gateway) and the settlements of
 * this gateway (binding), both sorted by receipt id, so neither side is held in memory.
 */
async function checkSettlements(gateway: Knex.Transaction, clearing: Knex.Transaction): Promise<{ settled: number; failure: AuditFailure | null }> {
  const identity = await gateway('gateway_identity').first('id');
  if (!identity) return { settled: 0, failure: null };
  const prefix = `settle:${identity.id}:`;
  const receipts: Sorted = cursorRows(
    gateway,
    `SELECT id, document->'cost'->>'own' AS own FROM gateway_receipts WHERE (document->>'billed')::boolean ORDER BY id COLLATE "C"`,
    FETCH_ROWS,
    'holon_audit_receipts',
  )[Symbol.asyncIterator]();
  const literal = prefix.replaceAll("'", "''");
  const settles: Sorted = cursorRows(
    clearing,
    `SELECT substr(txn_id, ${prefix.length + 1}) AS receipt, txn_id, amount::text AS amount FROM clearing_transactions
      WHERE door = 'settle' AND left(txn_id, ${prefix.length}) = '${literal}' ORDER BY txn_id COLLATE "C"`,
    FETCH_ROWS,
    'holon_audit_settles',
  )[Symbol.asyncIterator]();
  let receipt = await nextBilled(receipts);
  let settle = (await settles.next()).value;
  let settled = 0;
  const fail = (entry: string | null, reason: string) => ({ settled, failure: { entry, position: null, reason } });
  try {
    while (receipt || settle) {
      if (settle && (!receipt || settle.receipt < receipt.id)) return fail(settle.txn_id, `entry ${settle.txn_id} settles receipt ${settle.receipt}, which is not a billed receipt of this gateway`);
      if (!settle || receipt!.id < settle.receipt) return fail(null, `receipt ${receipt!.id} is billed ${receipt!.own} but has no settlement ${prefix}${receipt!.id}`);
      if (String(receipt!.own_micros) !== settle.amount) {
        return fail(settle.txn_id, `entry ${settle.txn_id} settles ${settle.amount} micro-units, but receipt ${receipt!.id} says its own cost is ${receipt!.own} (${receipt!.own_micros} micro-units)`);
      }
      settled += 1;
      receipt = await nextBilled(receipts);
      settle = (await settles.next()).value;
    }
    return { settled, failure: null };
  } finally {
    await receipts.return?.();
    await settles.return?.();
  }
}

/** The next billed receipt with an own cost above zero (a billed call that cost nothing settles nothing), with that cost in micro-units. */
async function nextBilled(receipts: Sorted): Promise<{ id: string; own: string; own_micros: number } | undefined> {
  for (;;) {
    const { value, done } = await receipts.next();
    if (done) return undefined;
    const own_micros = parseMoney(String(value.own));
    if (own_micros > 0) return { id: value.id, own: value.own, own_micros };
  }
}

/** Whether `db` has the gateway's receipts (a binding's own database has not). */
async function hasReceipts(db: Knex.Transaction): Promise<boolean> {
  return (await db.raw(`SELECT to_regclass('gateway_receipts') IS NOT NULL AS present`)).rows[0].present;
}

/**
 * Audits `source`: the four checks above, each store read in one repeatable-read transaction (one
 * consistent snapshot while a gateway runs on Postgres). `checkpoint`: a verified checkpoint the
 * journal must extend.
 */
export async function audit(source: AuditSource, checkpoint: ChainPoint | null = null): Promise<AuditReport> {
  return source.clearing.transaction(
    async (clearing) => {
      const { point, failure } = await checkChain(clearing, checkpoint);
      const report = (failure: AuditFailure | null, accounts = 0, settled_receipts = 0): AuditReport => ({ failure, chain: point, accounts, settled_receipts });
      if (failure) return report(failure);
      const unchained = await checkUnchained(clearing);
      if (unchained) return report(unchained);
      const balances = await checkBalances(clearing);
      if (balances.failure || source.gateway === null) return report(balances.failure, balances.accounts);
      const settle = (gateway: Knex.Transaction) => checkSettlements(gateway, clearing);
      const settlements =
        source.gateway === source.clearing
          ? (await hasReceipts(clearing)) ? await settle(clearing) : { settled: 0, failure: null }
          : await source.gateway.transaction(async (gateway) => ((await hasReceipts(gateway)) ? settle(gateway) : { settled: 0, failure: null }), { isolationLevel: 'repeatable read' });
      return report(settlements.failure, balances.accounts, settlements.settled);
    },
    { isolationLevel: 'repeatable read' },
  );
}
