/**
 * Group commit for the writes that move a mandate's running figures (gateway §1 "Reserve" and
 * "Settle", issue 21 §2). Reserving and closing a reservation each update the mandate's row
 * (`mandates.ts`), and Postgres holds that row's lock until the commit's WAL flush: calls on one
 * hot mandate would take turns at one flush each. Here, while one write on a mandate is at the
 * database, the writes that arrive for the same mandate wait in this process and then go
 * together, in arrival order, as the statements of one transaction: one commit (one flush) for
 * all of them. A lone write goes at once, alone, as before: it never waits for a window.
 *
 * The budget stays exact: each statement of a group is the same conditional update it is alone
 * (re-checked under the row's lock on its latest version), so the calls of a group, of other
 * groups and of other processes together cannot overrun a budget. A group commits whole or not
 * at all, and each write's answer is given only after its group committed, so a crash mid-group
 * loses nothing that was answered. When a group fails (a statement refused, a deadlock with
 * another process, the connection lost), each of its writes is tried again on its own, so one
 * write can never sink another; each statement is idempotent or fenced for that (the receipt's
 * `running` fence, the reservation's key).
 *
 * Bounds: a group carries at most {@link MANDATE_GROUP_MAX} writes; the writes waiting on a
 * mandate are at most the calls in flight on it (each waits for at most one group before its own).
 */
import type { Knex } from 'knex';
import { rawQuery, rawTransaction, type FixedStatement } from '../db/raw-sql.ts';

/** Most writes one group (one transaction) carries; more wait for the next group. 32, as the binding's `HOLON_CLEARING_GROUP_MAX`. */
export const MANDATE_GROUP_MAX = 32;

/** One write: a fixed statement and its `$n` values; it answers its rows. */
interface Waiting {
  statement: FixedStatement;
  values: unknown[];
  resolve: (rows: Record<string, any>[]) => void;
  reject: (error: unknown) => void;
}

/** The writes of one process on its mandates' rows, grouped per mandate (see the module comment). */
export class MandateWriteGroups {
  /** Per mandate id: the writes waiting for the group at the database to end. A mandate is here only while a group of it is at the database. */
  private readonly waiting = new Map<string, Waiting[]>();

  /** `group_max`: most writes per group, from 1 to 64 ({@link MANDATE_GROUP_MAX} by default). */
  constructor(
    private readonly db: Knex,
    private readonly group_max = MANDATE_GROUP_MAX,
  ) {
    if (!Number.isInteger(group_max) || group_max < 1 || group_max > 64) throw new RangeError(`a mandate group carries 1 to 64 writes, not ${group_max}`);
  }

  /**
   * Runs `statement` (one that updates the row of mandate `mandate`, and its own rows) with
   * `values`, alone when nothing of `mandate` is at the database, else in the next group of it.
   * Answers its rows once they are committed; throws what running it alone threw.
   */
  write(mandate: string, statement: FixedStatement, values: unknown[]): Promise<Record<string, any>[]> {
    return new Promise((resolve, reject) => {
      const entry = { statement, values, resolve, reject };
      const queue = this.waiting.get(mandate);
      if (queue) {
        queue.push(entry);
        return;
      }
      this.waiting.set(mandate, []);
      void this.drain(mandate, [entry]);
    });
  }

  /** Runs `group`, then the writes that arrived for `mandate` meanwhile, in groups, until none waits. Never throws. */
  private async drain(mandate: string, group: Waiting[]): Promise<void> {
    for (;;) {
      await this.run(group);
      const queue = this.waiting.get(mandate)!;
      if (queue.length === 0) {
        this.waiting.delete(mandate);
        return;
      }
      group = queue.splice(0, this.group_max);
    }
  }

  /** One group: alone when it is one write, else one transaction; a failed transaction's writes are tried alone. Never throws. */
  private async run(group: Waiting[]): Promise<void> {
    if (group.length > 1) {
      try {
        const answers = await rawTransaction(this.db, group);
        group.forEach((entry, index) => entry.resolve(answers[index]));
        return;
      } catch {
        // Nothing of the group was written (or, at a lost commit answer, each statement's fence finds it): each alone.
      }
    }
    await Promise.all(group.map((entry) => rawQuery(this.db, entry.statement, entry.values).then(entry.resolve, entry.reject)));
  }
}
