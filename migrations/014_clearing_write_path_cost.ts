/**
 * The write path's database cost (issue 12 §1–§2): the same operations, outcomes and refusals as
 * `005_clearing_write_path.ts`, with the avoidable part of a settle's Postgres CPU (about 1 ms)
 * taken out. Measured on PostgreSQL 15, one backend, a settle per transaction (server CPU per settle):
 * - the helpers written in `LANGUAGE sql` (`clearing_existing`, `clearing_figures`,
 *   `clearing_expire_holds`, `clearing_accounts_of`) are not inlined when called from PL/pgSQL,
 *   so each call parsed and planned its query again in every transaction; in PL/pgSQL their
 *   plans are cached for the session;
 * - `clearing_op_post` looked the id up, then inserted: one `INSERT … ON CONFLICT (txn_id) DO
 *   NOTHING` does both, and a concurrent first use of the id now waits and answers the stored row
 *   instead of failing with a unique violation and running again;
 * - `clearing_lock_accounts` searched for a missing account on every call: it now does so only
 *   when it locked fewer rows than it was asked for.
 * The balance trigger (one PL/pgSQL call and one UPDATE per posting, about 40 µs each) stays as
 * it is: run once per INSERT statement over a transition table it measured slower (about 180 µs
 * per settle against 3 × 40), because a query on the transition table is planned on every call.
 * The deferred zero-sum check (`clearing_postings_balanced`, migration 001) is unchanged.
 */
import type { Knex } from 'knex';
import * as writePath from './005_clearing_write_path.ts';

const statements = [
  // Locks the named holder accounts in id order; raises H1404 naming the first (in id order) that does not exist.
  `CREATE OR REPLACE FUNCTION clearing_lock_accounts(ids text[]) RETURNS void LANGUAGE plpgsql AS $$
   DECLARE locked integer; missing text;
   BEGIN
     PERFORM 1 FROM clearing_accounts WHERE id = ANY (ids) AND kind = 'holder' ORDER BY id FOR UPDATE;
     GET DIAGNOSTICS locked = ROW_COUNT;
     -- Every named holder was there (the usual case): nothing to search for.
     IF locked = (SELECT count(DISTINCT x) FROM unnest(ids) AS x WHERE x NOT LIKE 'external:%' AND x NOT LIKE 'platform:%') THEN
       RETURN;
     END IF;
     SELECT min(x) INTO missing FROM unnest(ids) AS x
      WHERE x NOT LIKE 'external:%' AND x NOT LIKE 'platform:%'
        AND NOT EXISTS (SELECT 1 FROM clearing_accounts a WHERE a.id = x);
     IF missing IS NOT NULL THEN
       RAISE EXCEPTION 'no such account' USING ERRCODE = 'H1404', DETAIL = jsonb_build_object('account', missing)::text;
     END IF;
   END $$`,
  // §6.15: releases the open holds of one account whose window has closed.
  `CREATE OR REPLACE FUNCTION clearing_expire_holds(acct text) RETURNS void LANGUAGE plpgsql AS $$
   BEGIN
     UPDATE clearing_holds SET status = 'released', released_at = expires_at, release_reason = 'expired'
      WHERE account = acct AND status = 'open' AND expires_at <= clock_timestamp();
   END $$`,
  // §6.2 figures of a holder account: {balance, reserved, available}; closed windows never count. Null for an unknown account.
  `CREATE OR REPLACE FUNCTION clearing_figures(acct text) RETURNS jsonb LANGUAGE plpgsql AS $$
   BEGIN
     RETURN (SELECT jsonb_build_object('account', a.id, 'balance', a.balance, 'reserved', r.reserved, 'available', a.balance - r.reserved)
               FROM clearing_accounts a,
                    LATERAL (SELECT coalesce(sum(h.amount - h.drawn), 0)::bigint AS reserved FROM clearing_holds h
                              WHERE h.account = a.id AND h.status = 'open' AND h.expires_at > clock_timestamp()) r
              WHERE a.id = acct);
   END $$`,
  // The stored row of a transaction id, or null.
  `CREATE OR REPLACE FUNCTION clearing_existing(txn text) RETURNS jsonb LANGUAGE plpgsql AS $$
   BEGIN
     RETURN (SELECT to_jsonb(t) FROM clearing_transactions t WHERE t.txn_id = txn);
   END $$`,
  // Appends one entry and its non-zero postings (in the order given), or nothing when its id is stored: answers whether it did. The zero-sum check runs at commit.
  `DROP FUNCTION clearing_insert_entry(jsonb)`,
  `CREATE FUNCTION clearing_insert_entry(o jsonb) RETURNS boolean LANGUAGE plpgsql AS $$
   BEGIN
     INSERT INTO clearing_transactions (txn_id, door, account, amount, terms, reverses, hold_id, reason, actor, ref, memo, simulated)
     VALUES (o->>'txn_id', o->>'door', o->>'account', (o->>'amount')::bigint, o->'terms', o->>'reverses', o->>'hold_id',
             o->>'reason', o->>'actor', o->>'ref', o->>'memo', coalesce((o->>'simulated')::boolean, false))
     ON CONFLICT (txn_id) DO NOTHING;
     IF NOT FOUND THEN RETURN false; END IF;
     INSERT INTO clearing_postings (txn_id, account, delta, kind)
     SELECT o->>'txn_id', p->>'account', (p->>'delta')::bigint, p->>'kind'
       FROM jsonb_array_elements(o->'postings') WITH ORDINALITY AS x(p, n)
      WHERE (p->>'delta')::bigint <> 0
      ORDER BY n;
     RETURN true;
   END $$`,
  // A door that looked its id up first found it free, and a concurrent request stored it meanwhile: the unique violation the write path runs the operation again on (§9).
  `CREATE FUNCTION clearing_insert_new_entry(o jsonb) RETURNS void LANGUAGE plpgsql AS $$
   BEGIN
     IF NOT clearing_insert_entry(o) THEN
       RAISE EXCEPTION 'transaction id % was stored meanwhile', o->>'txn_id' USING ERRCODE = 'unique_violation';
     END IF;
   END $$`,
  // credit, settle, adjust: lock, then post the entry; a stored id answers its row as existing.
  `CREATE OR REPLACE FUNCTION clearing_op_post(o jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
   BEGIN
     PERFORM clearing_lock_accounts(ARRAY(SELECT jsonb_array_elements_text(o->'lock')));
     IF clearing_insert_entry(o) THEN RETURN '{"applied": true}'; END IF;
     RETURN jsonb_build_object('existing', clearing_existing(o->>'txn_id'));
   END $$`,
  // reverse (§6.9).
  `CREATE OR REPLACE FUNCTION clearing_op_reverse(o jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
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
     PERFORM clearing_insert_new_entry(o || jsonb_build_object('door', 'reverse', 'account', orig.account, 'amount', orig.amount, 'postings', inverse));
     RETURN jsonb_build_object('applied', true, 'amount', orig.amount);
   END $$`,
  // draw (§6.13): lines clamped in order at the cap; one settlement caller → owner with no margin.
  `CREATE OR REPLACE FUNCTION clearing_op_draw(o jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
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
     PERFORM clearing_insert_new_entry(o || jsonb_build_object('door', 'draw', 'account', o->>'caller', 'amount', billed,
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
  `DROP FUNCTION clearing_accounts_of(jsonb)`,
  `CREATE FUNCTION clearing_accounts_of(o jsonb) RETURNS text[] LANGUAGE plpgsql AS $$
   BEGIN
     RETURN CASE o->>'op'
       WHEN 'post' THEN ARRAY(SELECT jsonb_array_elements_text(o->'lock'))
       WHEN 'open-hold' THEN ARRAY[o->>'account']
       WHEN 'draw' THEN ARRAY[o->>'owner'] || ARRAY(SELECT account FROM clearing_holds WHERE hold_id = o->>'hold_id')
       WHEN 'resize-hold' THEN ARRAY(SELECT account FROM clearing_holds WHERE hold_id = o->>'hold_id')
       WHEN 'release-hold' THEN ARRAY(SELECT account FROM clearing_holds WHERE hold_id = o->>'hold_id')
       WHEN 'reverse' THEN ARRAY(SELECT account FROM clearing_transactions WHERE txn_id = o->>'reverses'
                                 UNION ALL SELECT account FROM clearing_postings WHERE txn_id = o->>'reverses')
       ELSE '{}'::text[]
     END;
   END $$`,
  // One call per request or per batch: each operation in its own subtransaction, outcomes in order.
  `CREATE OR REPLACE FUNCTION clearing_apply(ops jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
   DECLARE o jsonb; outcome jsonb; outcomes jsonb := '[]'; st text; err_detail text; ids text[] := '{}';
   BEGIN
     IF jsonb_array_length(ops) > 1 THEN
       -- Every account of the batch, in id order, before any operation runs: batches never deadlock on accounts.
       FOR o IN SELECT value FROM jsonb_array_elements(ops) LOOP
         ids := ids || clearing_accounts_of(o);
       END LOOP;
       PERFORM 1 FROM clearing_accounts WHERE kind = 'holder' AND id = ANY (ids) ORDER BY id FOR UPDATE;
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
];

/** Replaces the write path's functions with their cheaper forms. */
export async function up(knex: Knex): Promise<void> {
  for (const sql of statements) await knex.raw(sql);
}

/** Restores the functions of migration 005 (development only). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP FUNCTION clearing_insert_new_entry(jsonb)');
  // 005 drops and recreates every function it made (and its stripes, summed again from the postings).
  await writePath.down(knex);
  await writePath.up(knex);
}
