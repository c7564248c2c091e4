/**
 * One value-moving operation of the reference binding as the database function `clearing_apply`
 * takes it, and what it answers for it (issue 12 §1). Its own module because both the write path
 * (`write-path.ts`, which sends batches of them) and the keys group commit keeps apart
 * (`op-keys.ts`, which the write path asks) read it.
 */

/** One value-moving operation, in the shape `clearing_apply` reads for its `op`. */
export type LedgerOp = { op: 'post' | 'reverse' | 'open-hold' | 'resize-hold' | 'release-hold' | 'draw' } & Record<string, unknown>;

/** What `clearing_apply` answers for one operation: its outcome, or the error its subtransaction raised. */
export type OpOutcome = Record<string, any>;
