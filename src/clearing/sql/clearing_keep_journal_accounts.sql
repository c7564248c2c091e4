-- What the postings' foreign key to clearing_accounts refused besides a missing account (which the
-- posting trigger refuses, H1404): an account the journal names is never deleted nor renamed
-- (23503, as the foreign key answered). Migration 015 dropped the foreign key: its check took a
-- FOR KEY SHARE lock on the account row for every posting, so every settle of every batch queued
-- on the one platform:fees row (about 100 µs per settle). A restore empties clearing_accounts only
-- when the journal is empty.
--
-- Created by migration 015; unchanged since.
CREATE OR REPLACE FUNCTION clearing_keep_journal_accounts() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     IF EXISTS (SELECT 1 FROM clearing_postings WHERE account = OLD.id) THEN
       RAISE EXCEPTION 'account % is named by the journal', OLD.id USING ERRCODE = 'foreign_key_violation';
     END IF;
     RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
   END $$;

CREATE TRIGGER clearing_accounts_keep_journal BEFORE DELETE OR UPDATE OF id ON clearing_accounts
  FOR EACH ROW EXECUTE FUNCTION clearing_keep_journal_accounts();
