/**
 * Endpoint credentials (gateway §6 "Authentication", §7): one author's token per agent id
 * (`ns/name`, every version), stored sealed with AES-256-GCM (`src/hosted/credentials.ts`); the
 * plain token is never stored. A row may exist before the agent's first version is published.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE hosted_endpoint_credentials (
     agent text PRIMARY KEY CHECK (length(agent) <= 140),
     account text NOT NULL REFERENCES hosted_accounts (handle),
     sealed text NOT NULL CHECK (length(sealed) <= 8192),
     updated_at timestamptz NOT NULL DEFAULT now()
   )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP TABLE hosted_endpoint_credentials`);
}
