/**
 * The journal's hash chain (issue 23 §3), one link per transaction since migration 026: for many
 * generated entries, committed as the binding commits them (a few per transaction through
 * `clearing_post_entry`, some written directly, chained at commit by the deferred trigger):
 * - each entry's leaf is SHA-256 of 0x00 and the text migration 020 hashed for it (the entry built
 *   as jsonb, then `clearing_canonical`), byte for byte;
 * - each link holds the entries its transaction wrote through `clearing_post_entry`, in order, and
 *   an entry written some other way is a link of its own; its root is the Merkle tree hash of RFC
 *   6962 §2.1 (computed here from the RFC's recursive definition) and its hash SHA-256 of the
 *   canonical `{prev, root, size}`;
 * - `holon audit` (the `canonicalize` library and SHA-256 in JavaScript, `src/backup/chain.ts`)
 *   recomputes every one.
 * Strings carry quotes, backslashes, control characters, U+2028, non-ASCII and astral characters;
 * optional fields are null or not; amounts span the whole bigint range; terms are JSON objects
 * (nested objects and arrays, numbers, strings, booleans, nulls). A journal chained one entry per
 * link before migration 026 goes on in batch links after it, and a checkpoint kept before still
 * checks.
 *
 * Where `clearing_canonical` and the `canonicalize` library part (since migration 020, and by
 * design: clearing_canonical.sql), the audit is not asked: object keys with characters above
 * U+FFFF (code-point order against RFC 8785's UTF-16 order) and integers beyond 2^53 that lie
 * halfway between two digits strings (PostgreSQL's float8 text and ECMAScript's pick different
 * ones). The binding's terms have fixed ASCII keys and amounts within ±3 × 10^15. For those values
 * a test checks only that the leaves are migration 020's bytes.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import type { Knex } from 'knex';
import { migrationSource } from '../../migrations/index.ts';
import { audit } from '../../src/backup/audit.ts';
import { batchHash, merkleRoot } from '../../src/backup/chain.ts';
import { readChainPoint } from '../../src/clearing/checkpoint.ts';
import { opsText } from '../../src/clearing/ledger-op.ts';
import { openFreshDatabase } from '../helpers/clearing.ts';
import { useOpened } from '../helpers/hooks.ts';

const journal = useOpened('a fresh journal', openFreshDatabase, (fresh) => fresh.dispose());

/** Each entry of the batch links after `position`: its stored leaf and migration 020's text for it hashed as a leaf. */
const LEAVES_020 = `SELECT x.txn_id, x.leaf,
    encode(sha256('\\x00'::bytea || convert_to(clearing_canonical(jsonb_build_object('txn_id', t.txn_id, 'door', t.door,
      'account', t.account, 'amount', t.amount::text, 'terms', t.terms, 'reverses', t.reverses, 'hold_id', t.hold_id, 'reason', t.reason,
      'actor', t.actor, 'ref', t.ref, 'memo', t.memo, 'simulated', t.simulated,
      'postings', coalesce((SELECT jsonb_agg(jsonb_build_object('account', p.account, 'delta', p.delta::text, 'kind', p.kind) ORDER BY p.id)
                              FROM clearing_postings p WHERE p.txn_id = t.txn_id), '[]'::jsonb))), 'UTF8')), 'hex') AS leaf_020
  FROM clearing_journal_batches b CROSS JOIN LATERAL unnest(b.entries, b.leaves) WITH ORDINALITY AS x(txn_id, leaf, n)
  JOIN clearing_transactions t ON t.txn_id = x.txn_id
  WHERE b.position > ? ORDER BY b.position, x.n`;

/** A batch link as stored. */
interface Link {
  position: string;
  entries: string[];
  leaves: string[];
  root: string;
  hash: string;
}

/** The batch links after `position`, in order. */
const linksAfter = async (knex: Knex, position: number): Promise<Link[]> =>
  knex('clearing_journal_batches').where('position', '>', position).orderBy('position').select('position', 'entries', 'leaves', 'root', 'hash');

/** RFC 6962 §2.1's Merkle tree hash, as the RFC defines it: the left subtree holds the largest power of two of leaves below n. */
function rfc6962(leaves: Buffer[]): Buffer {
  if (leaves.length === 1) return leaves[0];
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return createHash('sha256').update(Buffer.from([1])).update(rfc6962(leaves.slice(0, k))).update(rfc6962(leaves.slice(k))).digest();
}

/** Characters JSON text escapes or that UTF-8 writes in several bytes, among arbitrary code points (PostgreSQL text holds no NUL). */
const unit = fc.oneof(
  fc.constantFrom('"', '\\', '/', '\n', '\r', '\t', '\b', '\f', '\u0001', '\u001f', '\u007f', '\u2028', 'é', '€', '😀', '𝄞'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }).filter((c) => c !== '\u0000'),
);
const text = fc.string({ unit, maxLength: 12 });
const optional = fc.option(text, { nil: null });
/** Object keys the audit agrees on: no character above U+FFFF. */
const key = fc.string({ unit: unit.filter((c) => c.codePointAt(0)! <= 0xffff), maxLength: 12 });
/** JSON values the audit agrees on: keys as above, numbers within ±10^15 (integers to 2^53 − 1). */
const { json } = fc.letrec((tie) => ({
  json: fc.oneof(
    { depthSize: 'small', maxDepth: 3 },
    fc.constant(null),
    fc.boolean(),
    text,
    fc.maxSafeInteger(),
    fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e15, max: 1e15 }),
    fc.array(tie('json'), { maxLength: 4 }),
    fc.dictionary(key, tie('json'), { maxKeys: 4 }),
  ),
}));

/** One generated entry: its own fields, terms (`terms`) and postings (the last one balances the others). */
const entryWith = (terms: fc.Arbitrary<Record<string, unknown>>) => fc.record({
  door: fc.constantFrom('credit', 'settle', 'adjust', 'draw', 'reverse'),
  amount: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  terms,
  hold_id: optional,
  reason: optional,
  actor: optional,
  ref: optional,
  memo: optional,
  simulated: fc.boolean(),
  postings: fc.array(fc.record({ delta: fc.bigInt({ min: -(10n ** 12n), max: 10n ** 12n }), kind: text }), { minLength: 1, maxLength: 3 }),
});

/** Entries whose hashes the audit recomputes. */
const entry = entryWith(fc.dictionary(key, json, { maxKeys: 5 }));
/** Entries with any JSON in their terms, astral keys and integers beyond 2^53 included. */
const anyEntry = entryWith(fc.dictionary(text, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }));

/** An entry as generated. */
type Entry = typeof entry extends fc.Arbitrary<infer T> ? T : never;

/**
 * How an entry is written: `binding`, through `clearing_post_entry` with the operation's JSON as the
 * binding sends it (`opsText`: the terms as their canonical text, `terms_text`); `terms`, through
 * `clearing_post_entry` with the terms as a JSON object (as before migration 027); `direct`, by
 * inserting its rows.
 */
type Way = 'binding' | 'terms' | 'direct';
const ways = fc.constantFrom<Way>('binding', 'terms', 'direct');
/** Entries written so far: makes every generated id unique. */
let written = 0;

/** Writes `entries` in one transaction, as the binding's group commit does (`clearing_post_entry`), or directly, as `way` says (each entry the next of `way`, round): accounts named by generated text, a reversal's target first. Answers the ids in the order written, and those written directly. */
async function commit(knex: Knex, entries: Entry[], names: string[], way: Way[]): Promise<{ order: string[]; directIds: Set<string> }> {
  const order: string[] = [];
  const directIds = new Set<string>();
  await knex.transaction(async (trx) => {
    const id = (label: string) => `${label}-${++written}-${names[written % names.length]}`;
    const account = id('account');
    await trx.raw(`INSERT INTO clearing_accounts (id, kind) VALUES (?, 'holder')`, [account]);
    for (const [i, e] of entries.entries()) {
      const txnId = id('txn');
      let reverses: string | null = null;
      if (e.door === 'reverse') {
        reverses = id('reversed');
        await trx.raw(`SELECT clearing_post_entry(?::jsonb)`, [JSON.stringify({ txn_id: reverses, door: 'credit', account, amount: '0', terms: {}, postings: [] })]);
        order.push(reverses);
      }
      const total = e.postings.reduce((sum, p) => sum + p.delta, 0n);
      const postings = [...e.postings, { delta: -total, kind: 'balance' }].filter((p) => p.delta !== 0n).map((p) => ({ account, delta: p.delta.toString(), kind: p.kind }));
      const row = { txn_id: txnId, door: e.door, account, amount: e.amount.toString(), terms: e.terms, reverses, hold_id: e.hold_id, reason: e.reason, actor: e.actor, ref: e.ref, memo: e.memo, simulated: e.simulated };
      const how = way[i % way.length];
      if (how === 'direct') {
        directIds.add(txnId);
        await trx('clearing_transactions').insert({ ...row, terms: JSON.stringify(e.terms) });
        for (const p of postings) await trx('clearing_postings').insert({ txn_id: txnId, ...p });
      } else if (how === 'binding') {
        await trx.raw(`SELECT clearing_post_entry((?::jsonb)->0)`, [opsText([{ op: 'post', ...row, postings }])]);
      } else {
        await trx.raw(`SELECT clearing_post_entry(?::jsonb)`, [JSON.stringify({ ...row, postings })]);
      }
      order.push(txnId);
    }
  });
  return { order, directIds };
}

/** The links `commit(entries, direct)` should write: the entries written directly one by one, in the order they fire, then (at the first of them to fire) all those of `clearing_post_entry`. */
function expectedLinks(order: string[], directIds: Set<string>): string[][] {
  const links: string[][] = [];
  const pending = order.filter((id) => !directIds.has(id));
  for (const id of order) {
    if (directIds.has(id)) links.push([id]);
    else if (id === pending[0]) links.push(pending);
  }
  return links;
}

/**
 * Commits transactions of generated entries (`runs` of them), written in the ways `how` draws,
 * checking each leaf against migration 020's text, each link's entries, root and hash, and that an
 * entry the binding wrote holds its terms' canonical text (`terms_text`), another none.
 */
async function chainsAs020(knex: Knex, entries: fc.Arbitrary<Entry>, how: fc.Arbitrary<Way>, runs: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(
      fc.array(entries, { minLength: 1, maxLength: 6 }),
      fc.array(text.filter((s) => s !== ''), { minLength: 1, maxLength: 3 }),
      fc.array(how, { minLength: 1, maxLength: 3 }),
      async (batch, names, way) => {
        const before = await readChainPoint(knex);
        const { order, directIds } = await commit(knex, batch, names, way);
        const links = await linksAfter(knex, before.size);
        assert.deepEqual(links.map((l) => l.entries), expectedLinks(order, directIds));
        let [size, prev] = [before.size, before.head];
        for (const link of links) {
          const root = rfc6962(link.leaves.map((leaf) => Buffer.from(leaf, 'hex'))).toString('hex');
          assert.equal(link.root, root, `the root of the link ending at ${link.position}`);
          assert.equal(merkleRoot(link.leaves), root);
          size += link.entries.length;
          assert.equal(Number(link.position), size);
          assert.equal(link.hash, batchHash(prev, root, size));
          prev = link.hash;
        }
        const leaves: Array<{ txn_id: string; leaf: string; leaf_020: string }> = (await knex.raw(LEAVES_020, [before.size])).rows;
        assert.equal(leaves.length, order.length, 'every entry of the transaction is chained');
        for (const leaf of leaves) assert.equal(leaf.leaf, leaf.leaf_020, leaf.txn_id);
        const texts = new Map(order.filter((id) => id.startsWith('txn-')).map((id, i) => [id, way[i % way.length] === 'binding' ? canonicalize(batch[i].terms)! : null]));
        const stored = await knex('clearing_transactions').whereIn('txn_id', [...texts.keys()]).select('txn_id', 'terms_text');
        assert.deepEqual(new Map(stored.map((r) => [r.txn_id, r.terms_text])), texts, 'terms_text: the canonical JSON of the terms the binding wrote, else null');
      },
    ),
    { numRuns: runs },
  );
}

test('every leaf of generated entries hashes as migration 020 built the entry; each link as RFC 6962 and holon audit recompute it', async () => {
  const { knex } = journal.db;
  await chainsAs020(knex, entry, ways, 40);
  const report = await audit({ clearing: knex, gateway: null });
  assert.equal(report.failure, null, JSON.stringify(report.failure));
  assert.ok(report.chain.size >= 40, `${report.chain.size} entries chained`);
});

test('a batch of 1 to 64 entries: its root is RFC 6962\'s', async () => {
  const { knex } = journal.db;
  await knex.raw(`INSERT INTO clearing_accounts (id, kind) VALUES ('merkle', 'holder') ON CONFLICT DO NOTHING`);
  for (const n of [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 33, 64]) {
    const before = await readChainPoint(knex);
    await knex.transaction(async (trx) => {
      for (let i = 0; i < n; i++) {
        await trx.raw(`SELECT clearing_post_entry(?::jsonb)`, [JSON.stringify({ txn_id: `merkle-${n}-${i}`, door: 'credit', account: 'merkle', amount: String(i), terms: { i }, postings: [] })]);
      }
    });
    const [link, ...more] = await linksAfter(knex, before.size);
    assert.equal(more.length, 0);
    assert.equal(link.entries.length, n);
    assert.equal(link.root, rfc6962(link.leaves.map((leaf) => Buffer.from(leaf, 'hex'))).toString('hex'), `${n} entries`);
  }
  assert.equal((await audit({ clearing: knex, gateway: null })).failure, null);
});

test('a refused operation of a batch leaves no trace in its link', async () => {
  const { knex } = journal.db;
  await knex.raw(`INSERT INTO clearing_accounts (id, kind) VALUES ('refusals', 'holder') ON CONFLICT DO NOTHING`);
  const op = (txn_id: string, account: string) => ({ op: 'post', lock: [], txn_id, door: 'adjust', account, amount: 1, terms: {}, postings: [{ account, delta: 1, kind: 'a' }, { account: 'refusals', delta: -1, kind: 'b' }] });
  const before = await readChainPoint(knex);
  const [{ outcomes }] = (await knex.raw('SELECT clearing_apply(?::jsonb) AS outcomes', [JSON.stringify([op('kept-1', 'refusals'), op('refused', 'no-such-account'), op('kept-2', 'refusals')])])).rows;
  assert.deepEqual(outcomes.map((o: { applied?: boolean }) => o.applied ?? 'refused'), [true, 'refused', true]);
  assert.deepEqual((await linksAfter(knex, before.size)).map((l) => l.entries), [['kept-1', 'kept-2']]);
});

test('a hand-written entry with every kind of value: its leaf is the documented canonical text', async () => {
  const { knex } = journal.db;
  const [txnId, account] = ['t\\1', 'acct "é"'];
  const before = await readChainPoint(knex);
  await knex.transaction(async (trx) => {
    await trx.raw(`INSERT INTO clearing_accounts (id, kind) VALUES (?, 'holder')`, [account]);
    await trx.raw(`SELECT clearing_post_entry(?::jsonb)`, [JSON.stringify({
      txn_id: txnId, door: 'settle', account, amount: '-9223372036854775808', terms: { rate: 1.5e-7, b: [null, true, 'x\n'], a: { z: 1e21, y: 2 ** 53 } },
      memo: 'line\u2028😀\u0001', simulated: true, postings: [{ account, delta: '5', kind: 'in' }, { account, delta: '-5', kind: 'out' }],
    })]);
  });
  const expected =
    '{"account":"acct \\"é\\"","actor":null,"amount":"-9223372036854775808","door":"settle","hold_id":null,"memo":"line\u2028😀\\u0001",' +
    '"postings":[{"account":"acct \\"é\\"","delta":"5","kind":"in"},{"account":"acct \\"é\\"","delta":"-5","kind":"out"}],' +
    '"reason":null,"ref":null,"reverses":null,"simulated":true,"terms":{"a":{"y":9007199254740992,"z":1e+21},"b":[null,true,"x\\n"],"rate":1.5e-7},' +
    '"txn_id":"t\\\\1"}';
  const [link] = await linksAfter(knex, before.size);
  const leaf = createHash('sha256').update(Buffer.from([0])).update(expected, 'utf8').digest('hex');
  assert.deepEqual({ entries: link.entries, leaves: link.leaves, root: link.root }, { entries: [txnId], leaves: [leaf], root: leaf });
  const canonical = `{"prev":${before.head === null ? 'null' : `"${before.head}"`},"root":"${leaf}","size":${before.size + 1}}`;
  assert.equal(link.hash, createHash('sha256').update(canonical, 'utf8').digest('hex'));
});

test('terms the audit does not agree on (astral keys, integers beyond 2^53), written without terms_text: still migration 020\'s bytes', async () => {
  await chainsAs020(journal.db.knex, anyEntry, fc.constantFrom<Way>('terms', 'direct'), 15);
});

test('any terms the binding writes (astral keys, integers beyond 2^53 included): the leaf hashes their canonical text, and holon audit agrees', async () => {
  const { db, dispose } = await openFreshDatabase();
  try {
    await fc.assert(
      fc.asyncProperty(fc.array(anyEntry, { minLength: 1, maxLength: 4 }), fc.array(text.filter((s) => s !== ''), { minLength: 1, maxLength: 2 }), async (batch, names) => {
        await commit(db.knex, batch, names, ['binding']);
      }),
      { numRuns: 15 },
    );
    const report = await audit({ clearing: db.knex, gateway: null });
    assert.equal(report.failure, null, JSON.stringify(report.failure));
  } finally {
    await dispose();
  }
});

/** Undoes migrations, newest first, until `version` (its number, e.g. `'025'`) is the last one applied: the next `migrate.up` applies the one after it. */
async function downTo(knex: Knex, version: string): Promise<void> {
  while ((await knex.migrate.currentVersion({ migrationSource })) !== version) await knex.migrate.down({ migrationSource });
}

test('a journal chained one entry per link goes on in batch links after migration 026; a checkpoint kept before still checks', async () => {
  const { db, dispose } = await openFreshDatabase();
  try {
    const knex = db.knex;
    await downTo(knex, '025');
    assert.equal(await knex.schema.hasTable('clearing_journal_batches'), false);
    await knex.raw(`INSERT INTO clearing_accounts (id, kind) VALUES ('upgrade', 'holder')`);
    const credit = (txn_id: string) => knex.raw(`SELECT clearing_post_entry(?::jsonb)`, [JSON.stringify({ txn_id, door: 'credit', account: 'upgrade', amount: '1', terms: {}, postings: [] })]);
    await knex.transaction(async (trx) => {
      for (const id of ['old-1', 'old-2']) await trx.raw(`SELECT clearing_post_entry(?::jsonb)`, [JSON.stringify({ txn_id: id, door: 'credit', account: 'upgrade', amount: '1', terms: {}, postings: [] })]);
    });
    const old = await knex('clearing_journal_chain').orderBy('position').select('position', 'txn_id', 'hash');
    assert.deepEqual(old.map((l) => [Number(l.position), l.txn_id]), [[1, 'old-1'], [2, 'old-2']]);
    const kept = { size: 2, head: old[1].hash };

    await knex.migrate.up({ migrationSource });
    assert.deepEqual(await readChainPoint(knex), kept, 'the checkpoint reads the old tail until a batch link is written');
    await knex.transaction(async (trx) => {
      for (const id of ['new-1', 'new-2', 'new-3']) await trx.raw(`SELECT clearing_post_entry(?::jsonb)`, [JSON.stringify({ txn_id: id, door: 'credit', account: 'upgrade', amount: '1', terms: {}, postings: [] })]);
    });
    await credit('new-4');
    const links = await linksAfter(knex, 0);
    assert.deepEqual(links.map((l) => [Number(l.position), l.entries]), [[5, ['new-1', 'new-2', 'new-3']], [6, ['new-4']]]);
    assert.equal(links[0].hash, batchHash(kept.head, links[0].root, 5), 'the first batch link follows the last one-entry link');
    assert.equal(await knex('clearing_journal_chain').count({ n: '*' }).first().then((r) => Number(r!.n)), 2, 'no one-entry link is written after the migration');
    await knex.migrate.latest({ migrationSource }); // the audit reads today's schema: `holon audit` opens a database migrated to it
    const report = await audit({ clearing: knex, gateway: null }, kept);
    assert.deepEqual(report, { failure: null, chain: { size: 6, head: links[1].hash }, accounts: report.accounts, settled_receipts: 0 });
    assert.deepEqual((await audit({ clearing: knex, gateway: null }, { size: 4, head: links[0].hash })).failure, {
      entry: 'new-1', position: 3, reason: 'the checkpoint is not a prefix of this journal: its size 4 falls inside the link of positions 3 to 5',
    });
  } finally {
    await dispose();
  }
});

test('entries chained before migration 027 keep their leaves; after it the binding\'s entries carry terms_text, and the audit passes over both', async () => {
  const { db, dispose } = await openFreshDatabase();
  try {
    const knex = db.knex;
    await downTo(knex, '026');
    assert.equal(await knex.schema.hasColumn('clearing_transactions', 'terms_text'), false);
    await knex.raw(`INSERT INTO clearing_accounts (id, kind) VALUES ('upgrade', 'holder')`);
    const credit = (txn_id: string) => ({ op: 'post' as const, txn_id, door: 'credit', account: 'upgrade', amount: '1', terms: { b: 'x', a: 2 }, postings: [] });
    await knex.raw(`SELECT clearing_post_entry(?::jsonb)`, [JSON.stringify(credit('before-027'))]);
    const [before] = await linksAfter(knex, 0);

    await knex.migrate.up({ migrationSource });
    await knex.raw(`SELECT clearing_post_entry((?::jsonb)->0)`, [opsText([credit('after-027')])]);
    const rows = await knex('clearing_transactions').orderBy('txn_id', 'desc').select('txn_id', 'terms', 'terms_text');
    assert.deepEqual(rows, [
      { txn_id: 'before-027', terms: { a: 2, b: 'x' }, terms_text: null },
      { txn_id: 'after-027', terms: { a: 2, b: 'x' }, terms_text: '{"a":2,"b":"x"}' },
    ]);
    const links = await linksAfter(knex, 0);
    assert.deepEqual(links[0], before, 'the link written before the migration is unchanged');
    const leaf = (txnId: string) => createHash('sha256').update(Buffer.from([0]))
      .update(`{"account":"upgrade","actor":null,"amount":"1","door":"credit","hold_id":null,"memo":null,"postings":[],"reason":null,"ref":null,"reverses":null,"simulated":false,"terms":{"a":2,"b":"x"},"txn_id":"${txnId}"}`).digest('hex');
    assert.deepEqual(links.map((l) => l.leaves), [[leaf('before-027')], [leaf('after-027')]]);
    assert.equal((await audit({ clearing: knex, gateway: null })).failure, null);
  } finally {
    await dispose();
  }
});

test('transactions committing at once each get their own link, in commit order: positions follow on and every link names the one before', async () => {
  const { db, dispose } = await openFreshDatabase();
  try {
    const knex = db.knex;
    await knex.raw(`INSERT INTO clearing_accounts (id, kind) VALUES ('racer', 'holder')`);
    const entry = (txn_id: string) => JSON.stringify({ txn_id, door: 'credit', account: 'racer', amount: '1', terms: {}, postings: [] });
    // 8 transactions of 3 entries at a time (on Postgres they compute their links side by side and queue only for the tail), 4 rounds.
    for (let round = 0; round < 4; round++) {
      await Promise.all(Array.from({ length: 8 }, (_, t) => knex.transaction(async (trx) => {
        for (let e = 0; e < 3; e++) await trx.raw(`SELECT clearing_post_entry(?::jsonb)`, [entry(`race-${round}-${t}-${e}`)]);
      })));
    }
    const links = await linksAfter(knex, 0);
    assert.deepEqual(links.map((l) => Number(l.position)), Array.from({ length: 32 }, (_, i) => 3 * (i + 1)));
    assert.deepEqual(links.map((l) => l.entries.map((id: string) => id.replace(/-\d+$/, '')).every((id: string) => id === l.entries[0].replace(/-\d+$/, ''))), Array(32).fill(true), 'each link holds one transaction\'s entries');
    links.forEach((l, i) => assert.equal(l.hash, batchHash(i === 0 ? null : links[i - 1].hash, l.root, Number(l.position))));
    assert.equal((await audit({ clearing: knex, gateway: null })).failure, null);
  } finally {
    await dispose();
  }
});
