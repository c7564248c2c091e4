/**
 * The chain's lock is taken late (issue 23 §3, "Cost"): `clearing_chain_batch` locks the link
 * table (so positions follow commit order) and holds it through the commit, whose WAL flush the
 * next transaction's link waits for. Since migration 026 it took the lock first and then computed
 * the transaction's leaves and their Merkle root under it; they are the transaction's own and need
 * no lock, so now they are computed first and only the tail's read and the link's insert are done
 * under it. Nothing else changes: the same links, the same bytes.
 *
 * Frozen: the SQL below is what this migration ran (and, for `down`, what it replaced); it
 * imports nothing. Today's definition of each function is in `src/clearing/sql/`.
 */
import type { Knex } from 'knex';

const statements = [
  `CREATE OR REPLACE FUNCTION clearing_chain_batch(list text) RETURNS void LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
   DECLARE ids text[] := ARRAY(SELECT json_array_elements_text(('[' || btrim(list, ',') || ']')::json));
     size bigint; prev text; leaves text[]; level text[]; next text[]; n int; root text;
   BEGIN
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
     LOCK TABLE clearing_journal_batches IN EXCLUSIVE MODE;
     SELECT b.position, b.hash INTO size, prev FROM clearing_journal_batches b ORDER BY b.position DESC LIMIT 1;
     IF NOT FOUND THEN
       SELECT c.position, c.hash INTO size, prev FROM clearing_journal_chain c ORDER BY c.position DESC LIMIT 1;
     END IF;
     size := coalesce(size, 0) + cardinality(ids);
     INSERT INTO clearing_journal_batches (position, entries, leaves, root, hash)
     VALUES (size, ids, leaves, root,
             encode(sha256(convert_to('{"prev":' || coalesce('"' || prev || '"', 'null') || ',"root":"' || root || '","size":' || size || '}', 'UTF8')), 'hex'));
   END $$`,
];

/** What migration 027 had installed, restored by `down`. */
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
];

/** Computes a link's leaves and root before taking the chain's lock. */
export async function up(knex: Knex): Promise<void> {
  for (const sql of statements) await knex.raw(sql);
}

/** Goes back to migration 027's text (the lock taken first). */
export async function down(knex: Knex): Promise<void> {
  for (const sql of restored) await knex.raw(sql);
}
