-- The journal is append-only: an UPDATE, DELETE or TRUNCATE of an entry, a posting or a draw line
-- is refused. A mistake is corrected by a reverse or an adjust, which the journal records too.
--
-- Created by migration 001; unchanged since (migrations 020 and 026 added the chain's triggers).
CREATE OR REPLACE FUNCTION clearing_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     RAISE EXCEPTION 'the journal is append-only: % on % is refused', TG_OP, TG_TABLE_NAME;
   END $$;

CREATE TRIGGER clearing_transactions_append_only BEFORE UPDATE OR DELETE ON clearing_transactions
  FOR EACH ROW EXECUTE FUNCTION clearing_refuse_change();
CREATE TRIGGER clearing_transactions_no_truncate BEFORE TRUNCATE ON clearing_transactions
  FOR EACH STATEMENT EXECUTE FUNCTION clearing_refuse_change();
CREATE TRIGGER clearing_postings_append_only BEFORE UPDATE OR DELETE ON clearing_postings
  FOR EACH ROW EXECUTE FUNCTION clearing_refuse_change();
CREATE TRIGGER clearing_postings_no_truncate BEFORE TRUNCATE ON clearing_postings
  FOR EACH STATEMENT EXECUTE FUNCTION clearing_refuse_change();
CREATE TRIGGER clearing_draw_lines_append_only BEFORE UPDATE OR DELETE ON clearing_draw_lines
  FOR EACH ROW EXECUTE FUNCTION clearing_refuse_change();
CREATE TRIGGER clearing_draw_lines_no_truncate BEFORE TRUNCATE ON clearing_draw_lines
  FOR EACH STATEMENT EXECUTE FUNCTION clearing_refuse_change();
CREATE TRIGGER clearing_journal_chain_append_only BEFORE UPDATE OR DELETE ON clearing_journal_chain
  FOR EACH ROW EXECUTE FUNCTION clearing_refuse_change();
CREATE TRIGGER clearing_journal_chain_no_truncate BEFORE TRUNCATE ON clearing_journal_chain
  FOR EACH STATEMENT EXECUTE FUNCTION clearing_refuse_change();
CREATE TRIGGER clearing_journal_batches_append_only BEFORE UPDATE OR DELETE ON clearing_journal_batches
  FOR EACH ROW EXECUTE FUNCTION clearing_refuse_change();
CREATE TRIGGER clearing_journal_batches_no_truncate BEFORE TRUNCATE ON clearing_journal_batches
  FOR EACH STATEMENT EXECUTE FUNCTION clearing_refuse_change();
