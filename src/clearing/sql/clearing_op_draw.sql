-- draw (clearing-contract §6.13): bills a hold's lines in order, each clamped at what the hold has
-- left (capped), as one settlement caller → owner with no margin. Only the hold's account may draw
-- (H1451), only from an open hold (H1441); a stored id answers its lines and the hold's remainder.
--
-- Created by migration 005; unchanged since.
CREATE OR REPLACE FUNCTION clearing_op_draw(o jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
   DECLARE h clearing_holds; existing jsonb; lft bigint; billed bigint := 0; line jsonb; taken bigint; lines jsonb := '[]';
   BEGIN
     h := clearing_lock_hold(o->>'hold_id', ARRAY[o->>'owner']);
     existing := clearing_existing(o->>'txn_id');
     IF existing IS NOT NULL THEN
       RETURN jsonb_build_object('existing', existing, 'remaining', h.amount - h.drawn,
         'lines', (SELECT coalesce(jsonb_agg(to_jsonb(l) ORDER BY l.seq), '[]') FROM clearing_draw_lines l WHERE l.txn_id = o->>'txn_id'));
     END IF;
     IF h.account <> o->>'caller' THEN
       RAISE EXCEPTION 'not the holder' USING ERRCODE = 'H1451', DETAIL = jsonb_build_object('hold_id', h.hold_id, 'account', h.account, 'caller', o->>'caller')::text;
     END IF;
     IF h.status <> 'open' THEN
       RAISE EXCEPTION 'closed' USING ERRCODE = 'H1441', DETAIL = jsonb_build_object('hold_id', h.hold_id, 'reason', h.release_reason)::text;
     END IF;
     lft := h.amount - h.drawn;
     FOR line IN SELECT value FROM jsonb_array_elements(o->'lines') LOOP
       taken := least((line->>'asked')::bigint, lft);
       lft := lft - taken;
       billed := billed + taken;
       lines := lines || jsonb_build_array(line || jsonb_build_object('amount', taken, 'capped', taken < (line->>'asked')::bigint));
     END LOOP;
     PERFORM clearing_insert_entry(o || jsonb_build_object('door', 'draw', 'account', o->>'caller', 'amount', billed,
       'postings', jsonb_build_array(
         jsonb_build_object('account', o->>'caller', 'delta', -billed, 'kind', 'charge'),
         jsonb_build_object('account', o->>'owner', 'delta', billed, 'kind', 'earn'))));
     INSERT INTO clearing_draw_lines (txn_id, seq, hold_id, meter, amount, asked, unit, count, per, per_unit, pass_through, upstream_receipt, capped)
     SELECT o->>'txn_id', n - 1, h.hold_id, l->>'meter', (l->>'amount')::bigint, (l->>'asked')::bigint, l->>'unit',
            (l->>'count')::bigint, (l->>'per')::bigint, (l->>'per_unit')::bigint, (l->>'pass_through')::boolean, l->>'upstream_receipt', (l->>'capped')::boolean
       FROM jsonb_array_elements(lines) WITH ORDINALITY AS x(l, n);
     UPDATE clearing_holds SET drawn = drawn + billed WHERE hold_id = h.hold_id;
     RETURN jsonb_build_object('applied', true, 'billed', billed, 'remaining', lft, 'lines', lines);
   END $$;
