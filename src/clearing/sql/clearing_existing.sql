-- The stored row of a transaction id as JSON, or null (a replay, clearing-contract §9).
-- PL/pgSQL for its cached plan (why: clearing_accounts_of.sql).
--
-- Created by migration 005 in LANGUAGE sql; this text since migration 014.
CREATE OR REPLACE FUNCTION clearing_existing(txn text) RETURNS jsonb LANGUAGE plpgsql AS $$
   BEGIN
     RETURN (SELECT to_jsonb(t) FROM clearing_transactions t WHERE t.txn_id = txn);
   END $$;
