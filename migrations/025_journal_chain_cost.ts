/**
 * The journal's hash chain at a fraction of its cost (issue 23 §3): `clearing_chain_append` writes
 * the canonical JSON (RFC 8785) of `{entry, prev}` out as text for the entry's fixed shape, in the
 * statement that inserts the link, and calls `clearing_canonical` only for the entry's terms.
 * Migration 020 built the entry as jsonb and canonicalised all of it: about 30 calls of that
 * plpgsql function per entry (one per object, array and value, an object's each running a query),
 * which doubled PostgreSQL's CPU per settle (bench/README.md). Counted with callgrind on
 * PostgreSQL 15, 16 settles per transaction: the chain added 1.44 M instructions per entry to the
 * 1.58 M of an unchained settle before (+92%), 0.65 M after (+41%). The text, and so every hash, is
 * the same byte for byte: the chains already written stay valid and `holon audit` is unchanged.
 *
 * Frozen: the SQL below is what this migration ran (and, for `down`, what it replaced); it
 * imports nothing. Today's definition of each function is in `src/clearing/sql/`.
 */
import type { Knex } from 'knex';

/** The entry written out as canonical text, one statement per link. */
const APPEND = `CREATE OR REPLACE FUNCTION clearing_chain_append(t clearing_transactions) RETURNS void LANGUAGE plpgsql SET enable_seqscan = off AS $$
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
   END $$`;

/** Migration 020's text: the entry built as jsonb, then canonicalised. */
const APPEND_020 = `CREATE OR REPLACE FUNCTION clearing_chain_append(t clearing_transactions) RETURNS void LANGUAGE plpgsql SET enable_seqscan = off AS $$
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
   END $$`;

/** Installs the cheaper `clearing_chain_append`. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(APPEND);
}

/** Puts migration 020's `clearing_chain_append` back. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(APPEND_020);
}
