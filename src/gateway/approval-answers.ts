/**
 * The answers of decided approvals, for the caller who waits (gateway §5 `GET /v0/approvals/{id}`
 * with `wait_s`, `holon call --wait`), on whichever gateway process it asks (issue 27 §1): when an
 * approval is decided, its answer (the approved call's output or refusal, or the rejected
 * approval) is written to `gateway_approval_answers` and wakes the waiters of this process at
 * once; the waiters of other processes find it at their next poll, every `ANSWER_POLL_MS`.
 *
 * The table is UNLOGGED (migration 019): never in the WAL, a standby or a backup, emptied by a
 * crash of the server. An answer is readable `ANSWER_TTL_MS`, at most `MAX_ANSWERS` are kept (the
 * oldest dropped first), and expired ones are deleted at each decision: the gateway keeps no
 * output longer (gateway §4).
 */
import type { Knex } from 'knex';

/** How long an answer stays readable after its decision: 10 minutes. */
export const ANSWER_TTL_MS = 10 * 60 * 1000;

/** How many answers are kept at once, all processes on the database together. */
export const MAX_ANSWERS = 1000;

/** How long one request may wait for a decision: 60 seconds (the `wait_s` maximum). */
export const MAX_WAIT_MS = 60_000;

/** How often a process with waiters looks for answers decided elsewhere: every 250 ms (one query for all its waiters). */
export const ANSWER_POLL_MS = 250;

/**
 * How many approvals one process waits on at once with an early wake-up: 1,000. A waiter for
 * another approval beyond them sleeps to its deadline and is then answered with what the
 * approval is then, so the poll's query stays bounded.
 */
export const MAX_WAITED_APPROVALS = 1000;

/** Published answers (of type `Body`, stored as JSON text) and this process's requests waiting for them, by approval id. */
export class ApprovalAnswers<Body> {
  private readonly waiters = new Map<string, Set<() => void>>();
  private poll: NodeJS.Timeout | null = null;

  /** `db`: the gateway's database (PGlite or Postgres); `poll_ms`: the poll interval ({@link ANSWER_POLL_MS}). */
  constructor(
    private readonly db: Knex,
    private readonly poll_ms = ANSWER_POLL_MS,
  ) {}

  /** Records `body`, the answer `POST /v0/approvals/{id}` gave the approver, wakes this process's waiters, and drops expired and surplus answers. */
  async publish(id: string, body: Body): Promise<void> {
    await this.db('gateway_approval_answers')
      .insert({ approval: id, body: JSON.stringify(body), decided_at: this.db.raw('clock_timestamp()') })
      .onConflict('approval')
      .merge();
    // SKIP LOCKED: two processes pruning at once never wait on (or deadlock with) each other; what one skips the next decision drops.
    await this.db.raw(
      `DELETE FROM gateway_approval_answers WHERE approval IN (
         SELECT approval FROM gateway_approval_answers WHERE decided_at < clock_timestamp() - make_interval(secs => ?) FOR UPDATE SKIP LOCKED)
       OR approval IN (
         SELECT approval FROM gateway_approval_answers ORDER BY decided_at DESC, approval DESC OFFSET ? FOR UPDATE SKIP LOCKED)`,
      [ANSWER_TTL_MS / 1000, MAX_ANSWERS],
    );
    this.wake(id);
  }

  /** The answer of approval `id` while it is kept (`{ body }`), else null. */
  async get(id: string): Promise<{ body: Body } | null> {
    const row: { body: string } | undefined = await this.db('gateway_approval_answers')
      .where({ approval: id })
      .andWhere('decided_at', '>=', this.db.raw('clock_timestamp() - make_interval(secs => ?)', [ANSWER_TTL_MS / 1000]))
      .first('body');
    return row ? { body: JSON.parse(row.body) as Body } : null;
  }

  /** Resolves when approval `id` gets an answer (here at once, from another process within a poll) or after `wait_ms` (at most `MAX_WAIT_MS`), whichever is first. */
  async wait(id: string, wait_ms: number): Promise<void> {
    if (await this.get(id)) return;
    const delay_ms = Math.min(Math.max(wait_ms, 0), MAX_WAIT_MS);
    await new Promise<void>((resolve) => {
      if (!this.waiters.has(id) && this.waiters.size >= MAX_WAITED_APPROVALS) {
        setTimeout(resolve, delay_ms);
        return;
      }
      const waiters = this.waiters.get(id) ?? new Set<() => void>();
      this.waiters.set(id, waiters);
      const wake = () => {
        clearTimeout(timer);
        waiters.delete(wake);
        if (waiters.size === 0 && this.waiters.get(id) === waiters) this.waiters.delete(id);
        resolve();
      };
      const timer = setTimeout(wake, delay_ms);
      waiters.add(wake);
      this.schedule();
    });
  }

  /** How many approvals this process waits on now (for tests and bounds). */
  get waited(): number {
    return this.waiters.size;
  }

  /** Wakes every waiter of approval `id` in this process. */
  private wake(id: string): void {
    for (const wake of this.waiters.get(id) ?? []) wake();
  }

  /** Starts the next poll unless one is pending or nobody waits. */
  private schedule(): void {
    if (this.poll !== null || this.waiters.size === 0) return;
    this.poll = setTimeout(() => void this.sweep(), this.poll_ms);
  }

  /** One poll: wakes the waiters whose approval has an answer, decided here or on another process. */
  private async sweep(): Promise<void> {
    try {
      const rows: Array<{ approval: string }> = await this.db('gateway_approval_answers').whereIn('approval', [...this.waiters.keys()]).select('approval');
      for (const row of rows) this.wake(row.approval);
    } catch {
      // The database did not answer: every waiter keeps its deadline, and the next poll asks again.
    } finally {
      this.poll = null;
      this.schedule();
    }
  }
}
