-- Chains the entries a transaction wrote, once for all of them (issue 23 §3: "batches of the group
-- commit may chain once per batch, a Merkle root over the batch's entries"; since migration 026).
-- `list` holds the transaction ids in the order written, as clearing_chain_entry.sql keeps them
-- (`,"id1","id2",`). One row of clearing_journal_batches:
--
--   position  the chain's size after this link: the position before it plus the entries it holds
--             (positions 1, 2, … count entries, so a checkpoint's size is the same whichever link
--             format chained them);
--   entries   the transaction ids, in order;
--   leaves    each entry's leaf hash (hex): SHA-256 of the byte 0x00 and the canonical JSON (RFC
--             8785) of the entry, as clearing_journal_chain's links held it before (txn_id, door,
--             account, amount as decimal text, terms, reverses, hold_id, reason, actor, ref, memo,
--             simulated, postings in the order written with delta as decimal text) — kept so that
--             `holon audit` names the entry that no longer matches;
--   root      the Merkle tree hash of the leaves as RFC 6962 §2.1 defines it (an inner node is
--             SHA-256 of the byte 0x01 and its two children; computed level by level, pairing
--             neighbours and carrying an odd last node up, which is the same tree);
--   hash      SHA-256 (hex) of the canonical JSON of {prev, root, size}: prev is the hash at the
--             chain's tail before (this table's last row, else migration 020's last link, else null).
--
-- The entry's canonical text is written out for its fixed shape, as migration 025 did: strings as
-- PostgreSQL's JSON text of them (to_json, the escaping clearing_canonical.sql uses), a missing
-- value as null, amounts as decimal text. Terms, the one free-form member, is the entry's
-- terms_text when it has one: the canonical JSON the binding wrote, from which
-- clearing_post_entry.sql stored the terms (since migration 027; writing the terms out here was
-- the largest part of an entry's cost, bench/README.md). Else (an entry written before migration
-- 027 or by other SQL) it is written here member by member when it is an object (every door's
-- terms are a flat object: keys sorted COLLATE "C", strings, booleans and nulls as PostgreSQL's
-- JSON text of them, integers of at most 15 digits as their digits), and any other value, or
-- member, goes through clearing_canonical: its query and function call per entry cost more than
-- the rest of the text (bench/README.md). All leaves come
-- from one statement, so a batch of 16 settles pays for one link, not 16. An entry's postings are
-- read in id order from the index clearing_postings_txn_id (txn_id, id), with no sort.
--
-- The caller holds the chain's tail: this locks clearing_journal_batches in EXCLUSIVE mode (readers
-- go on) until its transaction ends, so positions follow commit order. It takes the lock only once
-- the leaves and the root are computed (they are the transaction's own): the lock is held through
-- the commit, whose WAL flush the next batch waits for, so what is done under it is what every
-- batch waits for in turn (since migration 028).
--
-- SET plan_cache_mode = force_generic_plan: the statements here take the list as a parameter, and
-- PostgreSQL would otherwise plan the leaves' statement again at every call (about 1.1 M
-- instructions per link, measured; bench/README.md): its plan does not depend on the ids.
--
-- Created by migration 026; this text since migration 028.
CREATE OR REPLACE FUNCTION clearing_chain_batch(list text) RETURNS void LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
   DECLARE ids text[] := ARRAY(SELECT json_array_elements_text(('[' || btrim(list, ',') || ']')::json));
     size bigint; prev text; leaves text[]; level text[]; next text[]; n int; root text;
   BEGIN
     leaves := ARRAY(
       SELECT encode(sha256('\x00'::bytea || convert_to(
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
         next := next || CASE WHEN i < n THEN encode(sha256('\x01'::bytea || decode(level[i], 'hex') || decode(level[i + 1], 'hex')), 'hex') ELSE level[i] END;
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
   END $$;
