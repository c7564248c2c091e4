/**
 * The gateway's signing keys (issue 23 §1): Ed25519 key pairs that sign mandates and receipts as
 * compact JWS. The private key is stored sealed (a JWE, `dir` + A256GCM, under a key derived from
 * `HOLON_FILE_SECRET`), so every process sharing the database signs with the same key and a
 * restart keeps it. At most one key is active (`retired_at IS NULL`, a unique partial index), so
 * two processes starting at once cannot each create their own. A retired key stays listed in
 * `/.well-known/jwks.json` until `listed_until`.
 */
import type { Knex } from 'knex';

const UP = [
  `CREATE TABLE gateway_signing_keys (
     kid text PRIMARY KEY,
     public_jwk jsonb NOT NULL,
     sealed_private text NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now(),
     retired_at timestamptz,
     listed_until timestamptz,
     CHECK ((retired_at IS NULL) = (listed_until IS NULL))
   )`,
  `CREATE UNIQUE INDEX gateway_signing_keys_one_active ON gateway_signing_keys ((retired_at IS NULL)) WHERE retired_at IS NULL`,
];

/** Creates the key table. */
export async function up(knex: Knex): Promise<void> {
  for (const statement of UP) await knex.raw(statement);
}

/** Drops it (every signature it made stops verifying). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS gateway_signing_keys');
}
