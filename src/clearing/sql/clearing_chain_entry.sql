-- Chains every entry in the transaction that writes it (issue 23 §3): a deferred constraint
-- trigger, so it runs at commit, after the entry's postings are written, and only for entries
-- whose operation was not refused (a refused operation's subtransaction takes its trigger event
-- with it). The first entry of a transaction locks the chain's tail (EXCLUSIVE: readers of the
-- chain go on) until commit. An entry already chained is left alone: a restore loads the chain
-- rows of its backup in the same transaction as the entries.
--
-- Created by migration 020; unchanged since.
CREATE OR REPLACE FUNCTION clearing_chain_entry() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
   BEGIN
     IF EXISTS (SELECT 1 FROM clearing_journal_chain WHERE txn_id = NEW.txn_id) THEN RETURN NULL; END IF;
     LOCK TABLE clearing_journal_chain IN EXCLUSIVE MODE;
     PERFORM clearing_chain_append(NEW);
     RETURN NULL;
   END $$;

CREATE CONSTRAINT TRIGGER clearing_transactions_chained AFTER INSERT ON clearing_transactions
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION clearing_chain_entry();
