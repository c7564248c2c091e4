/**
 * Pending approvals (issue 11, gateway §7 "Approvals and attended clients"): each with the
 * agent, the mandate, the worst case, the caller's `max_cost` and the reason it was held, and the
 * human key's three decisions (`POST /v0/approvals/{id}`): approve and run (`{}`), grant without
 * running (`{"run": false}`: the agent re-submits the call with `approval`), reject.
 */
import type { Approval } from '../../../../clients/src/index.ts';
import { describeError, type ConsoleContext } from './context.ts';
import { facts, h } from './dom.ts';

/** The three decisions, as the button says them and as the client sends them. */
const DECISIONS = [
  ['Approve and run', 'approve'],
  ['Grant', 'grant'],
  ['Reject', 'reject'],
] as const;

/** What a decision's answer says, in one sentence. */
function outcome(decision: (typeof DECISIONS)[number][1], approval: Approval, answer: Awaited<ReturnType<ConsoleContext['holon']['decideApproval']>>): string {
  if ('receipt' in answer) return `Approved: the call ran, receipt ${answer.receipt.id} ${answer.receipt.status}, cost ${answer.receipt.cost.total} ${answer.receipt.currency}.`;
  if (decision === 'grant') return `Granted: ${approval.agent} may now be called again with approval ${approval.id}.`;
  return `Rejected: ${approval.agent} will not run, and its held input is deleted.`;
}

/** One approval's card and its buttons. */
function approvalCard(context: ConsoleContext, approval: Approval): HTMLElement {
  const buttons = DECISIONS.map(([label, decision]) =>
    h('button', { type: 'button', class: decision === 'reject' ? 'danger' : decision === 'approve' ? 'primary' : '', 'aria-label': `${label} ${approval.agent} (${approval.id})`, onclick: () => decide(decision) }, label),
  );
  const decide = async (decision: (typeof DECISIONS)[number][1]) => {
    for (const button of buttons) button.disabled = true;
    try {
      context.notify(outcome(decision, approval, await context.holon.decideApproval(approval.id, decision)));
    } catch (error) {
      context.notify(`The decision on ${approval.id} was refused: ${describeError(error)}`, 'error');
    }
    await context.refresh();
  };
  return h(
    'li',
    { class: 'card', 'data-approval': approval.id },
    h('h3', {}, approval.agent),
    facts([
      ['Mandate', approval.mandate],
      ['Worst case', `${approval.worst_case} ${approval.currency}`],
      ['max_cost', approval.max_cost === null ? 'none set' : `${approval.max_cost} ${approval.currency}`],
      ['Reason', approval.reason],
      ['Receipt', approval.receipt],
      ['Expires', new Date(approval.expires_at).toLocaleString()],
    ]),
    h('div', { class: 'actions' }, ...buttons),
  );
}

/** Renders the pending approvals into a fresh element. */
export async function approvalsView(context: ConsoleContext): Promise<HTMLElement> {
  const { approvals } = await context.holon.listApprovals();
  return h(
    'section',
    { 'aria-labelledby': 'approvals-title' },
    h('h2', { id: 'approvals-title' }, 'Pending approvals'),
    approvals.length === 0
      ? h('p', {}, 'Nothing is waiting for you.')
      : h('ul', { class: 'cards' }, ...approvals.map((approval) => approvalCard(context, approval))),
  );
}
