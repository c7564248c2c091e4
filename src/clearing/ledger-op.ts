/**
 * One value-moving operation of the reference binding as the database function `clearing_apply`
 * takes it, and what it answers for it (issue 12 §1). Its own module because both the write path
 * (`write-path.ts`, which sends batches of them) and the keys group commit keeps apart
 * (`op-keys.ts`, which the write path asks) read it.
 */
import canonicalize from 'canonicalize';

/** One value-moving operation, in the shape `clearing_apply` reads for its `op`. */
export type LedgerOp = { op: 'post' | 'reverse' | 'open-hold' | 'resize-hold' | 'release-hold' | 'draw' } & Record<string, unknown>;

/** What `clearing_apply` answers for one operation: its outcome, or the error its subtransaction raised. */
export type OpOutcome = Record<string, any>;

/**
 * The JSON text of `ops` as `clearing_apply` takes it (the parameter of `APPLY_SQL`,
 * `write-path.ts`): each operation as it is, except that its `terms` (the object a replay is
 * compared with, clearing-contract §9) go as `terms_text`, their canonical JSON (RFC 8785, by
 * `canonicalize`). The database stores that text beside the terms it parses from it, and the
 * entry's leaf in the journal's chain takes it as it is instead of writing the terms out again
 * (`clearing_post_entry.sql`, `clearing_chain_batch.sql`; issue 23 §3, migration 027). The
 * operations themselves are not changed: their callers go on reading `terms`.
 */
export function opsText(ops: readonly LedgerOp[]): string {
  return JSON.stringify(ops.map(({ terms, ...op }) => (terms === undefined ? op : { ...op, terms_text: canonicalize(terms) })));
}
