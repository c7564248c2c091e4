-- reverse (clearing-contract §6.9): an entry's inverse, once. A reverse or an adjust is not
-- reversible (H1421, H1422); an entry already reversed names its reversal (H1423, reversed_by).
-- Reversing a draw gives the amount back to its hold when the hold is still open.
--
-- Created by migration 005; unchanged since.
CREATE OR REPLACE FUNCTION clearing_op_reverse(o jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
   DECLARE existing jsonb; orig clearing_transactions; prior text; acct text; inverse jsonb;
   BEGIN
     existing := clearing_existing(o->>'txn_id');
     IF existing IS NOT NULL THEN RETURN jsonb_build_object('existing', existing); END IF;
     SELECT * INTO orig FROM clearing_transactions WHERE txn_id = o->>'reverses';
     IF NOT FOUND THEN
       RAISE EXCEPTION 'no such transaction' USING ERRCODE = 'H1406', DETAIL = jsonb_build_object('txn_id', o->>'reverses')::text;
     END IF;
     IF orig.door = 'reverse' THEN
       RAISE EXCEPTION 'not reversible' USING ERRCODE = 'H1421', DETAIL = jsonb_build_object('txn_id', orig.txn_id, 'reverses', orig.reverses)::text;
     END IF;
     IF orig.door = 'adjust' THEN
       RAISE EXCEPTION 'not reversible' USING ERRCODE = 'H1422', DETAIL = jsonb_build_object('txn_id', orig.txn_id)::text;
     END IF;
     PERFORM clearing_lock_accounts(orig.account || ARRAY(SELECT account FROM clearing_postings WHERE txn_id = orig.txn_id));
     SELECT txn_id INTO prior FROM clearing_transactions WHERE reverses = orig.txn_id;
     -- A replay that waited on the locks while its first arrival committed: the stored outcome (§9).
     IF prior = o->>'txn_id' THEN RETURN jsonb_build_object('applied', false, 'amount', orig.amount); END IF;
     IF prior IS NOT NULL THEN
       RAISE EXCEPTION 'already reversed' USING ERRCODE = 'H1423', DETAIL = jsonb_build_object('txn_id', orig.txn_id, 'reversed_by', prior)::text;
     END IF;
     IF orig.door = 'draw' THEN
       SELECT account INTO acct FROM clearing_holds WHERE hold_id = orig.hold_id;
       PERFORM clearing_expire_holds(acct);
       UPDATE clearing_holds SET drawn = drawn - orig.amount WHERE hold_id = orig.hold_id AND status = 'open';
     END IF;
     SELECT coalesce(jsonb_agg(jsonb_build_object('account', account, 'delta', -delta, 'kind', 'reverse-' || kind) ORDER BY id), '[]')
       INTO inverse FROM clearing_postings WHERE txn_id = orig.txn_id;
     PERFORM clearing_insert_entry(o || jsonb_build_object('door', 'reverse', 'account', orig.account, 'amount', orig.amount, 'postings', inverse));
     RETURN jsonb_build_object('applied', true, 'amount', orig.amount);
   END $$;
