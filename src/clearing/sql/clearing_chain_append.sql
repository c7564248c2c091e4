-- Appends one entry to the journal's hash chain (issue 23 §3): its position is the next one, its
-- hash the SHA-256 (hex) of the canonical JSON (clearing_canonical.sql) of {entry, prev}, where
-- prev is the hash at the position before (null for the first entry) and entry is the journal
-- entry as `holon audit` rebuilds it from a database or a backup: txn_id, door, account, amount
-- (decimal text: a bigint may not fit a JSON number), terms, reverses, hold_id, reason, actor, ref,
-- memo, simulated, and its postings in the order written (account, delta as decimal text, kind).
-- Not covered: created_at (a backup keeps it to the millisecond only) and the draw lines (their
-- amounts are the entry's postings).
--
-- The chain has one tail: the caller holds clearing_journal_chain in EXCLUSIVE mode until its
-- transaction ends, so positions follow commit order and no two entries share one.
--
-- Created by migration 020; unchanged since.
CREATE OR REPLACE FUNCTION clearing_chain_append(t clearing_transactions) RETURNS void LANGUAGE plpgsql SET enable_seqscan = off AS $$
   DECLARE last_position bigint; last_hash text; entry jsonb;
   BEGIN
     SELECT c.position, c.hash INTO last_position, last_hash FROM clearing_journal_chain c ORDER BY c.position DESC LIMIT 1;
     entry := jsonb_build_object('txn_id', t.txn_id, 'door', t.door, 'account', t.account, 'amount', t.amount::text,
       'terms', t.terms, 'reverses', t.reverses, 'hold_id', t.hold_id, 'reason', t.reason, 'actor', t.actor, 'ref', t.ref,
       'memo', t.memo, 'simulated', t.simulated,
       'postings', coalesce((SELECT jsonb_agg(jsonb_build_object('account', p.account, 'delta', p.delta::text, 'kind', p.kind) ORDER BY p.id)
                               FROM clearing_postings p WHERE p.txn_id = t.txn_id), '[]'::jsonb));
     INSERT INTO clearing_journal_chain (position, txn_id, hash)
     VALUES (coalesce(last_position, 0) + 1, t.txn_id,
             encode(sha256(convert_to(clearing_canonical(jsonb_build_object('entry', entry, 'prev', last_hash)), 'UTF8')), 'hex'));
   END $$;
