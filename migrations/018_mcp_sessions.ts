/**
 * MCP 2025-11-25 sessions live in the database, not in one process's memory (issue 27 §1), so a
 * session opened on one gateway process continues on any other behind a round-robin balancer:
 * - `mcp_sessions`: one row per session (`Mcp-Session-Id`), who opened it (`owner`: hosted, the
 *   agent key's prefix), the capabilities its client declared at `initialize`, and when it was
 *   last used (`seen_at`: idle sessions are deleted);
 * - `mcp_answers`: a client's answer to a request the server sent it (an elicitation), posted to
 *   whichever process the balancer picked, kept until the process that asked claims it by the
 *   request id it sent.
 */
import type { Knex } from 'knex';

const statements = [
  `CREATE TABLE mcp_sessions (
     id text PRIMARY KEY,
     owner text NOT NULL,
     client_capabilities jsonb NOT NULL,
     created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
     seen_at timestamptz NOT NULL DEFAULT clock_timestamp()
   )`,
  `CREATE INDEX mcp_sessions_seen ON mcp_sessions (seen_at)`,
  `CREATE TABLE mcp_answers (
     session_id text NOT NULL REFERENCES mcp_sessions (id) ON DELETE CASCADE,
     request_id text NOT NULL,
     message jsonb NOT NULL,
     created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
     PRIMARY KEY (session_id, request_id)
   )`,
];

/** Creates the session and answer tables. */
export async function up(knex: Knex): Promise<void> {
  for (const sql of statements) await knex.raw(sql);
}

/** Drops them (development only). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS mcp_answers');
  await knex.raw('DROP TABLE IF EXISTS mcp_sessions');
}
