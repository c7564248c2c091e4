/**
 * What `holon audit` reads (issue 23 §3): a live database (`DATABASE_URL`, or the PGlite
 * directories of `--db`), or a backup file loaded, line by line, into a scratch PGlite database in
 * a temporary directory, so the audit runs the same cursor queries on both and its memory stays
 * bounded whatever the journal's size.
 */
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Knex } from 'knex';
import { openDatabase } from '../db/index.ts';
import type { AuditSource } from './audit.ts';
import { checkBackupIn, jsonColumns, openStores } from './backup.ts';

/** The tables an audit reads; a backup's other rows are skipped. */
const AUDITED = new Set(['clearing_journal_chain', 'clearing_journal_batches', 'clearing_transactions', 'clearing_postings', 'clearing_accounts', 'clearing_machinery_balances', 'gateway_receipts', 'gateway_identity']);

/** Rows inserted into the scratch database per statement: 200. */
const LOAD_ROWS = 200;

/** An open source and how to close it (and remove its scratch directory). */
export interface OpenedSource {
  source: AuditSource;
  close(): Promise<void>;
}

/** The live database of a gateway or binding: `database_url` when set, else the PGlite directories `<dir>/gateway` and `<dir>/clearing` (the gateway must be stopped). */
export async function openLiveSource(dir: string, database_url = process.env.DATABASE_URL): Promise<OpenedSource> {
  const { stores, close } = await openStores(dir, database_url);
  const clearing = stores.length === 1 ? stores[0].knex : stores[1].knex;
  return { source: { clearing, gateway: stores[0].knex }, close };
}

/**
 * The backup `file` (`backup.ts` format) loaded into a scratch PGlite database: only the audited
 * tables, as written, with every trigger and foreign key off (`session_replication_role =
 * replica`), so a tampered copy loads as it is and the audit finds what is wrong with it. Throws
 * naming the file and line that is not a backup line.
 */
export async function openBackupSource(file: string): Promise<OpenedSource> {
  await checkBackupIn(file);
  const dir = await mkdtemp(path.join(tmpdir(), 'holon-audit-'));
  const remove = () => rm(dir, { recursive: true, force: true });
  let database;
  try {
    database = await openDatabase({ dir: path.join(dir, 'scratch') });
  } catch (error) {
    await remove();
    throw error;
  }
  const close = async () => {
    await database.close();
    await remove();
  };
  try {
    await database.knex.transaction((trx) => loadBackup(trx, file));
  } catch (error) {
    await close();
    throw error;
  }
  return { source: { clearing: database.knex, gateway: database.knex }, close };
}

/** Loads the audited rows of `file` into `trx`, `LOAD_ROWS` at a time, after removing the rows the migrations seeded. */
async function loadBackup(trx: Knex.Transaction, file: string): Promise<void> {
  await trx.raw('SET LOCAL session_replication_role = replica');
  for (const table of ['gateway_identity', 'clearing_machinery_balances', 'clearing_accounts']) await trx(table).delete();
  const json = new Map<string, Set<string>>();
  for (const table of AUDITED) json.set(table, await jsonColumns(trx, table));
  let batch: Record<string, unknown>[] = [];
  let batchTable = '';
  const flush = async () => {
    if (batch.length > 0) await trx(batchTable).insert(batch);
    batch = [];
  };
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  let number = 0;
  for await (const line of lines) {
    number += 1;
    if (number === 1 || line === '') continue;
    let entry: { table?: unknown; row?: Record<string, unknown> };
    try {
      entry = JSON.parse(line);
    } catch {
      throw new Error(`${file} line ${number} is not JSON: the backup is damaged`);
    }
    if (typeof entry.table !== 'string' || !AUDITED.has(entry.table) || typeof entry.row !== 'object' || entry.row === null) continue;
    if (entry.table !== batchTable || batch.length >= LOAD_ROWS) {
      await flush();
      batchTable = entry.table;
    }
    const columns = json.get(entry.table)!;
    batch.push(Object.fromEntries(Object.entries(entry.row).map(([k, v]) => [k, columns.has(k) && v !== null ? JSON.stringify(v) : v])));
  }
  await flush();
}
