/**
 * The answers of approved calls, for the caller who waits (gateway §5 `GET /v0/approvals/{id}`
 * with `wait_s`, `holon call --wait`): when an approval is decided, its answer (the approved
 * call's output or refusal, or the rejected approval) is published here and wakes the waiters.
 * Memory only, never stored (gateway §4: the gateway keeps no outputs): an answer lives
 * `ANSWER_TTL_MS` and at most `MAX_ANSWERS` are kept, the oldest dropped first.
 */

/** How long an answer stays readable after its decision: 10 minutes. */
export const ANSWER_TTL_MS = 10 * 60 * 1000;

/** How many answers are kept at once. */
export const MAX_ANSWERS = 1000;

/** How long one request may wait for a decision: 60 seconds (the `wait_s` maximum). */
export const MAX_WAIT_MS = 60_000;

/** Published answers (of type `Body`) and the requests waiting for them, by approval id. */
export class ApprovalAnswers<Body> {
  private readonly answers = new Map<string, { body: Body; at_ms: number }>();
  private readonly waiters = new Map<string, Set<() => void>>();

  /** Records `body`, the answer `POST /v0/approvals/{id}` gave the approver, and wakes whoever waits for it. */
  publish(id: string, body: Body): void {
    this.answers.delete(id);
    this.answers.set(id, { body, at_ms: Date.now() });
    // A Map iterates in insertion order: the first key is the oldest answer.
    while (this.answers.size > MAX_ANSWERS) this.answers.delete(this.answers.keys().next().value!);
    for (const wake of this.waiters.get(id) ?? []) wake();
    this.waiters.delete(id);
  }

  /** The answer of approval `id` while it is kept (`{ body }`), else null. */
  get(id: string): { body: Body } | null {
    const found = this.answers.get(id);
    if (!found) return null;
    if (Date.now() - found.at_ms > ANSWER_TTL_MS) {
      this.answers.delete(id);
      return null;
    }
    return { body: found.body };
  }

  /** Resolves when approval `id` gets an answer or after `wait_ms` (at most `MAX_WAIT_MS`), whichever is first. */
  async wait(id: string, wait_ms: number): Promise<void> {
    if (this.get(id)) return;
    await new Promise<void>((resolve) => {
      const waiters = this.waiters.get(id) ?? new Set<() => void>();
      this.waiters.set(id, waiters);
      const wake = () => {
        clearTimeout(timer);
        waiters.delete(wake);
        if (waiters.size === 0 && this.waiters.get(id) === waiters) this.waiters.delete(id);
        resolve();
      };
      const timer = setTimeout(wake, Math.min(Math.max(wait_ms, 0), MAX_WAIT_MS));
      waiters.add(wake);
    });
  }
}
