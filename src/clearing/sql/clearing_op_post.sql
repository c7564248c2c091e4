-- credit, settle, adjust (clearing-contract §6.7, §6.8, §6.10): lock the accounts, then post the
-- entry; a transaction id already stored answers its row under `existing`, and the rules in
-- src/clearing/ decide whether it is the same request (§9).
--
-- held: the ids clearing_apply locked up front for the batch; a post whose accounts are all among
-- them does not lock them again (why: clearing_apply.sql). clearing_post_entry looks the id up and
-- inserts in one statement, so a concurrent first use of the id waits and answers the stored row.
--
-- Created by migration 005 as clearing_op_post(o); this text since migration 015.
CREATE OR REPLACE FUNCTION clearing_op_post(o jsonb, held text[]) RETURNS jsonb LANGUAGE plpgsql AS $$
   DECLARE ids text[] := ARRAY(SELECT jsonb_array_elements_text(o->'lock'));
   BEGIN
     IF NOT ids <@ held THEN PERFORM clearing_lock_accounts(ids); END IF;
     IF clearing_post_entry(o) THEN RETURN '{"applied": true}'; END IF;
     RETURN jsonb_build_object('existing', clearing_existing(o->>'txn_id'));
   END $$;
