-- The hosted call log is append-only: a row, once written, is what happened (src/hosted/).
--
-- Created by migration 006; unchanged since.
CREATE OR REPLACE FUNCTION call_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN RAISE EXCEPTION 'call_events is append-only'; END $$;

CREATE TRIGGER call_events_append_only BEFORE UPDATE OR DELETE ON call_events
  FOR EACH ROW EXECUTE FUNCTION call_events_append_only();
