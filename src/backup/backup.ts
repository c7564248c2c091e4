/**
 * Backups (gateway §7 "Backups"): `holon backup --out file.jsonl` copies every row of every
 * table and every sequence's counter; `holon restore --in file.jsonl` loads that copy into an
 * empty database, in one transaction per database, counters included, on PGlite or Postgres.
 *
 * The file is JSON lines: a header `{"holon_backup": 1, "migrations": [...]}`, then one
 * `{"table", "row"}` line per row and one `{"sequence", "last_value", "is_called"}` per counter;
 * `bytea` values (uploaded files) are written as base64 text and decoded on restore.
 * A database is a list of stores: on Postgres one (`DATABASE_URL` holds the gateway and the
 * reference binding); on PGlite two directories, `gateway/` and `clearing/`, where the binding's
 * `clearing_*` tables live in `clearing/` and everything else in `gateway/`, so a backup of
 * either restores into the other. Account balances are derived from the journal by its own
 * trigger: they are restored as the journal replays, then checked against the copy.
 */
import { constants, createReadStream } from 'node:fs';
import { access, lstat, open, unlink } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import path from 'node:path';
import type { Knex } from 'knex';
import { int, openDatabase } from '../db/index.ts';

/** The format version written in the header. */
export const BACKUP_FORMAT = 1;

/** One database a backup reads or a restore writes, and which tables are its. */
export interface Store {
  knex: Knex;
  owns: (table: string) => boolean;
}

/**
 * The tables a backup leaves out: knex's own bookkeeping, and the unlogged counters and answers
 * several processes share (migration 019): rate-limit windows and 10-minute approval answers,
 * not records.
 */
const SKIPPED = new Set(['knex_migrations', 'knex_migrations_lock', 'hosted_rate_limits', 'gateway_approval_answers']);

/** Columns derived from other rows by triggers: restored as 0, rebuilt by the rows that derive them. */
const DERIVED: Record<string, Record<string, unknown>> = { clearing_accounts: { balance: 0 }, clearing_machinery_balances: { balance: 0 } };

/** The trigger that chains each journal entry at commit (`src/clearing/sql/clearing_chain_entry.sql`); off while a restore loads the links with the entries. */
const CHAIN_TRIGGER = 'clearing_transactions_chained';

/**
 * Loading order the foreign keys do not show: the posting trigger adds each posting to its
 * account's balance row or its machinery account's stripes, and refuses an account with neither,
 * so the accounts and the stripes (restored at zero) must exist before the postings.
 */
const TRIGGER_PARENTS: Record<string, string[]> = { clearing_postings: ['clearing_accounts', 'clearing_machinery_balances'] };

/** The stores of a target: one Postgres, or the two PGlite directories. */
export function storesOf(gateway: Knex, clearing: Knex | null): Store[] {
  if (clearing === null) return [{ knex: gateway, owns: () => true }];
  return [
    { knex: gateway, owns: (table) => !table.startsWith('clearing_') },
    { knex: clearing, owns: (table) => table.startsWith('clearing_') },
  ];
}

/**
 * Opens the stores of a gateway's data: `database_url` (default `DATABASE_URL`) when set, else the
 * PGlite directories `<dir>/gateway` and `<dir>/clearing` (locked: the gateway must be stopped).
 */
export async function openStores(dir: string, database_url = process.env.DATABASE_URL): Promise<{ stores: Store[]; close(): Promise<void> }> {
  if (database_url) {
    const database = await openDatabase({ url: database_url });
    return { stores: storesOf(database.knex, null), close: database.close };
  }
  const gateway = await openDatabase({ dir: path.join(dir, 'gateway') });
  try {
    const clearing = await openDatabase({ dir: path.join(dir, 'clearing') });
    return { stores: storesOf(gateway.knex, clearing.knex), close: async () => void (await Promise.all([gateway.close(), clearing.close()])) };
  } catch (error) {
    await gateway.close();
    throw error;
  }
}

async function tablesOf(db: Knex | Knex.Transaction, store: Store): Promise<string[]> {
  const rows = await db.raw(`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`);
  return rows.rows.map((r: { table_name: string }) => r.table_name).filter((t: string) => !SKIPPED.has(t) && store.owns(t));
}

async function sequencesOf(db: Knex | Knex.Transaction, store: Store, tables: readonly string[]): Promise<string[]> {
  const rows = await db.raw(`SELECT sequence_name FROM information_schema.sequences WHERE sequence_schema = current_schema() ORDER BY sequence_name`);
  // A sequence belongs to the store owning the table whose name it starts with (`clearing_postings_id_seq`), else to the gateway's.
  return rows.rows.map((r: { sequence_name: string }) => r.sequence_name).filter((s: string) => store.owns(s) || tables.some((t) => s.startsWith(`${t}_`)));
}

/** The columns of `table` whose type is one of `types` (`information_schema` data types). */
async function columnsOfType(db: Knex | Knex.Transaction, table: string, types: readonly string[]): Promise<Set<string>> {
  const rows = await db.raw(`SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? AND data_type = ANY(?)`, [table, [...types]]);
  return new Set(rows.rows.map((r: { column_name: string }) => r.column_name));
}

/** The json/jsonb columns of a table, which need their values written as JSON text. */
export const jsonColumns = (db: Knex | Knex.Transaction, table: string) => columnsOfType(db, table, ['json', 'jsonb']);

/** The bytea columns of a table (uploaded files): written to the backup as base64 text, decoded on restore. */
const byteaColumns = (db: Knex | Knex.Transaction, table: string) => columnsOfType(db, table, ['bytea']);

/** `row` with the values of `columns` passed through `convert` (nulls kept). */
function convertColumns(row: Record<string, unknown>, columns: ReadonlySet<string>, convert: (value: any) => unknown): Record<string, unknown> {
  if (columns.size === 0) return row;
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, columns.has(k) && v !== null ? convert(v) : v]));
}

/** Tables in an order where every foreign key points to a table already loaded; and each table's self-referencing columns. */
async function loadOrder(db: Knex | Knex.Transaction, tables: readonly string[]): Promise<{ order: string[]; selfRefs: Map<string, string[]> }> {
  const rows = await db.raw(`
    SELECT child.relname AS child, parent.relname AS parent, att.attname AS column
    FROM pg_constraint c
    JOIN pg_class child ON child.oid = c.conrelid
    JOIN pg_class parent ON parent.oid = c.confrelid
    JOIN pg_attribute att ON att.attrelid = c.conrelid AND att.attnum = c.conkey[1]
    WHERE c.contype = 'f' AND child.relnamespace = current_schema()::regnamespace`);
  const parents = new Map<string, Set<string>>(tables.map((t) => [t, new Set()]));
  const selfRefs = new Map<string, string[]>();
  for (const { child, parent, column } of rows.rows as Array<{ child: string; parent: string; column: string }>) {
    if (child === parent) selfRefs.set(child, [...(selfRefs.get(child) ?? []), column]);
    else if (parents.has(child) && parents.has(parent)) parents.get(child)!.add(parent);
  }
  for (const [child, extra] of Object.entries(TRIGGER_PARENTS)) {
    for (const parent of extra) if (parents.has(child) && parents.has(parent)) parents.get(child)!.add(parent);
  }
  const order: string[] = [];
  while (order.length < tables.length) {
    const ready = tables.filter((t) => !order.includes(t) && [...parents.get(t)!].every((p) => order.includes(p)));
    if (ready.length === 0) throw new Error(`the foreign keys among ${tables.join(', ')} form a cycle`);
    order.push(...ready);
  }
  return { order, selfRefs };
}

/** The migration names applied to a database (the header records them; a restore needs the same). */
async function migrationsOf(db: Knex): Promise<string[]> {
  return (await db('knex_migrations').orderBy('name').pluck('name')) as string[];
}

/** Rows a backup holds in memory at once, per table: 500; 1 for a table of files (up to 20 MiB a row). */
const FETCH_ROWS = 500;
const FETCH_ROWS_WITH_FILES = 1;

/**
 * The rows of `query` (SQL with no bindings), read through the cursor `name` of the transaction
 * `trx` (Postgres and PGlite alike) `batch` rows at a time, so memory does not grow with the
 * database. Two cursors of one transaction need two names.
 */
export async function* cursorRows(trx: Knex.Transaction, query: string, batch: number, name = 'holon_backup_rows'): AsyncGenerator<Record<string, any>> {
  await trx.raw(`DECLARE ${name} NO SCROLL CURSOR FOR ${query}`);
  try {
    for (;;) {
      const { rows } = await trx.raw(`FETCH ${batch} FROM ${name}`);
      if (rows.length === 0) return;
      yield* rows;
    }
  } finally {
    await trx.raw(`CLOSE ${name}`);
  }
}

/** Every row of `table` through {@link cursorRows}, `batch` at a time. */
const rowsOf = (trx: Knex.Transaction, table: string, batch: number) => cursorRows(trx, `SELECT * FROM "${table}"`, batch);

/** Bytes of backup lines gathered before one write to the file: 64 KiB (plus the line that passed it). */
const WRITE_CHUNK_BYTES = 64 * 1024;

/** Bytes read of a backup's first line when checking its header: 64 KiB (a header lists its migration names, a few KiB). */
const MAX_HEADER_BYTES = 64 * 1024;

/** The first line of a backup. */
export interface BackupHeader {
  holon_backup: number;
  /** The migration names applied to the copied database; a restore needs the same. */
  migrations: string[];
  created_at?: string;
}

/** A file-system error about `file` as one sentence that names it (ENOENT, EEXIST, EISDIR, EACCES ...). */
function fileFault(file: string, error: unknown, doing: 'read' | 'write'): Error {
  switch ((error as NodeJS.ErrnoException).code) {
    case 'ENOENT':
      return new Error(doing === 'read' ? `${file} does not exist` : `cannot write ${file}: the directory ${path.dirname(file)} does not exist`);
    case 'EEXIST':
      return new Error(`${file} exists: a backup never overwrites a file; choose another file or remove it`);
    case 'EISDIR':
      return new Error(`${file} is a directory, not a backup file`);
    case 'EACCES':
    case 'EPERM':
      return new Error(`cannot ${doing} ${file}: permission denied`);
    default:
      return new Error(`cannot ${doing} ${file}: ${(error as Error).message.split('\n')[0]}`);
  }
}

/** Whether `error` comes from the file system (it carries an errno code such as `ENOENT`). */
const isFileError = (error: unknown): boolean => typeof (error as NodeJS.ErrnoException).code === 'string' && typeof (error as NodeJS.ErrnoException).errno === 'number';

/**
 * Checks, before any database is opened, that a backup can be written to `out`: nothing exists
 * there (a backup never overwrites) and its directory is writable. Throws an Error whose message
 * is one sentence naming the file. `backup` still creates the file exclusively, so a file that
 * appears in between is refused the same way.
 */
export async function checkBackupOut(out: string): Promise<void> {
  try {
    await lstat(out);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw fileFault(out, error, 'write');
    await access(path.dirname(out), constants.W_OK).catch((fault) => {
      throw fileFault(out, fault, 'write');
    });
    return;
  }
  throw fileFault(out, Object.assign(new Error('exists'), { code: 'EEXIST' }), 'write');
}

/**
 * Writes every row and counter of `stores` to `out`, a file path that must not exist (created
 * exclusively; `EEXIST` and every other file error is thrown as a sentence naming the file). Each
 * store is read in one repeatable-read transaction, so a Postgres backup is consistent while the
 * gateway runs, a few rows at a time (`FETCH_ROWS`), written `WRITE_CHUNK_BYTES` at a time and
 * synced to disk at the end. A backup that fails part-way removes its file, so a partial copy is
 * never restored. Returns the number of rows written.
 */
export async function backup(stores: readonly Store[], out: string): Promise<number> {
  const file = await open(out, 'wx').catch((error) => {
    throw fileFault(out, error, 'write');
  });
  let chunk: string[] = [];
  let chunkBytes = 0;
  const flush = async () => {
    // appendFile writes the whole string at the handle's position (a plain write may write part of it).
    if (chunk.length > 0) await file.appendFile(chunk.join(''));
    chunk = [];
    chunkBytes = 0;
  };
  const write = async (value: unknown) => {
    const line = `${JSON.stringify(value)}\n`;
    chunk.push(line);
    chunkBytes += line.length;
    if (chunkBytes >= WRITE_CHUNK_BYTES) await flush();
  };
  let rows = 0;
  let complete = false;
  try {
    await write({ holon_backup: BACKUP_FORMAT, migrations: await migrationsOf(stores[0].knex), created_at: new Date().toISOString() });
    for (const store of stores) {
      await store.knex.transaction(
        async (trx) => {
          const tables = await tablesOf(trx, store);
          for (const table of tables) {
            const bytea = await byteaColumns(trx, table);
            for await (const row of rowsOf(trx, table, bytea.size > 0 ? FETCH_ROWS_WITH_FILES : FETCH_ROWS)) {
              await write({ table, row: convertColumns(row, bytea, (bytes: Uint8Array) => Buffer.from(bytes).toString('base64')) });
              rows += 1;
            }
          }
          for (const sequence of await sequencesOf(trx, store, tables)) {
            const { rows: [state] } = await trx.raw(`SELECT last_value, is_called FROM "${sequence}"`);
            await write({ sequence, last_value: int(state.last_value), is_called: state.is_called });
          }
        },
        { isolationLevel: 'repeatable read' },
      );
    }
    await flush();
    await file.sync();
    complete = true;
  } catch (error) {
    throw isFileError(error) ? fileFault(out, error, 'write') : error;
  } finally {
    await file.close();
    // The failure being reported is the one that matters; a partial file that cannot be removed stays, named by it.
    if (!complete) await unlink(out).catch(() => undefined);
  }
  return rows;
}

/** `line` (a backup's first line) as its header; throws a sentence naming `file` when it is not the header of {@link BACKUP_FORMAT}. */
function parseHeader(file: string, line: string): BackupHeader {
  let header: Record<string, unknown> | null = null;
  try {
    const parsed = JSON.parse(line);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) header = parsed;
  } catch {
    // Not JSON: refused below with every other first line that is not a header.
  }
  if (header === null || !('holon_backup' in header)) {
    throw new Error(`${file} is not a Holon backup: its first line is not a backup header {"holon_backup": ${BACKUP_FORMAT}, "migrations": [...]}`);
  }
  if (header.holon_backup !== BACKUP_FORMAT) throw new Error(`${file} is a Holon backup of format ${JSON.stringify(header.holon_backup)}; this version reads format ${BACKUP_FORMAT}`);
  if (!Array.isArray(header.migrations) || !header.migrations.every((name) => typeof name === 'string')) {
    throw new Error(`${file} is not a Holon backup: its header lists no migrations`);
  }
  return header as unknown as BackupHeader;
}

/**
 * Checks, before any database is opened (or created), that `file` is a backup this version
 * restores: it exists, is a readable file, and its first line (read up to `MAX_HEADER_BYTES`) is
 * the header of {@link BACKUP_FORMAT}. Returns the header; throws an Error whose message is one
 * sentence naming the file.
 */
export async function checkBackupIn(file: string): Promise<BackupHeader> {
  const handle = await open(file, 'r').catch((error) => {
    throw fileFault(file, error, 'read');
  });
  try {
    const buffer = Buffer.alloc(MAX_HEADER_BYTES);
    // A directory opens on Linux; reading it is what fails (EISDIR).
    const { bytesRead } = await handle.read(buffer, 0, MAX_HEADER_BYTES, 0);
    const read = buffer.subarray(0, bytesRead);
    const end = read.indexOf(0x0a);
    return parseHeader(file, read.subarray(0, end === -1 ? read.length : end).toString('utf8'));
  } catch (error) {
    throw isFileError(error) ? fileFault(file, error, 'read') : error;
  } finally {
    await handle.close();
  }
}

/** Reads a backup file: its header, rows by table and counters. Throws naming the file and the line that is not JSON. */
async function readBackup(file: string) {
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  let header: BackupHeader | null = null;
  const rows = new Map<string, Record<string, unknown>[]>();
  const sequences: Array<{ sequence: string; last_value: number; is_called: boolean }> = [];
  let number = 0;
  for await (const line of lines) {
    number += 1;
    if (header === null) {
      header = parseHeader(file, line);
      continue;
    }
    if (line === '') continue;
    let entry;
    try {
      entry = JSON.parse(line);
    } catch {
      throw new Error(`${file} line ${number} is not JSON: the backup is damaged`);
    }
    if (typeof entry.table === 'string') {
      const table = rows.get(entry.table);
      if (table) table.push(entry.row);
      else rows.set(entry.table, [entry.row]);
    } else sequences.push(entry);
  }
  if (header === null) throw new Error(`${file} is empty: it is not a Holon backup`);
  return { header, rows, sequences };
}

/** Whether a store holds only what its migrations seeded (the identity row, the binding's machinery accounts). */
async function isEmpty(trx: Knex.Transaction, tables: readonly string[]): Promise<string | null> {
  for (const table of tables) {
    const query = trx(table);
    if (table === 'gateway_identity') continue;
    if (table === 'clearing_accounts') query.where('kind', 'holder');
    // The migration seeds every machinery account's stripes at zero.
    if (table === 'clearing_machinery_balances') query.whereNot('balance', 0);
    const [{ n }] = await query.count('* as n');
    if (int(n) > 0) return table;
  }
  return null;
}

/**
 * The rows of a self-referencing table ordered so every parent precedes its children (`columns`
 * name the parent, null or absent for none; `key` names the row, which falls back to `txn_id`),
 * in time linear in the rows (a topological sort); rows otherwise keep their order in the backup.
 * Throws when a row refers to a parent missing from the backup, or rows refer to each other in a
 * cycle (a row its own parent included).
 */
export function parentsFirst(rows: Record<string, unknown>[], columns: readonly string[], key = 'id'): Record<string, unknown>[] {
  const keyOf = (row: Record<string, unknown>) => row[key] ?? row.txn_id;
  // How many of its parents each row still waits for, and who waits for each parent.
  const waiting = new Map<Record<string, unknown>, number>();
  const children = new Map<unknown, Record<string, unknown>[]>();
  // The rows in the order they become ready: the answer, once every row is in it.
  const ready: Record<string, unknown>[] = [];
  for (const row of rows) {
    const parents = new Set(columns.map((column) => row[column]).filter((parent) => parent !== null && parent !== undefined));
    waiting.set(row, parents.size);
    if (parents.size === 0) ready.push(row);
    for (const parent of parents) {
      const list = children.get(parent);
      if (list) list.push(row);
      else children.set(parent, [row]);
    }
  }
  for (let next = 0; next < ready.length; next++) {
    for (const child of children.get(keyOf(ready[next])) ?? []) {
      const left = waiting.get(child)! - 1;
      waiting.set(child, left);
      if (left === 0) ready.push(child);
    }
  }
  if (ready.length < rows.length) throw new Error('rows refer to parents missing from the backup, or to each other in a cycle');
  return ready;
}

/**
 * Loads a backup into empty stores (one transaction each). Throws, changing nothing, when a
 * store is not empty, when the migrations differ, or when the restored balances do not match
 * the copy's. Returns the number of rows restored.
 */
export async function restore(stores: readonly Store[], file: string): Promise<number> {
  const { header, rows, sequences } = await readBackup(file);
  const here = await migrationsOf(stores[0].knex);
  if (JSON.stringify(here) !== JSON.stringify(header.migrations)) {
    throw new Error(`the backup was taken at migrations ${header.migrations.join(', ')}; this database is at ${here.join(', ')}`);
  }
  let restored = 0;
  for (const store of stores) {
    await store.knex.transaction(async (trx) => {
      const tables = await tablesOf(trx, store);
      const occupied = await isEmpty(trx, tables);
      if (occupied !== null) throw new Error(`refusing to restore into a database that is not empty (${occupied} has rows)`);
      if (tables.includes('gateway_identity')) await trx('gateway_identity').delete();
      if (tables.includes('clearing_machinery_balances')) await trx('clearing_machinery_balances').delete();
      if (tables.includes('clearing_accounts')) await trx('clearing_accounts').delete();
      // The journal's links come from the backup with its entries: chaining the entries again would link each twice.
      if (tables.includes('clearing_journal_batches')) await trx.raw(`ALTER TABLE clearing_transactions DISABLE TRIGGER ${CHAIN_TRIGGER}`);
      const { order, selfRefs } = await loadOrder(trx, tables);
      for (const table of order) {
        const json = await jsonColumns(trx, table);
        const bytea = await byteaColumns(trx, table);
        const self = selfRefs.get(table);
        const source = rows.get(table) ?? [];
        const loaded = self ? parentsFirst(source, self, table === 'clearing_transactions' ? 'txn_id' : 'id') : source;
        for (const row of loaded) {
          const values = convertColumns(convertColumns(row, json, JSON.stringify), bytea, (text: string) => Buffer.from(text, 'base64'));
          await trx(table).insert({ ...values, ...DERIVED[table] });
          restored += 1;
        }
      }
      for (const state of sequences.filter((s) => tables.some((t) => s.sequence.startsWith(`${t}_`)) || store.owns(s.sequence))) {
        await trx.raw(`SELECT setval('"${state.sequence}"', ?, ?)`, [Math.max(state.last_value, 1), state.is_called]);
      }
      if (tables.includes('clearing_journal_batches')) await trx.raw(`ALTER TABLE clearing_transactions ENABLE TRIGGER ${CHAIN_TRIGGER}`);
      for (const row of tables.includes('clearing_accounts') ? rows.get('clearing_accounts') ?? [] : []) {
        const now = await trx('clearing_accounts').where({ id: row.id }).first('balance');
        if (int(now.balance) !== int(row.balance)) throw new Error(`account ${row.id} restored with balance ${now.balance}, the copy says ${row.balance}: the backup is inconsistent`);
      }
    });
  }
  return restored;
}
