-- The write path's one call (issue 12 §1): every value-moving request (credit, settle, adjust,
-- reverse, draw, open/resize/release hold) is one call of clearing_apply(ops), and so is a group of
-- concurrent requests (group commit, src/clearing/write-path.ts). It answers a JSON array of
-- outcomes, one per operation, in order.
--
-- Each operation runs in its own subtransaction (the exception block is a savepoint), so one
-- refusal never undoes or blocks another. A refusal comes back as {error: {sqlstate, message,
-- detail}}: its SQLSTATE of class H1 and its JSON DETAIL naming the figures, which
-- src/clearing/refusals.ts maps to the clearing-contract §7 code and sentence.
--
-- A batch of more than one operation locks every holder account its operations will lock
-- (clearing_accounts_of), in id order, before any of them runs: two batches never deadlock on
-- accounts. It keeps the ids it locked (held) and hands them to clearing_op_post, which then does
-- not lock them again: a row lock of the top transaction outlives its subtransactions, and taking
-- it again in a subtransaction cost about 150 µs per operation (measured in migration 015).
--
-- SET enable_seqscan = off: everything a batch runs looks rows up by id. When ANALYZE finds
-- clearing_accounts at a page or two (a small deployment), the planner caches a sequential scan
-- for UPDATE … WHERE id = $1, which then reads every dead row version the next settles leave
-- (a shared payer's batches fell from about 1 450 to 830 settles/s; migration 015).
--
-- Created by migration 005; this text since migration 015.
CREATE OR REPLACE FUNCTION clearing_apply(ops jsonb) RETURNS jsonb LANGUAGE plpgsql SET enable_seqscan = off AS $$
   DECLARE o jsonb; outcome jsonb; outcomes jsonb := '[]'; st text; err_detail text; held text[] := '{}';
   BEGIN
     IF jsonb_array_length(ops) > 1 THEN
       -- Every account of the batch, in id order, before any operation runs: batches never deadlock on accounts.
       held := ARRAY(SELECT id FROM clearing_accounts
        WHERE kind = 'holder' AND id IN (SELECT clearing_accounts_of(x) FROM jsonb_array_elements(ops) AS x)
        ORDER BY id FOR UPDATE);
     END IF;
     FOR o IN SELECT value FROM jsonb_array_elements(ops) LOOP
       BEGIN
         outcome := CASE o->>'op'
           WHEN 'post' THEN clearing_op_post(o, held)
           WHEN 'reverse' THEN clearing_op_reverse(o)
           WHEN 'open-hold' THEN clearing_op_open_hold(o)
           WHEN 'resize-hold' THEN clearing_op_resize_hold(o)
           WHEN 'release-hold' THEN clearing_op_release_hold(o)
           WHEN 'draw' THEN clearing_op_draw(o)
         END;
         IF outcome IS NULL THEN RAISE EXCEPTION 'unknown operation %', o->>'op'; END IF;
       EXCEPTION WHEN OTHERS THEN
         GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, err_detail = PG_EXCEPTION_DETAIL;
         outcome := jsonb_build_object('error', jsonb_build_object('sqlstate', st, 'message', SQLERRM, 'detail', err_detail));
       END;
       outcomes := outcomes || jsonb_build_array(outcome);
     END LOOP;
     RETURN outcomes;
   END $$;
