/**
 * The two writes of a billed call's path (gateway §1 "Reserve" and "Settle"; issue 12 §2), each
 * one statement of data-modifying CTEs and so one transaction, whole or nothing, in one round
 * trip to the database instead of a transaction of four and of six:
 *
 * - {@link RESERVE_CALL}: the worst case in the mandate's budget, the reservation, the derived
 *   sub-mandate (if any) and the `running` receipt, all only when the budget covers it;
 * - {@link FINISH_CALL}: the final receipt (fenced: only over a receipt still `running`), its
 *   journal event, its settlement intents (claimed by the writer, who posts them once it
 *   commits), the agent's measured record (its `call_events` row) and the reservation closed at what was spent, all only
 *   when the receipt was written.
 *
 * Each answers a row exactly when the call's receipt was written. Without a recorder the
 * statement commits as soon as it ends, so the rows every call of an agent or a mandate shares
 * (the measured record, the mandate's figures) stay locked only while it runs; every process
 * runs the same statement, so they are always locked in the same order.
 */
import { namedStatement, type FixedStatement } from '../db/raw-sql.ts';
import { closeCtes, RESERVE_CTES, SUB_MANDATE_CTE, type CloseParam, type ReserveParam, type SubMandateParam } from './mandates.ts';
import { CLAIMED_INTENTS_SQL, intentsCte, type IntentsParam } from './outbox.ts';
import { receiptCtes, type ReceiptParam } from './receipts.ts';

/** Reserve, store the sub-mandate and write the `running` receipt (see the module comment); a row when reserved. */
export const RESERVE_CALL = namedStatement<ReserveParam | SubMandateParam | ReceiptParam>(
  'holon_gateway_reserve_call',
  `WITH ${RESERVE_CTES}, ${SUB_MANDATE_CTE}, ${receiptCtes('reserved')} SELECT id FROM reserved`,
);

/**
 * Write the final receipt with its intents, measured record and closed reservation (see the
 * module comment); a row when written, whose `claimed` lists the intents it wrote (claimed for
 * posting when `:claim_ms` is set).
 */
export const FINISH_CALL = namedStatement<ReceiptParam | IntentsParam | CloseParam>(
  'holon_gateway_finish_call',
  `WITH ${receiptCtes(null)}, ${intentsCte('written')}, ${closeCtes('written')} SELECT id, ${CLAIMED_INTENTS_SQL} AS claimed FROM written`,
);

/**
 * The statements above that update the call's mandate row (its running figures): a process
 * groups concurrent ones on one mandate into one transaction (issue 21 §2, `mandate-groups.ts`).
 */
export const MANDATE_WRITES: ReadonlySet<FixedStatement> = new Set([RESERVE_CALL.statement, FINISH_CALL.statement]);
