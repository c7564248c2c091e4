-- The holder accounts an operation will lock, for clearing_apply to lock a batch's accounts up
-- front in id order. Missing accounts are included: the operation itself refuses them (H1404).
--
-- PL/pgSQL, not LANGUAGE sql: a sql function called from PL/pgSQL is not inlined, so it was parsed
-- and planned again in every transaction; a PL/pgSQL function's plans are cached for the session
-- (migration 014 measured the cost).
--
-- Created by migration 005; this text since migration 014.
CREATE OR REPLACE FUNCTION clearing_accounts_of(o jsonb) RETURNS SETOF text LANGUAGE plpgsql AS $$
   BEGIN
     CASE o->>'op'
       WHEN 'post' THEN RETURN QUERY SELECT jsonb_array_elements_text(o->'lock');
       WHEN 'open-hold' THEN RETURN NEXT o->>'account';
       WHEN 'draw' THEN
         RETURN NEXT o->>'owner';
         RETURN QUERY SELECT account FROM clearing_holds WHERE hold_id = o->>'hold_id';
       WHEN 'resize-hold', 'release-hold' THEN RETURN QUERY SELECT account FROM clearing_holds WHERE hold_id = o->>'hold_id';
       WHEN 'reverse' THEN
         RETURN QUERY SELECT account FROM clearing_transactions WHERE txn_id = o->>'reverses'
                      UNION ALL SELECT account FROM clearing_postings WHERE txn_id = o->>'reverses';
       ELSE NULL;
     END CASE;
   END $$;
