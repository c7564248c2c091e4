/**
 * A tamper-evident journal (issue 23 §3): every entry of the reference binding is chained, in the
 * transaction that writes it, to the entry before it. `clearing_journal_chain` holds one row per
 * entry: its position (1, 2, … in commit order), its transaction id, and the SHA-256 of the
 * canonical JSON (RFC 8785) of the entry with its postings and the previous hash. A deferred
 * constraint trigger on `clearing_transactions` appends the row at commit, holding the chain's
 * tail (EXCLUSIVE) until the commit ends; the chain's rows are append-only like the journal's.
 * The entries already in the journal are chained in the order they were written (created_at,
 * then id).
 *
 * Frozen: the SQL below is what this migration ran; it imports nothing. Today's definition of
 * each function is in `src/clearing/sql/`.
 */
import type { Knex } from 'knex';

const statements = [
  `CREATE TABLE clearing_journal_chain (
     position bigint PRIMARY KEY CHECK (position > 0),
     txn_id text NOT NULL UNIQUE REFERENCES clearing_transactions (txn_id),
     hash text NOT NULL CHECK (hash ~ '^[0-9a-f]{64}$')
   )`,
  `CREATE OR REPLACE FUNCTION clearing_canonical(j jsonb) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
   DECLARE n numeric; f float8; s text;
   BEGIN
     CASE jsonb_typeof(j)
       WHEN 'object' THEN
         RETURN '{' || coalesce((SELECT string_agg(to_json(k)::text || ':' || clearing_canonical(v), ',' ORDER BY k COLLATE "C")
                                   FROM jsonb_each(j) AS e(k, v)), '') || '}';
       WHEN 'array' THEN
         RETURN '[' || coalesce((SELECT string_agg(clearing_canonical(v), ',' ORDER BY i)
                                   FROM jsonb_array_elements(j) WITH ORDINALITY AS e(v, i)), '') || ']';
       WHEN 'number' THEN
         n := (j #>> '{}')::numeric;
         IF n = trunc(n) AND abs(n) <= 9007199254740991 THEN RETURN trunc(n)::text; END IF;
         f := n::float8;
         s := f::text;
         IF abs(f) >= 1e-6 AND abs(f) < 1e21 THEN
           RETURN CASE WHEN position('e' IN s) > 0 THEN s::numeric::text ELSE s END;
         END IF;
         RETURN regexp_replace(s, 'e([+-])0*([0-9])', 'e\\1\\2');
       ELSE
         RETURN j::text;
     END CASE;
   END $$`,
  `CREATE OR REPLACE FUNCTION clearing_chain_append(t clearing_transactions) RETURNS void LANGUAGE plpgsql SET enable_seqscan = off AS $$
   DECLARE last_position bigint; last_hash text; entry jsonb;
   BEGIN
     SELECT c.position, c.hash INTO last_position, last_hash FROM clearing_journal_chain c ORDER BY c.position DESC LIMIT 1;
     entry := jsonb_build_object('txn_id', t.txn_id, 'door', t.door, 'account', t.account, 'amount', t.amount::text,
       'terms', t.terms, 'reverses', t.reverses, 'hold_id', t.hold_id, 'reason', t.reason, 'actor', t.actor, 'ref', t.ref,
       'memo', t.memo, 'simulated', t.simulated,
       'postings', coalesce((SELECT jsonb_agg(jsonb_build_object('account', p.account, 'delta', p.delta::text, 'kind', p.kind) ORDER BY p.id)
                               FROM clearing_postings p WHERE p.txn_id = t.txn_id), '[]'::jsonb));
     INSERT INTO clearing_journal_chain (position, txn_id, hash)
     VALUES (coalesce(last_position, 0) + 1, t.txn_id,
             encode(sha256(convert_to(clearing_canonical(jsonb_build_object('entry', entry, 'prev', last_hash)), 'UTF8')), 'hex'));
   END $$`,
  `CREATE OR REPLACE FUNCTION clearing_chain_entry() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
   BEGIN
     IF EXISTS (SELECT 1 FROM clearing_journal_chain WHERE txn_id = NEW.txn_id) THEN RETURN NULL; END IF;
     LOCK TABLE clearing_journal_chain IN EXCLUSIVE MODE;
     PERFORM clearing_chain_append(NEW);
     RETURN NULL;
   END $$`,
  `CREATE CONSTRAINT TRIGGER clearing_transactions_chained AFTER INSERT ON clearing_transactions
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION clearing_chain_entry()`,
  `CREATE TRIGGER clearing_journal_chain_append_only BEFORE UPDATE OR DELETE ON clearing_journal_chain
  FOR EACH ROW EXECUTE FUNCTION clearing_refuse_change()`,
  `CREATE TRIGGER clearing_journal_chain_no_truncate BEFORE TRUNCATE ON clearing_journal_chain
  FOR EACH STATEMENT EXECUTE FUNCTION clearing_refuse_change()`,
  `DO $$
   DECLARE t clearing_transactions;
   BEGIN
     FOR t IN SELECT * FROM clearing_transactions ORDER BY created_at, txn_id LOOP
       PERFORM clearing_chain_append(t);
     END LOOP;
   END $$`,
];

/** Creates the chain, its functions and triggers, and chains the entries already written. */
export async function up(knex: Knex): Promise<void> {
  for (const sql of statements) await knex.raw(sql);
}

/** Drops the chain (development only). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER clearing_transactions_chained ON clearing_transactions');
  await knex.raw('DROP TABLE clearing_journal_chain');
  await knex.raw('DROP FUNCTION clearing_chain_entry(), clearing_chain_append(clearing_transactions), clearing_canonical(jsonb)');
}
