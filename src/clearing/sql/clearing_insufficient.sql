-- Raises insufficient_funds (H1430, 422) with the four figures of clearing-contract §6.11: what
-- was asked and the account's balance, reserved and available, in micro-units.
--
-- Created by migration 005; unchanged since.
CREATE OR REPLACE FUNCTION clearing_insufficient(asked bigint, what text, fig jsonb) RETURNS void LANGUAGE plpgsql AS $$
   BEGIN
     RAISE EXCEPTION 'insufficient funds' USING ERRCODE = 'H1430',
       DETAIL = (fig || jsonb_build_object('asked', asked, 'what', what))::text;
   END $$;
