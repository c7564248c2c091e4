-- The moderation log is append-only: what an operator did stays on record (src/hosted/moderation.ts).
--
-- Created by migration 011; unchanged since.
CREATE OR REPLACE FUNCTION hosted_moderation_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN RAISE EXCEPTION 'hosted_moderation_log is append-only'; END $$;

CREATE TRIGGER hosted_moderation_log_append_only BEFORE UPDATE OR DELETE ON hosted_moderation_log
  FOR EACH ROW EXECUTE FUNCTION hosted_moderation_log_append_only();
CREATE TRIGGER hosted_moderation_log_no_truncate BEFORE TRUNCATE ON hosted_moderation_log
  FOR EACH STATEMENT EXECUTE FUNCTION hosted_moderation_log_append_only();
