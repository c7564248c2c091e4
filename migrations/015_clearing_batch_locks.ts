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
 *
 * Frozen: the SQL below is what this migration ran (and, for `down`, what it replaced); it
 * imports nothing. Today's definition of each function is in `src/clearing/sql/`.
 */
import type { Knex } from 'knex';

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
  `CREATE OR REPLACE FUNCTION clearing_apply(ops jsonb) RETURNS jsonb LANGUAGE plpgsql SET enable_seqscan = off AS $$
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
   END $$`,
  // The zero-sum check runs at commit, outside clearing_apply: its lookup of an entry's postings by id, too.
  'ALTER FUNCTION clearing_check_balanced() SET enable_seqscan = off',
  `CREATE OR REPLACE FUNCTION clearing_apply_posting() RETURNS trigger LANGUAGE plpgsql AS $$
   DECLARE new_balance bigint; done boolean; left_over bigint; stripe_balance bigint; portion bigint;
   BEGIN
     IF NEW.account LIKE 'external:%' OR NEW.account LIKE 'platform:%' THEN
       -- Fast path: the session's own stripe takes the whole posting.
       UPDATE clearing_machinery_balances SET balance = balance + NEW.delta
        WHERE account = NEW.account AND stripe = pg_backend_pid() % 8
          AND (abs(balance + NEW.delta) <= 375000000000000 OR abs(balance + NEW.delta) <= abs(balance))
       RETURNING true INTO done;
       IF done THEN RETURN NULL; END IF;
       -- Spill-over: fill the stripes in stripe order; refused when they cannot take it all (the subtransaction undoes the rest).
       left_over := NEW.delta;
       FOR i IN 0..7 LOOP
         SELECT balance INTO stripe_balance FROM clearing_machinery_balances WHERE account = NEW.account AND stripe = i FOR UPDATE; IF NOT FOUND THEN RAISE EXCEPTION 'no such account' USING ERRCODE = 'H1404', DETAIL = jsonb_build_object('account', NEW.account)::text; END IF;
         portion := CASE WHEN left_over > 0 THEN least(left_over, greatest(375000000000000 - stripe_balance, 0))
                         ELSE greatest(left_over, least(-375000000000000 - stripe_balance, 0)) END;
         IF portion <> 0 THEN
           UPDATE clearing_machinery_balances SET balance = balance + portion WHERE account = NEW.account AND stripe = i;
           left_over := left_over - portion;
         END IF;
         EXIT WHEN left_over = 0;
       END LOOP;
       IF left_over <> 0 THEN
         RAISE EXCEPTION 'balance bound' USING ERRCODE = 'H1460', DETAIL = jsonb_build_object('account', NEW.account, 'delta', NEW.delta,
           'balance', (SELECT sum(balance) FROM clearing_machinery_balances WHERE account = NEW.account) - (NEW.delta - left_over),
           'bound', 3000000000000000)::text;
       END IF;
       RETURN NULL;
     END IF;
     UPDATE clearing_accounts SET balance = balance + NEW.delta WHERE id = NEW.account AND kind = 'holder' RETURNING balance INTO new_balance; IF NOT FOUND THEN RAISE EXCEPTION 'no such account' USING ERRCODE = 'H1404', DETAIL = jsonb_build_object('account', NEW.account)::text; END IF;
     IF abs(new_balance) > 3000000000000000 AND abs(new_balance) > abs(new_balance - NEW.delta) THEN
       RAISE EXCEPTION 'balance bound' USING ERRCODE = 'H1460', DETAIL = jsonb_build_object('account', NEW.account, 'delta', NEW.delta,
         'balance', new_balance - NEW.delta, 'bound', 3000000000000000)::text;
     END IF;
     RETURN NULL;
   END $$`,
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

/** The texts `up` replaces, as migrations 005 (`clearing_apply`, the posting trigger) and 014 (`clearing_op_post`) ran them: `down` puts them back. */
const replaced = [
  // credit, settle, adjust: lock, then post the entry; a stored id answers its row as existing.
  `CREATE FUNCTION clearing_op_post(o jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
   BEGIN
     PERFORM clearing_lock_accounts(ARRAY(SELECT jsonb_array_elements_text(o->'lock')));
     IF clearing_post_entry(o) THEN RETURN '{"applied": true}'; END IF;
     RETURN jsonb_build_object('existing', clearing_existing(o->>'txn_id'));
   END $$`,
  // One call per request or per batch: each operation in its own subtransaction, outcomes in order.
  `CREATE OR REPLACE FUNCTION clearing_apply(ops jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
   DECLARE o jsonb; outcome jsonb; outcomes jsonb := '[]'; st text; err_detail text;
   BEGIN
     IF jsonb_array_length(ops) > 1 THEN
       -- Every account of the batch, in id order, before any operation runs: batches never deadlock on accounts.
       PERFORM 1 FROM clearing_accounts
        WHERE kind = 'holder' AND id IN (SELECT clearing_accounts_of(x) FROM jsonb_array_elements(ops) AS x)
        ORDER BY id FOR UPDATE;
     END IF;
     FOR o IN SELECT value FROM jsonb_array_elements(ops) LOOP
       BEGIN
         outcome := CASE o->>'op'
           WHEN 'post' THEN clearing_op_post(o)
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
   END $$`,
  // The balance bound (issue 8 item 1.6): a posting that carries an account further beyond its bound is refused.
  `CREATE OR REPLACE FUNCTION clearing_apply_posting() RETURNS trigger LANGUAGE plpgsql AS $$
   DECLARE new_balance bigint; done boolean; left_over bigint; stripe_balance bigint; portion bigint;
   BEGIN
     IF NEW.account LIKE 'external:%' OR NEW.account LIKE 'platform:%' THEN
       -- Fast path: the session's own stripe takes the whole posting.
       UPDATE clearing_machinery_balances SET balance = balance + NEW.delta
        WHERE account = NEW.account AND stripe = pg_backend_pid() % 8
          AND (abs(balance + NEW.delta) <= 375000000000000 OR abs(balance + NEW.delta) <= abs(balance))
       RETURNING true INTO done;
       IF done THEN RETURN NULL; END IF;
       -- Spill-over: fill the stripes in stripe order; refused when they cannot take it all (the subtransaction undoes the rest).
       left_over := NEW.delta;
       FOR i IN 0..7 LOOP
         SELECT balance INTO stripe_balance FROM clearing_machinery_balances WHERE account = NEW.account AND stripe = i FOR UPDATE;
         portion := CASE WHEN left_over > 0 THEN least(left_over, greatest(375000000000000 - stripe_balance, 0))
                         ELSE greatest(left_over, least(-375000000000000 - stripe_balance, 0)) END;
         IF portion <> 0 THEN
           UPDATE clearing_machinery_balances SET balance = balance + portion WHERE account = NEW.account AND stripe = i;
           left_over := left_over - portion;
         END IF;
         EXIT WHEN left_over = 0;
       END LOOP;
       IF left_over <> 0 THEN
         RAISE EXCEPTION 'balance bound' USING ERRCODE = 'H1460', DETAIL = jsonb_build_object('account', NEW.account, 'delta', NEW.delta,
           'balance', (SELECT sum(balance) FROM clearing_machinery_balances WHERE account = NEW.account) - (NEW.delta - left_over),
           'bound', 3000000000000000)::text;
       END IF;
       RETURN NULL;
     END IF;
     UPDATE clearing_accounts SET balance = balance + NEW.delta WHERE id = NEW.account AND kind = 'holder' RETURNING balance INTO new_balance;
     IF abs(new_balance) > 3000000000000000 AND abs(new_balance) > abs(new_balance - NEW.delta) THEN
       RAISE EXCEPTION 'balance bound' USING ERRCODE = 'H1460', DETAIL = jsonb_build_object('account', NEW.account, 'delta', NEW.delta,
         'balance', new_balance - NEW.delta, 'bound', 3000000000000000)::text;
     END IF;
     RETURN NULL;
   END $$`,
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
  for (const sql of replaced) await knex.raw(sql);
  await knex.raw('ALTER TABLE clearing_postings ADD CONSTRAINT clearing_postings_account_fkey FOREIGN KEY (account) REFERENCES clearing_accounts (id)');
}
