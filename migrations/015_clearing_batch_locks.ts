/**
 * A batch's operations lock nothing twice (issue 12 §1–§2): the same operations, outcomes and
 * refusals as migrations 005 and 014, with two costs of a grouped settle taken out. Measured on
 * PostgreSQL 15, one backend, batches of 16 settles of 16 payer/payee pairs (`pg_stat_user_functions`
 * and wall time per settle): 0.74 ms before, 0.47 ms after.
 *
 * - `clearing_apply` locks every holder account of a batch, in id order, before any operation runs
 *   (migration 005), and keeps the ids it locked. A post (credit, settle, adjust) whose accounts
 *   are all among them does not lock them again: a row lock of the top transaction outlives its subtransactions,
 *   and the second lock, taken in a subtransaction on a row version an earlier subtransaction
 *   wrote, cost about 150 µs per operation. Any other operation locks as before, and raises 404
 *   (H1404) for an account that does not exist.
 * - `clearing_postings.account` has no foreign key any longer: its check took a `FOR KEY SHARE`
 *   lock on the account row for every posting, and every settle's fee posting names the one row
 *   of `platform:fees`, so every settle of every batch queued on one multixact (about 100 µs
 *   per settle). The posting trigger, which every posting passes through to move its account's
 *   balance, refuses an account it finds no balance row for instead (H1404), in the same
 *   statement: the journal still names only accounts that exist. What the foreign key also
 *   refused, deleting an account the journal names or changing its id, a trigger on
 *   `clearing_accounts` refuses (23503, as the foreign key did); a restore empties the table only
 *   when the journal is empty.
 * - Everything a batch runs is planned with `enable_seqscan = off` (a statement planned first
 *   outside a batch, e.g. by a restore's inserts, keeps its plan in that session): the lookups of
 *   the balance trigger and of the foreign-key checks by id. When ANALYZE or VACUUM finds `clearing_accounts`
 *   at a page or two (a small deployment: a few holders, its dead row versions just vacuumed
 *   away), the planner picks a sequential scan for `UPDATE … WHERE id = $1`, caches it, and the
 *   scan then reads every dead version the next settles leave: a shared payer's batches ran at
 *   800–850 settles/s after an ANALYZE against 1 400–1 500 before it (bench/clearing, 16 clients,
 *   with auto_explain showing the scans). A foreign-key check planned while `clearing_transactions`
 *   was tiny scanned the whole journal the same way, and so did the zero-sum check at commit
 *   (`clearing_check_balanced`, migration 001) when its plan was cached before the first ANALYZE
 *   (one client settling: 283/s on connections that planned it early, 431/s on fresh ones).
 */
import type { Knex } from 'knex';
import { clearingApplySql, postingTriggerSql } from './005_clearing_write_path.ts';
import * as writePathCost from './014_clearing_write_path_cost.ts';

const statements = [
  'ALTER TABLE clearing_postings DROP CONSTRAINT clearing_postings_account_fkey',
  'DROP FUNCTION clearing_op_post(jsonb)',
  // credit, settle, adjust: lock (unless the batch holds every account already), then post the entry; a stored id answers its row as existing.
  `CREATE FUNCTION clearing_op_post(o jsonb, held text[]) RETURNS jsonb LANGUAGE plpgsql AS $$
   DECLARE ids text[] := ARRAY(SELECT jsonb_array_elements_text(o->'lock'));
   BEGIN
     IF NOT ids <@ held THEN PERFORM clearing_lock_accounts(ids); END IF;
     IF clearing_post_entry(o) THEN RETURN '{"applied": true}'; END IF;
     RETURN jsonb_build_object('existing', clearing_existing(o->>'txn_id'));
   END $$`,
  clearingApplySql(true),
  // The zero-sum check runs at commit, outside clearing_apply: its lookup of an entry's postings by id, too.
  'ALTER FUNCTION clearing_check_balanced() SET enable_seqscan = off',
  postingTriggerSql(true),
  // What the postings' foreign key refused besides a missing account: an account the journal names is never deleted nor renamed.
  `CREATE FUNCTION clearing_keep_journal_accounts() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     IF EXISTS (SELECT 1 FROM clearing_postings WHERE account = OLD.id) THEN
       RAISE EXCEPTION 'account % is named by the journal', OLD.id USING ERRCODE = 'foreign_key_violation';
     END IF;
     RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
   END $$`,
  `CREATE TRIGGER clearing_accounts_keep_journal BEFORE DELETE OR UPDATE OF id ON clearing_accounts
     FOR EACH ROW EXECUTE FUNCTION clearing_keep_journal_accounts()`,
];

/** Replaces the batch's locking and the posting trigger, and drops the postings' account foreign key. */
export async function up(knex: Knex): Promise<void> {
  for (const sql of statements) await knex.raw(sql);
}

/** Restores the functions of migration 014 and the foreign key (development only). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER clearing_accounts_keep_journal ON clearing_accounts');
  await knex.raw('DROP FUNCTION clearing_keep_journal_accounts()');
  await knex.raw('ALTER FUNCTION clearing_check_balanced() RESET enable_seqscan');
  await knex.raw('DROP FUNCTION clearing_op_post(jsonb, text[])');
  // 014's down restores every function of 005 (the trigger included); its up then replaces its own.
  await writePathCost.down(knex);
  await writePathCost.up(knex);
  await knex.raw('ALTER TABLE clearing_postings ADD CONSTRAINT clearing_postings_account_fkey FOREIGN KEY (account) REFERENCES clearing_accounts (id)');
}
