-- An expiresAt that is not a future instant is refused (H1461), naming the value as sent and
-- whether it was an instant at all.
--
-- Created by migration 005; unchanged since.
CREATE OR REPLACE FUNCTION clearing_future(raw text, at timestamptz) RETURNS timestamptz LANGUAGE plpgsql AS $$
   BEGIN
     IF at IS NULL OR at <= clock_timestamp() THEN
       RAISE EXCEPTION 'not a future instant' USING ERRCODE = 'H1461',
         DETAIL = jsonb_build_object('value', raw, 'instant', at IS NOT NULL)::text;
     END IF;
     RETURN at;
   END $$;
