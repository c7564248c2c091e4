-- Value is conserved (clearing-contract §8, invariant 6): the postings of an entry sum to zero,
-- checked once per posting at commit (a deferred constraint trigger), so an entry's postings may be
-- inserted one by one.
--
-- SET enable_seqscan = off: the check runs at commit, outside clearing_apply, and a plan cached
-- before the first ANALYZE scanned the whole journal (one client settling: 283/s on connections
-- that planned it early, 431/s on fresh ones; migration 015).
--
-- Created by migration 001; this text since migration 015 (which set enable_seqscan).
CREATE OR REPLACE FUNCTION clearing_check_balanced() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
   DECLARE total numeric;
   BEGIN
     SELECT sum(delta) INTO total FROM clearing_postings WHERE txn_id = NEW.txn_id;
     IF total <> 0 THEN
       RAISE EXCEPTION 'entry % does not balance: its postings sum to %', NEW.txn_id, total;
     END IF;
     RETURN NULL;
   END $$;

CREATE CONSTRAINT TRIGGER clearing_postings_balanced AFTER INSERT ON clearing_postings
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION clearing_check_balanced();
