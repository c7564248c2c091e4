-- Locks a hold for a write: its account (and also_lock) first, in id order as everywhere, then
-- applies expiry, then locks the hold row. H1405 when the hold is unknown.
--
-- Created by migration 005; unchanged since.
CREATE OR REPLACE FUNCTION clearing_lock_hold(hold text, also_lock text[]) RETURNS clearing_holds LANGUAGE plpgsql AS $$
   DECLARE acct text; h clearing_holds;
   BEGIN
     SELECT account INTO acct FROM clearing_holds WHERE hold_id = hold;
     IF NOT FOUND THEN
       RAISE EXCEPTION 'no such reservation' USING ERRCODE = 'H1405', DETAIL = jsonb_build_object('hold_id', hold)::text;
     END IF;
     PERFORM clearing_lock_accounts(acct || also_lock);
     PERFORM clearing_expire_holds(acct);
     SELECT * INTO h FROM clearing_holds WHERE hold_id = hold FOR UPDATE;
     RETURN h;
   END $$;
