-- The canonical JSON text of a value (RFC 8785, JSON Canonicalization Scheme), so the journal's
-- hash chain (clearing_chain_append.sql) is computed in the transaction that writes an entry and
-- recomputed by `holon audit` with the `canonicalize` library over the same value, byte for byte.
--
-- Objects: members sorted by key (COLLATE "C", code-point order, which is RFC 8785's UTF-16 order
-- for every key without characters above U+FFFF), no whitespace. Strings, true, false and null:
-- PostgreSQL's own JSON text, which escapes exactly what JSON.stringify escapes (", \, and control
-- characters, as \b \f \n \r \t or \u00xx in lower case). Numbers: an integer of at most 2^53 − 1
-- as its digits; any other as the shortest double that reads back the same (PostgreSQL's float8
-- text with the default extra_float_digits = 1), written the way ECMAScript writes it: digits
-- only from 1e-6 to 1e21, else an exponent without leading zeros.
--
-- Where it parts from RFC 8785 (and so from `holon audit`): a key with characters above U+FFFF
-- against one with characters from U+E000 to U+FFFF (code-point order, not UTF-16's), and an
-- integer beyond 2^53 halfway between two shortest digit strings (PostgreSQL's float8 text picks
-- the other one: 27565046792640850 is written 27565046792640848). The binding's terms never hold
-- either (fixed ASCII keys, amounts within ±3 × 10^15); tests/clearing/chain.test.ts shows both.
--
-- Created by migration 020; unchanged since.
CREATE OR REPLACE FUNCTION clearing_canonical(j jsonb) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
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
         RETURN regexp_replace(s, 'e([+-])0*([0-9])', 'e\1\2');
       ELSE
         RETURN j::text;
     END CASE;
   END $$;
