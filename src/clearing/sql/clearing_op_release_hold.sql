-- release-hold (clearing-contract §6.14): closes an open hold, freeing what it has not drawn. A
-- closed hold answers applied = false with nothing released.
--
-- Created by migration 005; unchanged since.
CREATE OR REPLACE FUNCTION clearing_op_release_hold(o jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
   DECLARE h clearing_holds; released bigint;
   BEGIN
     h := clearing_lock_hold(o->>'hold_id', '{}');
     IF h.status <> 'open' THEN
       RETURN jsonb_build_object('applied', false, 'released', 0, 'reservation', to_jsonb(h));
     END IF;
     released := h.amount - h.drawn;
     UPDATE clearing_holds SET status = 'released', released_at = clock_timestamp(), release_reason = coalesce(o->>'reason', 'released by the caller')
      WHERE hold_id = h.hold_id RETURNING * INTO h;
     RETURN jsonb_build_object('applied', true, 'released', released, 'reservation', to_jsonb(h));
   END $$;
