-- Chains every entry in the transaction that writes it (issue 23 §3): a deferred constraint
-- trigger, so it runs at commit, after the entry's postings are written, and only for entries
-- whose operation was not refused (a refused operation's subtransaction takes its trigger event
-- with it).
--
-- Since migration 026, one link per transaction, not per entry (clearing_chain_batch.sql): the
-- entries written by clearing_post_entry are listed, in order, in the transaction-local setting
-- holon.chain_pending (a rolled-back subtransaction takes its item back with it), and the first of
-- them to fire here chains the whole list at once; the others find themselves in
-- holon.chain_linked and return. The lists are `,"id1","id2",`: each id as its JSON text between
-- commas, so `,"id",` matches one id only (a quote inside an id is escaped). An entry written some
-- other way is chained alone. A transaction's lists hold the ids it wrote: the write path sends
-- at most 64 operations per transaction (HOLON_CLEARING_GROUP_MAX). A restore, which loads the
-- links of its backup with the entries, turns this trigger off for its transaction
-- (src/backup/backup.ts).
--
-- Created by migration 020; this text since migration 026.
CREATE OR REPLACE FUNCTION clearing_chain_entry() RETURNS trigger LANGUAGE plpgsql AS $$
   DECLARE id text := ',' || to_json(NEW.txn_id)::text || ','; linked text; pending text;
   BEGIN
     linked := coalesce(current_setting('holon.chain_linked', true), '');
     IF strpos(linked, id) > 0 THEN RETURN NULL; END IF;
     pending := coalesce(current_setting('holon.chain_pending', true), '');
     IF strpos(pending, id) > 0 THEN
       PERFORM set_config('holon.chain_pending', '', true);
     ELSE
       pending := id;
     END IF;
     PERFORM clearing_chain_batch(pending);
     PERFORM set_config('holon.chain_linked', CASE WHEN linked = '' THEN pending ELSE linked || substr(pending, 2) END, true);
     RETURN NULL;
   END $$;

CREATE CONSTRAINT TRIGGER clearing_transactions_chained AFTER INSERT ON clearing_transactions
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION clearing_chain_entry();
