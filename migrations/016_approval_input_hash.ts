/**
 * Approvals are bound to the SHA-256 of their input's canonical JSON (object keys sorted), no
 * longer of the text as sent (gateway §1 "Admit"): the held input comes back from `jsonb` with
 * its keys reordered, so an approval of an input whose keys were not already in that order could
 * never be matched by its own held input (approving it held the call again). Every approval that
 * still holds its input (pending, or approved and not yet run) is hashed again from it; the
 * others keep the hash they were decided with.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Knex } from 'knex';

/** The hash as this migration defines it, written out so the migration never changes with `src/`. */
const inputHash = (input: unknown): string => createHash('sha256').update(canonicalize(input) ?? 'null').digest('hex');

/** Rehashes the held inputs, one row at a time (at most the approvals of the last 7 days). */
export async function up(knex: Knex): Promise<void> {
  const rows: Array<{ id: string; input: unknown }> = await knex('gateway_approvals').whereNotNull('input').select('id', 'input');
  for (const row of rows) {
    const input = typeof row.input === 'string' ? JSON.parse(row.input) : row.input;
    await knex('gateway_approvals').where({ id: row.id }).update({ input_sha256: inputHash(input) });
  }
}

/** Nothing to undo: a canonical hash is a hash of the same input. */
export async function down(): Promise<void> {}
