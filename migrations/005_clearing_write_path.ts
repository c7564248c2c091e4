/**
 * The reference binding's write path in the database (issue 12 §1): every value-moving request
 * (credit, settle, adjust, reverse, draw, open/resize/release hold) is one call of
 * `clearing_apply(ops jsonb)`, and so is a group of concurrent requests (group commit).
 *
 * - `clearing_apply` takes a JSON array of operations and answers a JSON array of outcomes, one
 *   per operation, in order. Each operation runs in its own subtransaction (a PL/pgSQL
 *   exception block, i.e. a savepoint), so one refusal never undoes or blocks another.
 * - Before any operation runs, the holder accounts every operation of the batch will lock are
 *   locked in id order, so two batches never deadlock on accounts.
 * - A refusal is raised with a SQLSTATE of class `H1` and a JSON DETAIL naming its figures;
 *   `src/clearing/refusals.ts` maps each to the clearing-contract §7 code and sentence. A replay
 *   (a transaction id already stored) answers the stored row under `existing`; the rules in
 *   `src/clearing/` decide whether it is the same request (§9).
 * - The balance bound (issue 8 item 1.6): a posting that would carry an account beyond
 *   ±3 000 000 000 000 000 micro-units (`MAX_BALANCE_MICROS`) is refused (`H1460`), in the
 *   trigger that moves the balance, so it holds for every door. Machinery accounts (`external:*`,
 *   `platform:*`) keep no single balance row, which every settlement would queue on: their
 *   balance is split over 8 rows ("stripes"), each bounded by 375 000 000 000 000 (the bound / 8).
 *
 * Frozen: the SQL below is what this migration ran, numbers written out, so it never changes
 * with `src/`. Today's definition of each function is in `src/clearing/sql/`.
 */
import type { Knex } from 'knex';

const statements = [
  // Locks the named holder accounts in id order; raises H1404 naming the first (in id order) that does not exist.
  `CREATE FUNCTION clearing_lock_accounts(ids text[]) RETURNS void LANGUAGE plpgsql AS $$
   DECLARE missing text;
   BEGIN
     PERFORM 1 FROM clearing_accounts WHERE id = ANY (ids) AND kind = 'holder' ORDER BY id FOR UPDATE;
     SELECT min(x) INTO missing FROM unnest(ids) AS x
      WHERE x NOT LIKE 'external:%' AND x NOT LIKE 'platform:%'
        AND NOT EXISTS (SELECT 1 FROM clearing_accounts a WHERE a.id = x);
     IF missing IS NOT NULL THEN
       RAISE EXCEPTION 'no such account' USING ERRCODE = 'H1404', DETAIL = jsonb_build_object('account', missing)::text;
     END IF;
   END $$`,
  // §6.15: releases the open holds of one account whose window has closed.
  `CREATE FUNCTION clearing_expire_holds(acct text) RETURNS void LANGUAGE sql AS $$
     UPDATE clearing_holds SET status = 'released', released_at = expires_at, release_reason = 'expired'
      WHERE account = acct AND status = 'open' AND expires_at <= clock_timestamp()
   $$`,
  // §6.2 figures of a holder account: {balance, reserved, available}; closed windows never count.
  `CREATE FUNCTION clearing_figures(acct text) RETURNS jsonb LANGUAGE sql AS $$
     SELECT jsonb_build_object('account', a.id, 'balance', a.balance, 'reserved', r.reserved, 'available', a.balance - r.reserved)
       FROM clearing_accounts a,
            LATERAL (SELECT coalesce(sum(h.amount - h.drawn), 0)::bigint AS reserved FROM clearing_holds h
                      WHERE h.account = a.id AND h.status = 'open' AND h.expires_at > clock_timestamp()) r
      WHERE a.id = acct
   $$`,
  // Appends one entry and its non-zero postings (in the order given); the zero-sum check runs at commit.
  `CREATE FUNCTION clearing_insert_entry(o jsonb) RETURNS void LANGUAGE plpgsql AS $$
   BEGIN
     INSERT INTO clearing_transactions (txn_id, door, account, amount, terms, reverses, hold_id, reason, actor, ref, memo, simulated)
     VALUES (o->>'txn_id', o->>'door', o->>'account', (o->>'amount')::bigint, o->'terms', o->>'reverses', o->>'hold_id',
             o->>'reason', o->>'actor', o->>'ref', o->>'memo', coalesce((o->>'simulated')::boolean, false));
     INSERT INTO clearing_postings (txn_id, account, delta, kind)
     SELECT o->>'txn_id', p->>'account', (p->>'delta')::bigint, p->>'kind'
       FROM jsonb_array_elements(o->'postings') WITH ORDINALITY AS x(p, n)
      WHERE (p->>'delta')::bigint <> 0
      ORDER BY n;
   END $$`,
  // The stored row of a transaction id, or null.
  `CREATE FUNCTION clearing_existing(txn text) RETURNS jsonb LANGUAGE sql AS $$
     SELECT to_jsonb(t) FROM clearing_transactions t WHERE t.txn_id = txn
   $$`,
  // Locks a hold for a write: its account (and also_lock) first, expiry applied, then the hold row. H1405 when unknown.
  `CREATE FUNCTION clearing_lock_hold(hold text, also_lock text[]) RETURNS clearing_holds LANGUAGE plpgsql AS $$
   DECLARE acct text; h clearing_holds;
   BEGIN
     SELECT account INTO acct FROM clearing_holds WHERE hold_id = hold;
     IF NOT FOUND THEN
       RAISE EXCEPTION 'no such reservation' USING ERRCODE = 'H1405', DETAIL = jsonb_build_object('hold_id', hold)::text;
     END IF;
     PERFORM clearing_lock_accounts(acct || also_lock);
     PERFORM clearing_expire_holds(acct);
     SELECT * INTO h FROM clearing_holds WHERE hold_id = hold FOR UPDATE;
     RETURN h;
   END $$`,
  // An expiresAt that is not a future instant: H1461.
  `CREATE FUNCTION clearing_future(raw text, at timestamptz) RETURNS timestamptz LANGUAGE plpgsql AS $$
   BEGIN
     IF at IS NULL OR at <= clock_timestamp() THEN
       RAISE EXCEPTION 'not a future instant' USING ERRCODE = 'H1461',
         DETAIL = jsonb_build_object('value', raw, 'instant', at IS NOT NULL)::text;
     END IF;
     RETURN at;
   END $$`,
  // 422 insufficient_funds with the four figures of §6.11.
  `CREATE FUNCTION clearing_insufficient(asked bigint, what text, fig jsonb) RETURNS void LANGUAGE plpgsql AS $$
   BEGIN
     RAISE EXCEPTION 'insufficient funds' USING ERRCODE = 'H1430',
       DETAIL = (fig || jsonb_build_object('asked', asked, 'what', what))::text;
   END $$`,
  // credit, settle, adjust: lock, answer a stored id as existing, else post the entry.
  `CREATE FUNCTION clearing_op_post(o jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
   DECLARE existing jsonb;
   BEGIN
     PERFORM clearing_lock_accounts(ARRAY(SELECT jsonb_array_elements_text(o->'lock')));
     existing := clearing_existing(o->>'txn_id');
     IF existing IS NOT NULL THEN RETURN jsonb_build_object('existing', existing); END IF;
     PERFORM clearing_insert_entry(o);
     RETURN jsonb_build_object('applied', true);
   END $$`,
  // reverse (§6.9).
  `CREATE FUNCTION clearing_op_reverse(o jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
   DECLARE existing jsonb; orig clearing_transactions; prior text; acct text; inverse jsonb;
   BEGIN
     existing := clearing_existing(o->>'txn_id');
     IF existing IS NOT NULL THEN RETURN jsonb_build_object('existing', existing); END IF;
     SELECT * INTO orig FROM clearing_transactions WHERE txn_id = o->>'reverses';
     IF NOT FOUND THEN
       RAISE EXCEPTION 'no such transaction' USING ERRCODE = 'H1406', DETAIL = jsonb_build_object('txn_id', o->>'reverses')::text;
     END IF;
     IF orig.door = 'reverse' THEN
       RAISE EXCEPTION 'not reversible' USING ERRCODE = 'H1421', DETAIL = jsonb_build_object('txn_id', orig.txn_id, 'reverses', orig.reverses)::text;
     END IF;
     IF orig.door = 'adjust' THEN
       RAISE EXCEPTION 'not reversible' USING ERRCODE = 'H1422', DETAIL = jsonb_build_object('txn_id', orig.txn_id)::text;
     END IF;
     PERFORM clearing_lock_accounts(orig.account || ARRAY(SELECT account FROM clearing_postings WHERE txn_id = orig.txn_id));
     SELECT txn_id INTO prior FROM clearing_transactions WHERE reverses = orig.txn_id;
     -- A replay that waited on the locks while its first arrival committed: the stored outcome (§9).
     IF prior = o->>'txn_id' THEN RETURN jsonb_build_object('applied', false, 'amount', orig.amount); END IF;
     IF prior IS NOT NULL THEN
       RAISE EXCEPTION 'already reversed' USING ERRCODE = 'H1423', DETAIL = jsonb_build_object('txn_id', orig.txn_id, 'reversed_by', prior)::text;
     END IF;
     IF orig.door = 'draw' THEN
       SELECT account INTO acct FROM clearing_holds WHERE hold_id = orig.hold_id;
       PERFORM clearing_expire_holds(acct);
       UPDATE clearing_holds SET drawn = drawn - orig.amount WHERE hold_id = orig.hold_id AND status = 'open';
     END IF;
     SELECT coalesce(jsonb_agg(jsonb_build_object('account', account, 'delta', -delta, 'kind', 'reverse-' || kind) ORDER BY id), '[]')
       INTO inverse FROM clearing_postings WHERE txn_id = orig.txn_id;
     PERFORM clearing_insert_entry(o || jsonb_build_object('door', 'reverse', 'account', orig.account, 'amount', orig.amount, 'postings', inverse));
     RETURN jsonb_build_object('applied', true, 'amount', orig.amount);
   END $$`,
  // open-hold (§6.11).
  `CREATE FUNCTION clearing_op_open_hold(o jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
   DECLARE h clearing_holds; fig jsonb; want bigint := (o->>'amount')::bigint; at timestamptz;
   BEGIN
     PERFORM clearing_lock_accounts(ARRAY[o->>'account']);
     SELECT * INTO h FROM clearing_holds WHERE hold_id = o->>'hold_id';
     IF FOUND THEN
       IF h.account <> o->>'account' OR h.amount <> want THEN
         RAISE EXCEPTION 'hold terms conflict' USING ERRCODE = 'H1452',
           DETAIL = jsonb_build_object('hold_id', h.hold_id, 'account', h.account, 'amount', h.amount)::text;
       END IF;
       fig := clearing_figures(h.account);
       RETURN jsonb_build_object('applied', false, 'reservation', to_jsonb(h), 'available', fig->'available');
     END IF;
     at := clearing_future(o->>'expires_raw', (o->>'expires_at')::timestamptz);
     fig := clearing_figures(o->>'account');
     IF want > (fig->>'available')::bigint THEN PERFORM clearing_insufficient(want, 'a hold', fig); END IF;
     INSERT INTO clearing_holds (hold_id, account, amount, status, expires_at, ref, memo)
     VALUES (o->>'hold_id', o->>'account', want, 'open', at, o->>'ref', o->>'memo')
     RETURNING * INTO h;
     RETURN jsonb_build_object('applied', true, 'reservation', to_jsonb(h), 'available', (fig->>'available')::bigint - want);
   END $$`,
  // resize-hold (§6.12).
  `CREATE FUNCTION clearing_op_resize_hold(o jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
   DECLARE h clearing_holds; fig jsonb; want bigint := (o->>'amount')::bigint; at timestamptz; delta bigint; available bigint;
   BEGIN
     h := clearing_lock_hold(o->>'hold_id', '{}');
     IF h.status <> 'open' THEN
       RAISE EXCEPTION 'closed' USING ERRCODE = 'H1440', DETAIL = jsonb_build_object('hold_id', h.hold_id, 'reason', h.release_reason)::text;
     END IF;
     at := CASE WHEN o->>'expires_raw' IS NOT NULL THEN clearing_future(o->>'expires_raw', (o->>'expires_at')::timestamptz) ELSE h.expires_at END;
     fig := clearing_figures(h.account);
     available := (fig->>'available')::bigint;
     IF want = h.amount AND at = h.expires_at THEN
       RETURN jsonb_build_object('applied', false, 'reservation', to_jsonb(h), 'available', available, 'delta', 0);
     END IF;
     IF want < h.drawn THEN
       RAISE EXCEPTION 'below drawn' USING ERRCODE = 'H1450', DETAIL = jsonb_build_object('hold_id', h.hold_id, 'drawn', h.drawn, 'amount', want)::text;
     END IF;
     delta := want - h.amount;
     -- Only a raise is checked: a reduction or a new window must pass even when available is negative (invariant 11).
     IF delta > 0 AND delta > available THEN
       PERFORM clearing_insufficient(delta, 'a raise of reservation ' || h.hold_id, fig);
     END IF;
     UPDATE clearing_holds SET amount = want, expires_at = at WHERE hold_id = h.hold_id RETURNING * INTO h;
     RETURN jsonb_build_object('applied', true, 'reservation', to_jsonb(h), 'available', available - delta, 'delta', delta);
   END $$`,
  // release-hold (§6.14).
  `CREATE FUNCTION clearing_op_release_hold(o jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
   DECLARE h clearing_holds; released bigint;
   BEGIN
     h := clearing_lock_hold(o->>'hold_id', '{}');
     IF h.status <> 'open' THEN
       RETURN jsonb_build_object('applied', false, 'released', 0, 'reservation', to_jsonb(h));
     END IF;
     released := h.amount - h.drawn;
     UPDATE clearing_holds SET status = 'released', released_at = clock_timestamp(), release_reason = coalesce(o->>'reason', 'released by the caller')
      WHERE hold_id = h.hold_id RETURNING * INTO h;
     RETURN jsonb_build_object('applied', true, 'released', released, 'reservation', to_jsonb(h));
   END $$`,
  // draw (§6.13): lines clamped in order at the cap; one settlement caller → owner with no margin.
  `CREATE FUNCTION clearing_op_draw(o jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
   DECLARE h clearing_holds; existing jsonb; lft bigint; billed bigint := 0; line jsonb; taken bigint; lines jsonb := '[]';
   BEGIN
     h := clearing_lock_hold(o->>'hold_id', ARRAY[o->>'owner']);
     existing := clearing_existing(o->>'txn_id');
     IF existing IS NOT NULL THEN
       RETURN jsonb_build_object('existing', existing, 'remaining', h.amount - h.drawn,
         'lines', (SELECT coalesce(jsonb_agg(to_jsonb(l) ORDER BY l.seq), '[]') FROM clearing_draw_lines l WHERE l.txn_id = o->>'txn_id'));
     END IF;
     IF h.account <> o->>'caller' THEN
       RAISE EXCEPTION 'not the holder' USING ERRCODE = 'H1451', DETAIL = jsonb_build_object('hold_id', h.hold_id, 'account', h.account, 'caller', o->>'caller')::text;
     END IF;
     IF h.status <> 'open' THEN
       RAISE EXCEPTION 'closed' USING ERRCODE = 'H1441', DETAIL = jsonb_build_object('hold_id', h.hold_id, 'reason', h.release_reason)::text;
     END IF;
     lft := h.amount - h.drawn;
     FOR line IN SELECT value FROM jsonb_array_elements(o->'lines') LOOP
       taken := least((line->>'asked')::bigint, lft);
       lft := lft - taken;
       billed := billed + taken;
       lines := lines || jsonb_build_array(line || jsonb_build_object('amount', taken, 'capped', taken < (line->>'asked')::bigint));
     END LOOP;
     PERFORM clearing_insert_entry(o || jsonb_build_object('door', 'draw', 'account', o->>'caller', 'amount', billed,
       'postings', jsonb_build_array(
         jsonb_build_object('account', o->>'caller', 'delta', -billed, 'kind', 'charge'),
         jsonb_build_object('account', o->>'owner', 'delta', billed, 'kind', 'earn'))));
     INSERT INTO clearing_draw_lines (txn_id, seq, hold_id, meter, amount, asked, unit, count, per, per_unit, pass_through, upstream_receipt, capped)
     SELECT o->>'txn_id', n - 1, h.hold_id, l->>'meter', (l->>'amount')::bigint, (l->>'asked')::bigint, l->>'unit',
            (l->>'count')::bigint, (l->>'per')::bigint, (l->>'per_unit')::bigint, (l->>'pass_through')::boolean, l->>'upstream_receipt', (l->>'capped')::boolean
       FROM jsonb_array_elements(lines) WITH ORDINALITY AS x(l, n);
     UPDATE clearing_holds SET drawn = drawn + billed WHERE hold_id = h.hold_id;
     RETURN jsonb_build_object('applied', true, 'billed', billed, 'remaining', lft, 'lines', lines);
   END $$`,
  // The holder accounts an operation will lock (missing ones included: the operation itself refuses them).
  `CREATE FUNCTION clearing_accounts_of(o jsonb) RETURNS SETOF text LANGUAGE sql AS $$
     SELECT jsonb_array_elements_text(o->'lock') WHERE o->>'op' = 'post'
     UNION ALL SELECT o->>'account' WHERE o->>'op' = 'open-hold'
     UNION ALL SELECT o->>'owner' WHERE o->>'op' = 'draw'
     UNION ALL SELECT account FROM clearing_holds WHERE hold_id = o->>'hold_id' AND o->>'op' IN ('draw', 'resize-hold', 'release-hold')
     UNION ALL SELECT account FROM clearing_transactions WHERE txn_id = o->>'reverses' AND o->>'op' = 'reverse'
     UNION ALL SELECT account FROM clearing_postings WHERE txn_id = o->>'reverses' AND o->>'op' = 'reverse'
   $$`,
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
  // Machinery balances in stripes (no single hot row): a posting lands on one stripe with room.
  `CREATE TABLE clearing_machinery_balances (
     account text NOT NULL REFERENCES clearing_accounts (id),
     stripe integer NOT NULL CHECK (stripe >= 0 AND stripe < 8),
     balance bigint NOT NULL DEFAULT 0,
     PRIMARY KEY (account, stripe)
   )`,
  `INSERT INTO clearing_machinery_balances (account, stripe)
   SELECT a.id, s FROM clearing_accounts a, generate_series(0, 7) s WHERE a.kind <> 'holder'`,
  `UPDATE clearing_machinery_balances m SET balance = (SELECT coalesce(sum(delta), 0) FROM clearing_postings p WHERE p.account = m.account)
    WHERE m.stripe = 0`,
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

/** Creates the write-path functions and puts the balance bound into the posting trigger. */
export async function up(knex: Knex): Promise<void> {
  for (const sql of statements) await knex.raw(sql);
}

/** Drops the functions and restores the unbounded posting trigger (development only). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP FUNCTION IF EXISTS clearing_apply, clearing_accounts_of, clearing_op_draw, clearing_op_release_hold,
    clearing_op_resize_hold, clearing_op_open_hold, clearing_op_reverse, clearing_op_post, clearing_insufficient, clearing_future,
    clearing_lock_hold, clearing_existing, clearing_insert_entry, clearing_figures, clearing_expire_holds, clearing_lock_accounts`);
  await knex.raw('DROP TABLE IF EXISTS clearing_machinery_balances');
  await knex.raw(`CREATE OR REPLACE FUNCTION clearing_apply_posting() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     UPDATE clearing_accounts SET balance = balance + NEW.delta WHERE id = NEW.account AND kind = 'holder';
     RETURN NULL;
   END $$`);
}
