-- Appends one entry for reverse and draw, which look their id up first: an id stored meanwhile by
-- a concurrent request is the unique violation on which the write path runs the operation again
-- (clearing-contract §9, src/clearing/write-path.ts).
--
-- Created by migration 005; this text since migration 014.
CREATE OR REPLACE FUNCTION clearing_insert_entry(o jsonb) RETURNS void LANGUAGE plpgsql AS $$
   BEGIN
     IF NOT clearing_post_entry(o) THEN
       RAISE EXCEPTION 'transaction id % was stored meanwhile', o->>'txn_id' USING ERRCODE = 'unique_violation';
     END IF;
   END $$;
