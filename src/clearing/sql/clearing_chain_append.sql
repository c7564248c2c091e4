-- Appends one entry to the journal's hash chain (issue 23 §3): its position is the next one, its
-- hash the SHA-256 (hex) of the canonical JSON (RFC 8785) of {entry, prev}, where prev is the hash
-- at the position before (null for the first entry) and entry is the journal entry as `holon audit`
-- rebuilds it from a database or a backup: txn_id, door, account, amount (decimal text: a bigint may
-- not fit a JSON number), terms, reverses, hold_id, reason, actor, ref, memo, simulated, and its
-- postings in the order written (account, delta as decimal text, kind). Not covered: created_at (a
-- backup keeps it to the millisecond only) and the draw lines (their amounts are the entry's
-- postings).
--
-- The canonical text is written out for the entry's fixed shape, in one statement: its keys and
-- its postings' keys in code-point order, each string as PostgreSQL's JSON text of it (to_json,
-- the escaping clearing_canonical.sql uses), a missing value as null, the amounts as decimal text.
-- Only terms, the one free-form member, goes through clearing_canonical. Migration 020 built the
-- entry as jsonb and canonicalised the whole of it, about 30 calls of that plpgsql function per
-- entry; the text, and so every hash, is the same byte for byte (tests/clearing/chain.test.ts).
--
-- The chain has one tail: the caller holds clearing_journal_chain in EXCLUSIVE mode until its
-- transaction ends, so positions follow commit order and no two entries share one.
--
-- Created by migration 020; this text since migration 025.
CREATE OR REPLACE FUNCTION clearing_chain_append(t clearing_transactions) RETURNS void LANGUAGE plpgsql SET enable_seqscan = off AS $$
   BEGIN
     INSERT INTO clearing_journal_chain (position, txn_id, hash)
     SELECT coalesce(last.position, 0) + 1, t.txn_id, encode(sha256(convert_to(
              '{"entry":{"account":' || to_json(t.account)::text || ',"actor":' || coalesce(to_json(t.actor)::text, 'null')
              || ',"amount":"' || t.amount || '","door":' || to_json(t.door)::text
              || ',"hold_id":' || coalesce(to_json(t.hold_id)::text, 'null') || ',"memo":' || coalesce(to_json(t.memo)::text, 'null')
              || ',"postings":[' || coalesce((SELECT string_agg('{"account":' || to_json(p.account)::text || ',"delta":"' || p.delta
                                                                || '","kind":' || to_json(p.kind)::text || '}', ',' ORDER BY p.id)
                                                FROM clearing_postings p WHERE p.txn_id = t.txn_id), '')
              || '],"reason":' || coalesce(to_json(t.reason)::text, 'null') || ',"ref":' || coalesce(to_json(t.ref)::text, 'null')
              || ',"reverses":' || coalesce(to_json(t.reverses)::text, 'null') || ',"simulated":' || to_json(t.simulated)::text
              || ',"terms":' || clearing_canonical(t.terms) || ',"txn_id":' || to_json(t.txn_id)::text
              || '},"prev":' || coalesce('"' || last.hash || '"', 'null') || '}', 'UTF8')), 'hex')
       FROM (SELECT 1) AS one
       LEFT JOIN (SELECT c.position, c.hash FROM clearing_journal_chain c ORDER BY c.position DESC LIMIT 1) AS last ON true;
   END $$;
