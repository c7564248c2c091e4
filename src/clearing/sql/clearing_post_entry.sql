-- Appends one entry and its non-zero postings (in the order given), or nothing when its id is
-- stored; answers whether it did. One INSERT … ON CONFLICT (txn_id) DO NOTHING looks the id up and
-- inserts at once: a concurrent first use of the id waits for the other and finds it stored,
-- instead of failing with a unique violation and running again (migration 014). The postings'
-- zero-sum check runs at commit (clearing_check_balanced.sql). The entry's id joins the
-- transaction's list of entries to chain at commit, holon.chain_pending (clearing_chain_entry.sql;
-- since migration 026).
--
-- terms_text, when the operation has it, is the canonical JSON (RFC 8785) of the entry's terms as
-- the binding wrote it (src/clearing/ledger-op.ts): it is stored, and the terms stored are that
-- text read as jsonb, so the two never disagree; the entry's leaf takes it as it is
-- (clearing_chain_batch.sql). Without it, the operation's `terms` are stored and terms_text is
-- NULL (since migration 027).
--
-- Created by migration 014; this text since migration 027.
CREATE OR REPLACE FUNCTION clearing_post_entry(o jsonb) RETURNS boolean LANGUAGE plpgsql AS $$
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
   END $$;
