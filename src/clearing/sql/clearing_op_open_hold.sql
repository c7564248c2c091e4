-- open-hold (clearing-contract §6.11): reserves part of a holder account's available figure until
-- an instant. The same hold id with other terms is refused (H1452); with the same terms it answers
-- the stored hold. Asking for more than is available raises insufficient_funds with the figures.
--
-- Created by migration 005; unchanged since.
CREATE OR REPLACE FUNCTION clearing_op_open_hold(o jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
   DECLARE h clearing_holds; fig jsonb; want bigint := (o->>'amount')::bigint; at timestamptz;
   BEGIN
     PERFORM clearing_lock_accounts(ARRAY[o->>'account']);
     SELECT * INTO h FROM clearing_holds WHERE hold_id = o->>'hold_id';
     IF FOUND THEN
       IF h.account <> o->>'account' OR h.amount <> want THEN
         RAISE EXCEPTION 'hold terms conflict' USING ERRCODE = 'H1452',
           DETAIL = jsonb_build_object('hold_id', h.hold_id, 'account', h.account, 'amount', h.amount)::text;
       END IF;
       fig := clearing_figures(h.account);
       RETURN jsonb_build_object('applied', false, 'reservation', to_jsonb(h), 'available', fig->'available');
     END IF;
     at := clearing_future(o->>'expires_raw', (o->>'expires_at')::timestamptz);
     fig := clearing_figures(o->>'account');
     IF want > (fig->>'available')::bigint THEN PERFORM clearing_insufficient(want, 'a hold', fig); END IF;
     INSERT INTO clearing_holds (hold_id, account, amount, status, expires_at, ref, memo)
     VALUES (o->>'hold_id', o->>'account', want, 'open', at, o->>'ref', o->>'memo')
     RETURNING * INTO h;
     RETURN jsonb_build_object('applied', true, 'reservation', to_jsonb(h), 'available', (fig->>'available')::bigint - want);
   END $$;
