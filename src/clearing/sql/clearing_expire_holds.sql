-- Expiry (clearing-contract §6.15): releases the open holds of one account whose window has closed.
-- PL/pgSQL for its cached plan (why: clearing_accounts_of.sql).
--
-- Created by migration 005 in LANGUAGE sql; this text since migration 014.
CREATE OR REPLACE FUNCTION clearing_expire_holds(acct text) RETURNS void LANGUAGE plpgsql AS $$
   BEGIN
     UPDATE clearing_holds SET status = 'released', released_at = expires_at, release_reason = 'expired'
      WHERE account = acct AND status = 'open' AND expires_at <= clock_timestamp();
   END $$;
