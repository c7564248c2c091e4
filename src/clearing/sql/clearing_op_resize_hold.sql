-- resize-hold (clearing-contract §6.12): a new amount and/or window for an open hold. Only a raise
-- is checked against the available figure: a reduction or a new window must pass even when
-- available is negative (clearing-contract §8, invariant 11). Never below what was drawn (H1450).
--
-- Created by migration 005; unchanged since.
CREATE OR REPLACE FUNCTION clearing_op_resize_hold(o jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
   DECLARE h clearing_holds; fig jsonb; want bigint := (o->>'amount')::bigint; at timestamptz; delta bigint; available bigint;
   BEGIN
     h := clearing_lock_hold(o->>'hold_id', '{}');
     IF h.status <> 'open' THEN
       RAISE EXCEPTION 'closed' USING ERRCODE = 'H1440', DETAIL = jsonb_build_object('hold_id', h.hold_id, 'reason', h.release_reason)::text;
     END IF;
     at := CASE WHEN o->>'expires_raw' IS NOT NULL THEN clearing_future(o->>'expires_raw', (o->>'expires_at')::timestamptz) ELSE h.expires_at END;
     fig := clearing_figures(h.account);
     available := (fig->>'available')::bigint;
     IF want = h.amount AND at = h.expires_at THEN
       RETURN jsonb_build_object('applied', false, 'reservation', to_jsonb(h), 'available', available, 'delta', 0);
     END IF;
     IF want < h.drawn THEN
       RAISE EXCEPTION 'below drawn' USING ERRCODE = 'H1450', DETAIL = jsonb_build_object('hold_id', h.hold_id, 'drawn', h.drawn, 'amount', want)::text;
     END IF;
     delta := want - h.amount;
     -- Only a raise is checked: a reduction or a new window must pass even when available is negative (invariant 11).
     IF delta > 0 AND delta > available THEN
       PERFORM clearing_insufficient(delta, 'a raise of reservation ' || h.hold_id, fig);
     END IF;
     UPDATE clearing_holds SET amount = want, expires_at = at WHERE hold_id = h.hold_id RETURNING * INTO h;
     RETURN jsonb_build_object('applied', true, 'reservation', to_jsonb(h), 'available', available - delta, 'delta', delta);
   END $$;
