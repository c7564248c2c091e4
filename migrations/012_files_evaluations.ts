/**
 * Files and evaluations of the hosted gateway (gateway §7 "Files", "Evaluation at publish time").
 *
 * `hosted_files`: uploaded files, their bytes in the database (`bytea`), so a file is written
 * whole or not at all with its quota check, every replica sees it, and `holon backup` copies it
 * like any other row. Deleted 24 hours after upload by the sweep.
 *
 * `hosted_evaluations`: one row per (agent version, capability suite): its progress and, once
 * done, its cases (public ones in detail, hidden ones as pass/fail only).
 */
import type { Knex } from 'knex';

const statements = [
  `CREATE TABLE hosted_files (
     id text PRIMARY KEY,
     owner text NOT NULL,
     content_type text NOT NULL,
     size bigint NOT NULL CHECK (size >= 0),
     sha256 text NOT NULL,
     bytes bytea NOT NULL,
     created_at timestamptz NOT NULL,
     expires_at timestamptz NOT NULL
   )`,
  `CREATE INDEX hosted_files_owner ON hosted_files (owner)`,
  `CREATE INDEX hosted_files_expires_at ON hosted_files (expires_at)`,
  `CREATE TABLE hosted_evaluations (
     agent text NOT NULL,
     version text NOT NULL,
     capability text NOT NULL,
     suite text NOT NULL CHECK (suite IN ('public', 'private')),
     status text NOT NULL CHECK (status IN ('running', 'done', 'failed')),
     passed integer NOT NULL DEFAULT 0 CHECK (passed >= 0),
     total integer NOT NULL DEFAULT 0 CHECK (total >= 0),
     cases jsonb NOT NULL DEFAULT '[]',
     error text,
     started_at timestamptz NOT NULL,
     finished_at timestamptz,
     PRIMARY KEY (agent, version, capability)
   )`,
];

/** Creates the tables. */
export async function up(knex: Knex): Promise<void> {
  for (const sql of statements) await knex.raw(sql);
}

/** Drops them (development only). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS hosted_evaluations');
  await knex.raw('DROP TABLE IF EXISTS hosted_files');
}
