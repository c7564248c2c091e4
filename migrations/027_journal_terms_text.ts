/**
 * The binding writes each entry's terms also as text (issue 23 §3, "Cost"): since migration 026 a
 * transaction's entries are one link of the chain, and what is left of the chain's cost is per
 * entry; the largest piece was writing the terms' canonical JSON out member by member in the
 * leaves' statement (`jsonb_each`, a sort, a regular expression per number: about 0.085 M
 * instructions per entry, bench/README.md). The binding already holds the terms as a JavaScript
 * object, and sends them as their RFC 8785 text (`terms_text`, `src/clearing/ledger-op.ts`).
 *
 * - `clearing_transactions.terms_text` (nullable): the canonical JSON of the entry's terms as the
 *   binding wrote it; NULL for an entry written before this migration or by other SQL.
 * - `clearing_post_entry`: given `terms_text`, stores it and, as the entry's terms, that text read
 *   as jsonb, so the terms are what the text says by construction (the chain cannot disagree with
 *   the journal); without it, the operation's `terms` as before.
 * - `clearing_chain_batch`: an entry's leaf takes its terms' text from `terms_text` when there is
 *   one, else writes it out from the jsonb as migration 026 did. The leaves are the same bytes for
 *   every terms the binding writes (fixed ASCII keys, numbers within ±3 × 10^15).
 *
 * Frozen: the SQL below is what this migration ran (and, for `down`, what it replaced); it
 * imports nothing. Today's definition of each function is in `src/clearing/sql/`.
 */
import type { Knex } from 'knex';

const statements = [
  // The text the binding wrote; the jsonb `terms` stays what replays (clearing-contract §9) and the audit read.
  'ALTER TABLE clearing_transactions ADD COLUMN terms_text text',
  `CREATE OR REPLACE FUNCTION clearing_chain_batch(list text) RETURNS void LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
   DECLARE ids text[] := ARRAY(SELECT json_array_elements_text(('[' || btrim(list, ',') || ']')::json));
     size bigint; prev text; leaves text[]; level text[]; next text[]; n int; root text;
   BEGIN
     LOCK TABLE clearing_journal_batches IN EXCLUSIVE MODE;
     SELECT b.position, b.hash INTO size, prev FROM clearing_journal_batches b ORDER BY b.position DESC LIMIT 1;
     IF NOT FOUND THEN
       SELECT c.position, c.hash INTO size, prev FROM clearing_journal_chain c ORDER BY c.position DESC LIMIT 1;
     END IF;
     leaves := ARRAY(
       SELECT encode(sha256('\\x00'::bytea || convert_to(
                '{"account":' || to_json(t.account)::text || ',"actor":' || coalesce(to_json(t.actor)::text, 'null')
                || ',"amount":"' || t.amount || '","door":' || to_json(t.door)::text
                || ',"hold_id":' || coalesce(to_json(t.hold_id)::text, 'null') || ',"memo":' || coalesce(to_json(t.memo)::text, 'null')
                || ',"postings":[' || array_to_string(ARRAY(SELECT '{"account":' || to_json(p.account)::text || ',"delta":"' || p.delta || '","kind":' || to_json(p.kind)::text || '}'
                                                  FROM clearing_postings p WHERE p.txn_id = t.txn_id ORDER BY p.id), ',')
                || '],"reason":' || coalesce(to_json(t.reason)::text, 'null') || ',"ref":' || coalesce(to_json(t.ref)::text, 'null')
                || ',"reverses":' || coalesce(to_json(t.reverses)::text, 'null') || ',"simulated":' || to_json(t.simulated)::text
                || ',"terms":' || coalesce(t.terms_text, CASE WHEN jsonb_typeof(t.terms) = 'object' THEN '{' || coalesce((SELECT string_agg(to_json(e.key)::text || ':' || CASE
                          WHEN jsonb_typeof(e.value) IN ('string', 'boolean', 'null') OR e.value::text ~ '^-?[0-9]{1,15}$' THEN e.value::text
                          ELSE clearing_canonical(e.value) END, ',' ORDER BY e.key COLLATE "C") FROM jsonb_each(t.terms) AS e), '') || '}'
                   ELSE clearing_canonical(t.terms) END)
                || ',"txn_id":' || to_json(t.txn_id)::text || '}', 'UTF8')), 'hex')
         FROM unnest(ids) WITH ORDINALITY AS x(txn_id, i) JOIN clearing_transactions t ON t.txn_id = x.txn_id
        ORDER BY x.i);
     IF cardinality(leaves) IS DISTINCT FROM cardinality(ids) THEN
       RAISE EXCEPTION 'cannot chain %: the journal does not hold all of them', ids;
     END IF;
     level := leaves;
     WHILE cardinality(level) > 1 LOOP
       next := '{}';
       n := cardinality(level);
       FOR i IN 1 .. n BY 2 LOOP
         next := next || CASE WHEN i < n THEN encode(sha256('\\x01'::bytea || decode(level[i], 'hex') || decode(level[i + 1], 'hex')), 'hex') ELSE level[i] END;
       END LOOP;
       level := next;
     END LOOP;
     root := level[1];
     size := coalesce(size, 0) + cardinality(ids);
     INSERT INTO clearing_journal_batches (position, entries, leaves, root, hash)
     VALUES (size, ids, leaves, root,
             encode(sha256(convert_to('{"prev":' || coalesce('"' || prev || '"', 'null') || ',"root":"' || root || '","size":' || size || '}', 'UTF8')), 'hex'));
   END $$`,
  `CREATE OR REPLACE FUNCTION clearing_post_entry(o jsonb) RETURNS boolean LANGUAGE plpgsql AS $$
   BEGIN
     INSERT INTO clearing_transactions (txn_id, door, account, amount, terms, terms_text, reverses, hold_id, reason, actor, ref, memo, simulated)
     VALUES (o->>'txn_id', o->>'door', o->>'account', (o->>'amount')::bigint, coalesce((o->>'terms_text')::jsonb, o->'terms'), o->>'terms_text', o->>'reverses', o->>'hold_id',
             o->>'reason', o->>'actor', o->>'ref', o->>'memo', coalesce((o->>'simulated')::boolean, false))
     ON CONFLICT (txn_id) DO NOTHING;
     IF NOT FOUND THEN RETURN false; END IF;
     INSERT INTO clearing_postings (txn_id, account, delta, kind)
     SELECT o->>'txn_id', p->>'account', (p->>'delta')::bigint, p->>'kind'
       FROM jsonb_array_elements(o->'postings') WITH ORDINALITY AS x(p, n)
      WHERE (p->>'delta')::bigint <> 0
      ORDER BY n;
     PERFORM set_config('holon.chain_pending',
       coalesce(nullif(current_setting('holon.chain_pending', true), ''), ',') || to_json(o->>'txn_id')::text || ',', true);
     RETURN true;
   END $$`,
];

/** What `down` puts back: migration 026's texts of both functions. */
const restored = [
  `CREATE OR REPLACE FUNCTION clearing_chain_batch(list text) RETURNS void LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
   DECLARE ids text[] := ARRAY(SELECT json_array_elements_text(('[' || btrim(list, ',') || ']')::json));
     size bigint; prev text; leaves text[]; level text[]; next text[]; n int; root text;
   BEGIN
     LOCK TABLE clearing_journal_batches IN EXCLUSIVE MODE;
     SELECT b.position, b.hash INTO size, prev FROM clearing_journal_batches b ORDER BY b.position DESC LIMIT 1;
     IF NOT FOUND THEN
       SELECT c.position, c.hash INTO size, prev FROM clearing_journal_chain c ORDER BY c.position DESC LIMIT 1;
     END IF;
     leaves := ARRAY(
       SELECT encode(sha256('\\x00'::bytea || convert_to(
                '{"account":' || to_json(t.account)::text || ',"actor":' || coalesce(to_json(t.actor)::text, 'null')
                || ',"amount":"' || t.amount || '","door":' || to_json(t.door)::text
                || ',"hold_id":' || coalesce(to_json(t.hold_id)::text, 'null') || ',"memo":' || coalesce(to_json(t.memo)::text, 'null')
                || ',"postings":[' || array_to_string(ARRAY(SELECT '{"account":' || to_json(p.account)::text || ',"delta":"' || p.delta || '","kind":' || to_json(p.kind)::text || '}'
                                                  FROM clearing_postings p WHERE p.txn_id = t.txn_id ORDER BY p.id), ',')
                || '],"reason":' || coalesce(to_json(t.reason)::text, 'null') || ',"ref":' || coalesce(to_json(t.ref)::text, 'null')
                || ',"reverses":' || coalesce(to_json(t.reverses)::text, 'null') || ',"simulated":' || to_json(t.simulated)::text
                || ',"terms":' || CASE WHEN jsonb_typeof(t.terms) = 'object' THEN '{' || coalesce((SELECT string_agg(to_json(e.key)::text || ':' || CASE
                          WHEN jsonb_typeof(e.value) IN ('string', 'boolean', 'null') OR e.value::text ~ '^-?[0-9]{1,15}$' THEN e.value::text
                          ELSE clearing_canonical(e.value) END, ',' ORDER BY e.key COLLATE "C") FROM jsonb_each(t.terms) AS e), '') || '}'
                   ELSE clearing_canonical(t.terms) END
                || ',"txn_id":' || to_json(t.txn_id)::text || '}', 'UTF8')), 'hex')
         FROM unnest(ids) WITH ORDINALITY AS x(txn_id, i) JOIN clearing_transactions t ON t.txn_id = x.txn_id
        ORDER BY x.i);
     IF cardinality(leaves) IS DISTINCT FROM cardinality(ids) THEN
       RAISE EXCEPTION 'cannot chain %: the journal does not hold all of them', ids;
     END IF;
     level := leaves;
     WHILE cardinality(level) > 1 LOOP
       next := '{}';
       n := cardinality(level);
       FOR i IN 1 .. n BY 2 LOOP
         next := next || CASE WHEN i < n THEN encode(sha256('\\x01'::bytea || decode(level[i], 'hex') || decode(level[i + 1], 'hex')), 'hex') ELSE level[i] END;
       END LOOP;
       level := next;
     END LOOP;
     root := level[1];
     size := coalesce(size, 0) + cardinality(ids);
     INSERT INTO clearing_journal_batches (position, entries, leaves, root, hash)
     VALUES (size, ids, leaves, root,
             encode(sha256(convert_to('{"prev":' || coalesce('"' || prev || '"', 'null') || ',"root":"' || root || '","size":' || size || '}', 'UTF8')), 'hex'));
   END $$`,
  `CREATE OR REPLACE FUNCTION clearing_post_entry(o jsonb) RETURNS boolean LANGUAGE plpgsql AS $$
   BEGIN
     INSERT INTO clearing_transactions (txn_id, door, account, amount, terms, reverses, hold_id, reason, actor, ref, memo, simulated)
     VALUES (o->>'txn_id', o->>'door', o->>'account', (o->>'amount')::bigint, o->'terms', o->>'reverses', o->>'hold_id',
             o->>'reason', o->>'actor', o->>'ref', o->>'memo', coalesce((o->>'simulated')::boolean, false))
     ON CONFLICT (txn_id) DO NOTHING;
     IF NOT FOUND THEN RETURN false; END IF;
     INSERT INTO clearing_postings (txn_id, account, delta, kind)
     SELECT o->>'txn_id', p->>'account', (p->>'delta')::bigint, p->>'kind'
       FROM jsonb_array_elements(o->'postings') WITH ORDINALITY AS x(p, n)
      WHERE (p->>'delta')::bigint <> 0
      ORDER BY n;
     PERFORM set_config('holon.chain_pending',
       coalesce(nullif(current_setting('holon.chain_pending', true), ''), ',') || to_json(o->>'txn_id')::text || ',', true);
     RETURN true;
   END $$`,
];

/** Adds the column `terms_text`, writes it from the operation's `terms_text`, and takes an entry's terms in its leaf from it. */
export async function up(knex: Knex): Promise<void> {
  for (const sql of statements) await knex.raw(sql);
}

/** Goes back to migration 026's functions (development only: the column, and the texts it held, are dropped). */
export async function down(knex: Knex): Promise<void> {
  for (const sql of restored) await knex.raw(sql);
  await knex.raw('ALTER TABLE clearing_transactions DROP COLUMN terms_text');
}
