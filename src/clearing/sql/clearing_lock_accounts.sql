-- Locks the named holder accounts in id order and raises H1404 naming the first, in id order, that
-- does not exist. A machinery account's row is never locked (its balance is in stripes: see
-- clearing_apply_posting.sql).
-- It searches for a missing one only when it locked fewer rows than it was asked for, which is
-- not the usual case (migration 014).
--
-- Created by migration 005; this text since migration 014.
CREATE OR REPLACE FUNCTION clearing_lock_accounts(ids text[]) RETURNS void LANGUAGE plpgsql AS $$
   DECLARE locked integer; missing text;
   BEGIN
     PERFORM 1 FROM clearing_accounts WHERE id = ANY (ids) AND kind = 'holder' ORDER BY id FOR UPDATE;
     GET DIAGNOSTICS locked = ROW_COUNT;
     -- Every named holder was there (the usual case): nothing to search for.
     IF locked = (SELECT count(DISTINCT x) FROM unnest(ids) AS x WHERE x NOT LIKE 'external:%' AND x NOT LIKE 'platform:%') THEN
       RETURN;
     END IF;
     SELECT min(x) INTO missing FROM unnest(ids) AS x
      WHERE x NOT LIKE 'external:%' AND x NOT LIKE 'platform:%'
        AND NOT EXISTS (SELECT 1 FROM clearing_accounts a WHERE a.id = x);
     IF missing IS NOT NULL THEN
       RAISE EXCEPTION 'no such account' USING ERRCODE = 'H1404', DETAIL = jsonb_build_object('account', missing)::text;
     END IF;
   END $$;
