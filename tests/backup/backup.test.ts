/**
 * The backup drill (gateway §7 "Backups"), on every test run: a hosted gateway with traffic
 * (sign-ups, calls, an approval, delegation, admin credit) is copied with `holon backup`,
 * restored elsewhere with `holon restore`, and comes back with the same accounts, keys,
 * receipts and balances, and a journal that sums to zero; a restore into a non-empty database
 * is refused and changes nothing. A backup onto a file that exists, and a restore from a file that
 * is missing or no backup, are one line and exit code 1, with nothing opened or created.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { openStores, parentsFirst } from '../../src/backup/backup.ts';
import { holon as holonCli, type CliResult } from '../helpers/cli.ts';
import { freshStore } from '../helpers/gateway.ts';
import { ADMIN_KEY, bearer, startTestHosted, type TestHosted } from '../helpers/hosted.ts';

const run = promisify(execFile);

/** Runs the `holon` CLI against a store. */
function holon(args: string[], store: { db: string; database_url?: string }) {
  const env = { ...process.env, ...(store.database_url ? { DATABASE_URL: store.database_url } : {}) };
  if (!store.database_url) delete env.DATABASE_URL;
  return run(process.execPath, ['src/bin.mjs', ...args, '--db', store.db], { env });
}

/** What must survive: accounts, receipts, balances, approvals. */
async function snapshot(hosted: TestHosted) {
  const knex = hosted.running.db.knex;
  return {
    accounts: await knex('hosted_accounts').orderBy('handle').select('handle', 'email'),
    keys: await knex('hosted_keys').orderBy('prefix').select('prefix', 'sha256', 'mandate'),
    receipts: (await knex('gateway_receipts').orderBy('id').select('id', 'document')).map((r) => [r.id, typeof r.document === 'string' ? JSON.parse(r.document) : r.document]),
    approvals: await knex('gateway_approvals').orderBy('id').select('id', 'status'),
    files: (await knex('hosted_files').orderBy('id').select('id', 'owner', 'content_type', 'sha256', 'bytes')).map((r) => ({ ...r, bytes: Buffer.from(r.bytes).toString('hex') })),
    balances: (await hosted.http.get('/v0/accounts').set(bearer(ADMIN_KEY)).expect(200)).body,
    chain: await chainPoint(hosted),
  };
}

/** The journal's hash chain now: entries chained and the last link's hash. */
async function chainPoint(hosted: TestHosted): Promise<{ size: number; head: string | null }> {
  const { size, head } = (await hosted.http.get('/v0/journal/checkpoint').set(bearer(ADMIN_KEY)).expect(200)).body;
  return { size, head };
}

/** The sum of every journal line, micro-units: zero when the journal balances. */
async function journalSum(store: { db: string; database_url?: string }): Promise<number> {
  const { stores, close } = await openStores(store.db, store.database_url);
  try {
    const ledger = stores.find((s) => s.owns('clearing_postings'))!.knex;
    const [{ total }] = await ledger('clearing_postings').sum('delta as total');
    return Number(total);
  } finally {
    await close();
  }
}

test('a hosted gateway with traffic is backed up, restored elsewhere and comes back the same', async () => {
  const scratch = await mkdtemp(path.join(tmpdir(), 'holon-backup-'));
  const file = path.join(scratch, 'backup.jsonl');
  const first = await startTestHosted();
  let second: TestHosted | null = null;
  const target = await freshStore();
  try {
    const alice = await first.signup();
    const bob = await first.signup();
    await first.http.post('/v0/calls').set(bearer(alice.agent)).send({ mandate: alice.mandate, agent: 'gt/run', input: { do: 'ok' } }).expect(200);
    await first.http.post('/v0/calls').set(bearer(bob.agent)).send({ mandate: bob.mandate, agent: 'gto/pass', input: { calls: [{ agent: 'gt/run' }], do: 'ok' } }).expect(200);
    await first.http.post('/v0/mandates').set(bearer(alice.human)).send({ id: 'careful', grantee: `${alice.handle}/bot`, allow: { agents: ['*'] }, approval: { above: '0.05' }, budget: { total: '3.00' } }).expect(201);
    const held = await first.http.post('/v0/calls').set(bearer(alice.human)).send({ mandate: `${alice.handle}/careful`, agent: 'gt/run', input: { do: 'ok' } }).expect(202);
    await first.http.post(`/v0/approvals/${held.body.approval.id}`).set(bearer(alice.human)).send({}).expect(200);
    await first.http.post('/v0/calls').set(bearer(bob.human)).send({ mandate: bob.mandate, agent: 'gt/run', input: { do: 'unbilled_error' } }).expect(502);
    await first.http.post('/v0/admin/credit').set(bearer(ADMIN_KEY)).send({ account: bob.handle, amount: '3.00' }).expect(200);
    // A file with every byte value, so an encoding that is not byte-exact shows.
    const bytes = Buffer.from(Array.from({ length: 512 }, (_, i) => i % 256));
    await first.http.post('/v0/files').set(bearer(alice.agent)).set('content-type', 'application/octet-stream').send(bytes).expect(201);
    // A second file: the backup reads a table of files one row at a time.
    await first.http.post('/v0/files').set(bearer(bob.agent)).set('content-type', 'text/plain').send(Buffer.from('second')).expect(201);
    await first.running.outbox.drain();
    const before = await snapshot(first);
    assert.equal(before.receipts.length, 5);
    assert.equal(before.files.length, 2);
    assert.deepEqual(before.files.map((f) => f.bytes).sort(), [bytes.toString('hex'), Buffer.from('second').toString('hex')].sort());
    await first.close({ keep: true });

    await holon(['backup', '--out', file], first.store);
    await holon(['restore', '--in', file], target);
    const again = await holon(['restore', '--in', file], target).then(() => null, (error) => error as { code: number; stderr: string });
    assert.equal(again?.code, 1);
    assert.match(again!.stderr, /refusing to restore into a database that is not empty/);

    assert.equal(await journalSum(target), 0);
    second = await startTestHosted({ store: target });
    assert.deepEqual(await snapshot(second), before);
    // The restored keys work, and the counters go on: the next receipt id is new.
    const me = await second.http.get('/v0/me').set(bearer(alice.human)).expect(200);
    assert.equal(me.body.handle, alice.handle);
    const next = await second.http.post('/v0/calls').set(bearer(alice.agent)).send({ mandate: alice.mandate, agent: 'gt/run', input: { do: 'ok' } }).expect(200);
    assert.ok(!before.receipts.some(([id]) => id === next.body.receipt.id), `receipt id ${next.body.receipt.id} was reused`);
    // The restore turned the chain's trigger off only while it loaded: the new call's settlement is chained.
    await second.running.outbox.drain();
    assert.equal((await chainPoint(second)).size, before.chain.size + 1);
  } finally {
    await second?.close();
    await rm(first.store.db, { recursive: true, force: true });
    await rm(target.db, { recursive: true, force: true });
    await rm(scratch, { recursive: true, force: true });
  }
});

test('a restore orders rows that refer to rows of their own table parents first, whatever order the backup holds them in', () => {
  // A chain written children first, and a row with two parent columns (a receipt's parent and a reversal's target, say).
  const chain = Array.from({ length: 2000 }, (_, n) => ({ id: `r${n}`, parent: n === 0 ? null : `r${n - 1}`, other: null as string | null })).reverse();
  const both = { id: 'both', parent: 'r5', other: 'r1999' };
  const ordered = parentsFirst([...chain, both], ['parent', 'other']);
  assert.equal(ordered.length, 2001);
  const position = new Map(ordered.map((row, index) => [row.id, index]));
  for (const row of [...chain, both]) {
    for (const parent of [row.parent, row.other]) if (parent !== null) assert.ok(position.get(parent)! < position.get(row.id)!, `${parent} before ${row.id}`);
  }
  // Keyed by txn_id (the journal's transactions), with a row's key falling back to it.
  assert.deepEqual(parentsFirst([{ txn_id: 'b', reverses: 'a' }, { txn_id: 'a', reverses: null }], ['reverses'], 'txn_id').map((row) => row.txn_id), ['a', 'b']);
  // Rows that do not depend on each other keep the backup's order.
  assert.deepEqual(parentsFirst([{ id: 'c', parent: null }, { id: 'a', parent: null }, { id: 'b', parent: 'c' }], ['parent']).map((row) => row.id), ['c', 'a', 'b']);
  assert.throws(() => parentsFirst([{ id: 'x', parent: 'gone' }], ['parent']), /rows refer to parents missing from the backup/);
  assert.throws(() => parentsFirst([{ id: 'x', parent: 'y' }, { id: 'y', parent: 'x' }], ['parent']), /or to each other in a cycle/);
  assert.throws(() => parentsFirst([{ id: 'x', parent: 'x' }], ['parent']), /or to each other in a cycle/);
});

/** Runs `holon ...args --db` on a store, killed after 60 s so that a hang fails the test. */
function cli(args: string[], store: { db: string; database_url?: string }): Promise<CliResult> {
  return holonCli([...args, '--db', store.db], { env: { DATABASE_URL: store.database_url }, timeout_ms: 60_000 });
}

/** The PGlite directory locks of a store's data directory that are still taken (none on Postgres). */
const takenLocks = (store: { db: string; database_url?: string }) => ['gateway', 'clearing'].filter((dir) => !store.database_url && existsSync(path.join(store.db, `${dir}.lock`)));

/** The tables of a Postgres database (what a restore that opened it would have migrated). */
async function tablesOf(database_url: string): Promise<number> {
  const client = new pg.Client({ connectionString: database_url });
  await client.connect();
  try {
    const { rows } = await client.query(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'`);
    return rows[0].n;
  } finally {
    await client.end();
  }
}

test('holon backup onto a file that exists: one line naming it, exit 1, the file untouched and the database free for the next command', async () => {
  const scratch = await mkdtemp(path.join(tmpdir(), 'holon-backup-'));
  const store = await freshStore();
  try {
    const taken = path.join(scratch, 'taken.jsonl');
    await writeFile(taken, 'yesterday\n');
    const refused = await cli(['backup', '--out', taken], store);
    assert.deepEqual(refused, { code: 1, stdout: '', stderr: `holon backup: ${taken} exists: a backup never overwrites a file; choose another file or remove it\n` });
    assert.equal(await readFile(taken, 'utf8'), 'yesterday\n');
    assert.deepEqual(takenLocks(store), []);

    const missingDir = path.join(scratch, 'no-such-dir', 'b.jsonl');
    const nowhere = await cli(['backup', '--out', missingDir], store);
    assert.deepEqual(nowhere, { code: 1, stdout: '', stderr: `holon backup: cannot write ${missingDir}: the directory ${path.dirname(missingDir)} does not exist\n` });

    // The next command opens the same database at once, and writes a backup a restore accepts.
    const fresh = path.join(scratch, 'fresh.jsonl');
    const next = await cli(['backup', '--out', fresh], store);
    assert.equal(next.code, 0, next.stderr);
    assert.match(next.stdout, new RegExp(`^backed up \\d+ rows to ${fresh.replaceAll('.', '\\.')}\\n$`));
    assert.deepEqual(JSON.parse((await readFile(fresh, 'utf8')).split('\n')[0]).holon_backup, 1);
    assert.deepEqual(takenLocks(store), []);
  } finally {
    await rm(store.db, { recursive: true, force: true });
    await rm(scratch, { recursive: true, force: true });
  }
});

test('holon restore from a file that is missing, a directory or no backup: one line naming it, exit 1, no database created or touched', async () => {
  const scratch = await mkdtemp(path.join(tmpdir(), 'holon-restore-'));
  // On PGlite a directory that does not exist yet (a restore that opened it would create and migrate it); on Postgres an empty database.
  const base = await freshStore();
  const target = { ...base, db: path.join(scratch, 'restored') };
  try {
    const missing = path.join(scratch, 'missing.jsonl');
    const folder = path.join(scratch, 'folder');
    await mkdir(folder);
    const text = path.join(scratch, 'notes.txt');
    await writeFile(text, 'a;b\n1;2\n');
    const empty = path.join(scratch, 'empty.jsonl');
    await writeFile(empty, '');
    const future = path.join(scratch, 'future.jsonl');
    await writeFile(future, `${JSON.stringify({ holon_backup: 2, migrations: [] })}\n`);
    const header = `{"holon_backup": 1, "migrations": [...]}`;
    const cases: Array<[string, string]> = [
      [missing, `${missing} does not exist`],
      [folder, `${folder} is a directory, not a backup file`],
      [text, `${text} is not a Holon backup: its first line is not a backup header ${header}`],
      [empty, `${empty} is not a Holon backup: its first line is not a backup header ${header}`],
      [future, `${future} is a Holon backup of format 2; this version reads format 1`],
    ];
    for (const [file, line] of cases) {
      const refused = await cli(['restore', '--in', file], target);
      assert.deepEqual(refused, { code: 1, stdout: '', stderr: `holon restore: ${line}\n` }, file);
      assert.equal(existsSync(target.db), false, `a restore from ${file} created ${target.db}`);
      if (target.database_url) assert.equal(await tablesOf(target.database_url), 0, `a restore from ${file} migrated the database`);
    }
  } finally {
    await rm(base.db, { recursive: true, force: true });
    await rm(scratch, { recursive: true, force: true });
  }
});
