/**
 * The journal's hash chain written out as text (issue 23 §3, migration 025): for many generated
 * entries, committed as the binding commits them (a few per transaction, chained at commit by
 * the deferred trigger), the hash `clearing_chain_append.sql` stores is byte for byte the hash of
 * migration 020's construction (the entry built as jsonb, then `clearing_canonical`), and
 * `holon audit` (the `canonicalize` library and SHA-256 in JavaScript) recomputes every one.
 * Strings carry quotes, backslashes, control characters, U+2028, non-ASCII and astral characters;
 * optional fields are null or not; amounts span the whole bigint range; terms are JSON objects
 * (nested objects and arrays, numbers, strings, booleans, nulls).
 *
 * Where `clearing_canonical` and the `canonicalize` library part (since migration 020, and by
 * design: clearing_canonical.sql), the audit is not asked: object keys with characters above
 * U+FFFF (code-point order against RFC 8785's UTF-16 order) and integers beyond 2^53 that lie
 * halfway between two digits strings (PostgreSQL's float8 text and ECMAScript's pick different
 * ones). The binding's terms have fixed ASCII keys and amounts within ±3 × 10^15. For those values
 * the last test checks only that migration 025 writes what migration 020 wrote.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import fc from 'fast-check';
import type { Knex } from 'knex';
import { audit } from '../../src/backup/audit.ts';
import { openFreshDatabase } from '../helpers/clearing.ts';
import { useOpened } from '../helpers/hooks.ts';

const journal = useOpened('a fresh journal', openFreshDatabase, (fresh) => fresh.dispose());

/** Migration 020's hash of every link after `position`: `clearing_canonical` over the entry built as jsonb, and the hash before it. */
const HASH_020 = `SELECT c.position::text AS position, c.txn_id, c.hash,
    encode(sha256(convert_to(clearing_canonical(jsonb_build_object('entry', jsonb_build_object('txn_id', t.txn_id, 'door', t.door,
      'account', t.account, 'amount', t.amount::text, 'terms', t.terms, 'reverses', t.reverses, 'hold_id', t.hold_id, 'reason', t.reason,
      'actor', t.actor, 'ref', t.ref, 'memo', t.memo, 'simulated', t.simulated,
      'postings', coalesce((SELECT jsonb_agg(jsonb_build_object('account', p.account, 'delta', p.delta::text, 'kind', p.kind) ORDER BY p.id)
                              FROM clearing_postings p WHERE p.txn_id = t.txn_id), '[]'::jsonb)), 'prev', before.hash)), 'UTF8')), 'hex') AS hash_020
  FROM clearing_journal_chain c JOIN clearing_transactions t ON t.txn_id = c.txn_id
  LEFT JOIN clearing_journal_chain before ON before.position = c.position - 1
  WHERE c.position > ? ORDER BY c.position`;

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

/** Entries written so far: makes every generated id unique. */
let written = 0;

/** Writes `entries` in one transaction, as the binding's group commit does: accounts named by generated text, a reversal's target first. */
async function commit(knex: Knex, entries: Entry[], names: string[]): Promise<void> {
  await knex.transaction(async (trx) => {
    const id = (label: string) => `${label}-${++written}-${names[written % names.length]}`;
    const account = id('account');
    await trx.raw(`INSERT INTO clearing_accounts (id, kind) VALUES (?, 'holder')`, [account]);
    for (const e of entries) {
      const txnId = id('txn');
      let reverses: string | null = null;
      if (e.door === 'reverse') {
        reverses = id('reversed');
        await trx.raw(`INSERT INTO clearing_transactions (txn_id, door, account, amount, terms) VALUES (?, 'credit', ?, 0, '{}')`, [reverses, account]);
      }
      await trx.raw(
        `INSERT INTO clearing_transactions (txn_id, door, account, amount, terms, reverses, hold_id, reason, actor, ref, memo, simulated)
         VALUES (?, ?, ?, ?::bigint, ?::jsonb, ?, ?, ?, ?, ?, ?, ?)`,
        [txnId, e.door, account, e.amount.toString(), JSON.stringify(e.terms), reverses, e.hold_id, e.reason, e.actor, e.ref, e.memo, e.simulated],
      );
      const total = e.postings.reduce((sum, p) => sum + p.delta, 0n);
      for (const p of [...e.postings, { delta: -total, kind: 'balance' }]) {
        await trx.raw('INSERT INTO clearing_postings (txn_id, account, delta, kind) VALUES (?, ?, ?::bigint, ?)', [txnId, account, p.delta.toString(), p.kind]);
      }
    }
  });
}

/** Commits transactions of generated entries (`runs` of them), checking each one's links against migration 020's construction. */
async function chainsAs020(knex: Knex, entries: fc.Arbitrary<Entry>, runs: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.array(entries, { minLength: 1, maxLength: 4 }), fc.array(text.filter((s) => s !== ''), { minLength: 1, maxLength: 3 }), async (batch, names) => {
      const [{ size }] = (await knex.raw('SELECT count(*)::int AS size FROM clearing_journal_chain')).rows;
      await commit(knex, batch, names);
      const links: Array<{ position: string; txn_id: string; hash: string; hash_020: string }> = (await knex.raw(HASH_020, [size])).rows;
      assert.equal(links.length, batch.length + batch.filter((e) => e.door === 'reverse').length, 'every entry of the transaction is chained');
      for (const link of links) assert.equal(link.hash, link.hash_020, `position ${link.position} (${link.txn_id})`);
    }),
    { numRuns: runs },
  );
}

test('every link of generated entries hashes as migration 020 built it, and as holon audit recomputes it', async () => {
  const { knex } = journal.db;
  await chainsAs020(knex, entry, 40);
  const report = await audit({ clearing: knex, gateway: null });
  assert.equal(report.failure, null, JSON.stringify(report.failure));
  assert.ok(report.chain.size >= 40, `${report.chain.size} entries chained`);
});

test('a hand-written entry with every kind of value: its link is the documented canonical text', async () => {
  const { knex } = journal.db;
  const [{ size }] = (await knex.raw('SELECT count(*)::int AS size FROM clearing_journal_chain')).rows;
  const prev: string | null = (await knex.raw('SELECT hash FROM clearing_journal_chain WHERE position = ?', [size])).rows[0]?.hash ?? null;
  const [txnId, account] = ['t\\1', 'acct "é"'];
  await knex.transaction(async (trx) => {
    await trx.raw(`INSERT INTO clearing_accounts (id, kind) VALUES (?, 'holder')`, [account]);
    await trx.raw(
      `INSERT INTO clearing_transactions (txn_id, door, account, amount, terms, memo, simulated) VALUES (?, 'settle', ?, -9223372036854775808, ?::jsonb, ?, true)`,
      [txnId, account, JSON.stringify({ rate: 1.5e-7, b: [null, true, 'x\n'], a: { z: 1e21, y: 2 ** 53 } }), 'line\u2028😀\u0001'],
    );
    await trx.raw(`INSERT INTO clearing_postings (txn_id, account, delta, kind) VALUES (?, ?, 5, 'in'), (?, ?, -5, 'out')`, [txnId, account, txnId, account]);
  });
  const expected =
    '{"entry":{"account":"acct \\"é\\"","actor":null,"amount":"-9223372036854775808","door":"settle","hold_id":null,"memo":"line\u2028😀\\u0001",' +
    '"postings":[{"account":"acct \\"é\\"","delta":"5","kind":"in"},{"account":"acct \\"é\\"","delta":"-5","kind":"out"}],' +
    '"reason":null,"ref":null,"reverses":null,"simulated":true,"terms":{"a":{"y":9007199254740992,"z":1e+21},"b":[null,true,"x\\n"],"rate":1.5e-7},' +
    `"txn_id":"t\\\\1"},"prev":${prev === null ? 'null' : `"${prev}"`}}`;
  const [{ hash }] = (await knex.raw('SELECT hash FROM clearing_journal_chain WHERE txn_id = ?', [txnId])).rows;
  assert.equal(hash, createHash('sha256').update(expected, 'utf8').digest('hex'));
});

test('terms the audit does not agree on (astral keys, integers beyond 2^53): still migration 020\'s bytes', async () => {
  await chainsAs020(journal.db.knex, anyEntry, 15);
});
