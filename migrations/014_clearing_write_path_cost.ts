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
 *
 * Frozen: the SQL below is what this migration ran (and, for `down`, what it replaced); it
 * imports nothing. Today's definition of each function is in `src/clearing/sql/`.
 */
import type { Knex } from 'knex';

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
  `CREATE FUNCTION clearing_post_entry(o jsonb) RETURNS boolean LANGUAGE plpgsql AS $$
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
  // For reverse and draw, which looked their id up first: a concurrent request that stored it meanwhile is the unique violation the write path runs the operation again on (§9).
  `CREATE OR REPLACE FUNCTION clearing_insert_entry(o jsonb) RETURNS void LANGUAGE plpgsql AS $$
   BEGIN
     IF NOT clearing_post_entry(o) THEN
       RAISE EXCEPTION 'transaction id % was stored meanwhile', o->>'txn_id' USING ERRCODE = 'unique_violation';
     END IF;
   END $$`,
  // credit, settle, adjust: lock, then post the entry; a stored id answers its row as existing.
  `CREATE OR REPLACE FUNCTION clearing_op_post(o jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
   BEGIN
     PERFORM clearing_lock_accounts(ARRAY(SELECT jsonb_array_elements_text(o->'lock')));
     IF clearing_post_entry(o) THEN RETURN '{"applied": true}'; END IF;
     RETURN jsonb_build_object('existing', clearing_existing(o->>'txn_id'));
   END $$`,
  // The holder accounts an operation will lock (missing ones included: the operation itself refuses them).
  `CREATE OR REPLACE FUNCTION clearing_accounts_of(o jsonb) RETURNS SETOF text LANGUAGE plpgsql AS $$
   BEGIN
     CASE o->>'op'
       WHEN 'post' THEN RETURN QUERY SELECT jsonb_array_elements_text(o->'lock');
       WHEN 'open-hold' THEN RETURN NEXT o->>'account';
       WHEN 'draw' THEN
         RETURN NEXT o->>'owner';
         RETURN QUERY SELECT account FROM clearing_holds WHERE hold_id = o->>'hold_id';
       WHEN 'resize-hold', 'release-hold' THEN RETURN QUERY SELECT account FROM clearing_holds WHERE hold_id = o->>'hold_id';
       WHEN 'reverse' THEN
         RETURN QUERY SELECT account FROM clearing_transactions WHERE txn_id = o->>'reverses'
                      UNION ALL SELECT account FROM clearing_postings WHERE txn_id = o->>'reverses';
       ELSE NULL;
     END CASE;
   END $$`,
];

/** The texts of migration 005 that `up` replaces, as 005 ran them: `down` puts them back. */
const replacedBy005 = [
  // Locks the named holder accounts in id order; raises H1404 naming the first (in id order) that does not exist.
  `CREATE OR REPLACE FUNCTION clearing_lock_accounts(ids text[]) RETURNS void LANGUAGE plpgsql AS $$
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
  `CREATE OR REPLACE FUNCTION clearing_expire_holds(acct text) RETURNS void LANGUAGE sql AS $$
     UPDATE clearing_holds SET status = 'released', released_at = expires_at, release_reason = 'expired'
      WHERE account = acct AND status = 'open' AND expires_at <= clock_timestamp()
   $$`,
  // §6.2 figures of a holder account: {balance, reserved, available}; closed windows never count.
  `CREATE OR REPLACE FUNCTION clearing_figures(acct text) RETURNS jsonb LANGUAGE sql AS $$
     SELECT jsonb_build_object('account', a.id, 'balance', a.balance, 'reserved', r.reserved, 'available', a.balance - r.reserved)
       FROM clearing_accounts a,
            LATERAL (SELECT coalesce(sum(h.amount - h.drawn), 0)::bigint AS reserved FROM clearing_holds h
                      WHERE h.account = a.id AND h.status = 'open' AND h.expires_at > clock_timestamp()) r
      WHERE a.id = acct
   $$`,
  // The stored row of a transaction id, or null.
  `CREATE OR REPLACE FUNCTION clearing_existing(txn text) RETURNS jsonb LANGUAGE sql AS $$
     SELECT to_jsonb(t) FROM clearing_transactions t WHERE t.txn_id = txn
   $$`,
  // Appends one entry and its non-zero postings (in the order given); the zero-sum check runs at commit.
  `CREATE OR REPLACE FUNCTION clearing_insert_entry(o jsonb) RETURNS void LANGUAGE plpgsql AS $$
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
  // credit, settle, adjust: lock, answer a stored id as existing, else post the entry.
  `CREATE OR REPLACE FUNCTION clearing_op_post(o jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
   DECLARE existing jsonb;
   BEGIN
     PERFORM clearing_lock_accounts(ARRAY(SELECT jsonb_array_elements_text(o->'lock')));
     existing := clearing_existing(o->>'txn_id');
     IF existing IS NOT NULL THEN RETURN jsonb_build_object('existing', existing); END IF;
     PERFORM clearing_insert_entry(o);
     RETURN jsonb_build_object('applied', true);
   END $$`,
  // The holder accounts an operation will lock (missing ones included: the operation itself refuses them).
  `CREATE OR REPLACE FUNCTION clearing_accounts_of(o jsonb) RETURNS SETOF text LANGUAGE sql AS $$
     SELECT jsonb_array_elements_text(o->'lock') WHERE o->>'op' = 'post'
     UNION ALL SELECT o->>'account' WHERE o->>'op' = 'open-hold'
     UNION ALL SELECT o->>'owner' WHERE o->>'op' = 'draw'
     UNION ALL SELECT account FROM clearing_holds WHERE hold_id = o->>'hold_id' AND o->>'op' IN ('draw', 'resize-hold', 'release-hold')
     UNION ALL SELECT account FROM clearing_transactions WHERE txn_id = o->>'reverses' AND o->>'op' = 'reverse'
     UNION ALL SELECT account FROM clearing_postings WHERE txn_id = o->>'reverses' AND o->>'op' = 'reverse'
   $$`,
];

/** Replaces the write path's functions with their cheaper forms. */
export async function up(knex: Knex): Promise<void> {
  for (const sql of statements) await knex.raw(sql);
}

/** Restores the functions of migration 005 (development only). */
export async function down(knex: Knex): Promise<void> {
  for (const sql of replacedBy005) await knex.raw(sql);
  await knex.raw('DROP FUNCTION clearing_post_entry(jsonb)');
}
