-- The figures of a holder account (clearing-contract §6.2): {account, balance, reserved,
-- available}, in micro-units; a hold whose window has closed never counts. Null for an unknown
-- account. PL/pgSQL for its cached plan (why: clearing_accounts_of.sql).
--
-- Created by migration 005 in LANGUAGE sql; this text since migration 014.
CREATE OR REPLACE FUNCTION clearing_figures(acct text) RETURNS jsonb LANGUAGE plpgsql AS $$
   BEGIN
     RETURN (SELECT jsonb_build_object('account', a.id, 'balance', a.balance, 'reserved', r.reserved, 'available', a.balance - r.reserved)
               FROM clearing_accounts a,
                    LATERAL (SELECT coalesce(sum(h.amount - h.drawn), 0)::bigint AS reserved FROM clearing_holds h
                              WHERE h.account = a.id AND h.status = 'open' AND h.expires_at > clock_timestamp()) r
              WHERE a.id = acct);
   END $$;
