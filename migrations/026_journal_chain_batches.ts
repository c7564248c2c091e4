/**
 * The journal's hash chain once per transaction (issue 23 §3: "batches of the group commit may
 * chain once per batch (a Merkle root over the batch's entries)"). Migration 020 chained every
 * entry by itself: one trigger run, one tail read, one insert and its checks per entry, which
 * alone cost more than the 10% of settle throughput the issue allows (bench/README.md). From here
 * on, the entries a transaction writes (a group-commit batch: up to 64 operations) are one link of
 * `clearing_journal_batches`: their leaf hashes (SHA-256 of 0x00 and the entry's canonical JSON,
 * the same text as before), the RFC 6962 Merkle root over them, and the link's hash, SHA-256 of the
 * canonical `{prev, root, size}`, chained to the link before. The links migration 020 wrote stay
 * as they are, the first new link's prev is their last hash, and positions go on counting entries,
 * so a checkpoint kept before still checks. `clearing_post_entry` lists the entries it writes in
 * the transaction-local setting `holon.chain_pending`; the deferred trigger's first run at commit
 * chains the list. `clearing_chain_append` (one link per entry) is dropped. The postings' index on
 * `txn_id` becomes one on `(txn_id, id)`, so an entry's postings are read in order with no sort.
 *
 * Frozen: the SQL below is what this migration ran (and, for `down`, what it replaced); it
 * imports nothing. Today's definition of each function is in `src/clearing/sql/`.
 */
import type { Knex } from 'knex';

const statements = [
  // No CHECK constraints: PostgreSQL reads each back from its stored text at every insert (about 260 000 instructions per link for
  // five, measured), and `holon audit` checks every link's contents anyway.
  `CREATE TABLE clearing_journal_batches (
     position bigint PRIMARY KEY,
     entries text[] NOT NULL,
     leaves text[] NOT NULL,
     root text NOT NULL,
     hash text NOT NULL
   )`,
  // An entry's postings in id order without a sort, for its leaf (and the audit); replaces the index on txn_id alone.
  'CREATE INDEX clearing_postings_txn_id ON clearing_postings (txn_id, id)',
  'DROP INDEX clearing_postings_txn',
  `CREATE TRIGGER clearing_journal_batches_append_only BEFORE UPDATE OR DELETE ON clearing_journal_batches
  FOR EACH ROW EXECUTE FUNCTION clearing_refuse_change()`,
  `CREATE TRIGGER clearing_journal_batches_no_truncate BEFORE TRUNCATE ON clearing_journal_batches
  FOR EACH STATEMENT EXECUTE FUNCTION clearing_refuse_change()`,
  `CREATE OR REPLACE FUNCTION clearing_chain_batch(list text) RETURNS void LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
   DECLARE ids text[] := ARRAY(SELECT json_array_elements_text(('[' || btrim(list, ',') || ']')::json));
     size bigint; prev text; leaves text[]; level text[]; next text[]; n int; root text;
   BEGIN
     LOCK TABLE clearing_journal_batches IN EXCLUSIVE MODE;
     SELECT b.position, b.hash INTO size, prev FROM clearing_journal_batches b ORDER BY b.position DESC LIMIT 1;
     IF NOT FOUND THEN
       SELECT c.position, c.hash INTO size, prev FROM clearing_journal_chain c ORDER BY c.position DESC LIMIT 1;
     END IF;
     leaves := ARRAY(
       SELECT encode(sha256('\\x00'::bytea || convert_to(
                '{"account":' || to_json(t.account)::text || ',"actor":' || coalesce(to_json(t.actor)::text, 'null')
                || ',"amount":"' || t.amount || '","door":' || to_json(t.door)::text
                || ',"hold_id":' || coalesce(to_json(t.hold_id)::text, 'null') || ',"memo":' || coalesce(to_json(t.memo)::text, 'null')
                || ',"postings":[' || array_to_string(ARRAY(SELECT '{"account":' || to_json(p.account)::text || ',"delta":"' || p.delta || '","kind":' || to_json(p.kind)::text || '}'
                                                  FROM clearing_postings p WHERE p.txn_id = t.txn_id ORDER BY p.id), ',')
                || '],"reason":' || coalesce(to_json(t.reason)::text, 'null') || ',"ref":' || coalesce(to_json(t.ref)::text, 'null')
                || ',"reverses":' || coalesce(to_json(t.reverses)::text, 'null') || ',"simulated":' || to_json(t.simulated)::text
                || ',"terms":' || CASE WHEN jsonb_typeof(t.terms) = 'object' THEN '{' || coalesce((SELECT string_agg(to_json(e.key)::text || ':' || CASE
                          WHEN jsonb_typeof(e.value) IN ('string', 'boolean', 'null') OR e.value::text ~ '^-?[0-9]{1,15}$' THEN e.value::text
                          ELSE clearing_canonical(e.value) END, ',' ORDER BY e.key COLLATE "C") FROM jsonb_each(t.terms) AS e), '') || '}'
                   ELSE clearing_canonical(t.terms) END
                || ',"txn_id":' || to_json(t.txn_id)::text || '}', 'UTF8')), 'hex')
         FROM unnest(ids) WITH ORDINALITY AS x(txn_id, i) JOIN clearing_transactions t ON t.txn_id = x.txn_id
        ORDER BY x.i);
     IF cardinality(leaves) IS DISTINCT FROM cardinality(ids) THEN
       RAISE EXCEPTION 'cannot chain %: the journal does not hold all of them', ids;
     END IF;
     level := leaves;
     WHILE cardinality(level) > 1 LOOP
       next := '{}';
       n := cardinality(level);
       FOR i IN 1 .. n BY 2 LOOP
         next := next || CASE WHEN i < n THEN encode(sha256('\\x01'::bytea || decode(level[i], 'hex') || decode(level[i + 1], 'hex')), 'hex') ELSE level[i] END;
       END LOOP;
       level := next;
     END LOOP;
     root := level[1];
     size := coalesce(size, 0) + cardinality(ids);
     INSERT INTO clearing_journal_batches (position, entries, leaves, root, hash)
     VALUES (size, ids, leaves, root,
             encode(sha256(convert_to('{"prev":' || coalesce('"' || prev || '"', 'null') || ',"root":"' || root || '","size":' || size || '}', 'UTF8')), 'hex'));
   END $$`,
  `CREATE OR REPLACE FUNCTION clearing_chain_entry() RETURNS trigger LANGUAGE plpgsql AS $$
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
   END $$`,
  `CREATE OR REPLACE FUNCTION clearing_post_entry(o jsonb) RETURNS boolean LANGUAGE plpgsql AS $$
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
     PERFORM set_config('holon.chain_pending',
       coalesce(nullif(current_setting('holon.chain_pending', true), ''), ',') || to_json(o->>'txn_id')::text || ',', true);
     RETURN true;
   END $$`,
  'DROP FUNCTION clearing_chain_append(clearing_transactions)',
];

/** What `down` puts back: migration 025's `clearing_chain_append`, and the trigger and insert of migrations 020 and 014. */
const restored = [
  `CREATE OR REPLACE FUNCTION clearing_chain_append(t clearing_transactions) RETURNS void LANGUAGE plpgsql SET enable_seqscan = off AS $$
   BEGIN
     INSERT INTO clearing_journal_chain (position, txn_id, hash)
     SELECT coalesce(last.position, 0) + 1, t.txn_id, encode(sha256(convert_to(
              '{"entry":{"account":' || to_json(t.account)::text || ',"actor":' || coalesce(to_json(t.actor)::text, 'null')
              || ',"amount":"' || t.amount || '","door":' || to_json(t.door)::text
              || ',"hold_id":' || coalesce(to_json(t.hold_id)::text, 'null') || ',"memo":' || coalesce(to_json(t.memo)::text, 'null')
              || ',"postings":[' || coalesce((SELECT string_agg('{"account":' || to_json(p.account)::text || ',"delta":"' || p.delta
                                                                || '","kind":' || to_json(p.kind)::text || '}', ',' ORDER BY p.id)
                                                FROM clearing_postings p WHERE p.txn_id = t.txn_id), '')
              || '],"reason":' || coalesce(to_json(t.reason)::text, 'null') || ',"ref":' || coalesce(to_json(t.ref)::text, 'null')
              || ',"reverses":' || coalesce(to_json(t.reverses)::text, 'null') || ',"simulated":' || to_json(t.simulated)::text
              || ',"terms":' || clearing_canonical(t.terms) || ',"txn_id":' || to_json(t.txn_id)::text
              || '},"prev":' || coalesce('"' || last.hash || '"', 'null') || '}', 'UTF8')), 'hex')
       FROM (SELECT 1) AS one
       LEFT JOIN (SELECT c.position, c.hash FROM clearing_journal_chain c ORDER BY c.position DESC LIMIT 1) AS last ON true;
   END $$`,
  `CREATE OR REPLACE FUNCTION clearing_chain_entry() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
   BEGIN
     IF EXISTS (SELECT 1 FROM clearing_journal_chain WHERE txn_id = NEW.txn_id) THEN RETURN NULL; END IF;
     LOCK TABLE clearing_journal_chain IN EXCLUSIVE MODE;
     PERFORM clearing_chain_append(NEW);
     RETURN NULL;
   END $$`,
  `CREATE OR REPLACE FUNCTION clearing_post_entry(o jsonb) RETURNS boolean LANGUAGE plpgsql AS $$
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
];

/** Creates the table of batch links and chains each transaction's entries as one link from now on. */
export async function up(knex: Knex): Promise<void> {
  for (const sql of statements) await knex.raw(sql);
}

/** Goes back to one link per entry (development only: the batch links are dropped with their table). */
export async function down(knex: Knex): Promise<void> {
  for (const sql of restored) await knex.raw(sql);
  await knex.raw('DROP FUNCTION clearing_chain_batch(text)');
  await knex.raw('DROP TABLE clearing_journal_batches');
  await knex.raw('CREATE INDEX clearing_postings_txn ON clearing_postings (txn_id)');
  await knex.raw('DROP INDEX clearing_postings_txn_id');
}
