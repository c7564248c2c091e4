/**
 * Receipts as trees (issue 11, gateway §4): each root receipt with its status, agent, cost,
 * billing and splits, and the receipts of the calls it made nested under it; newest first, a
 * page at a time (`GET /v0/receipts?limit&cursor`), filterable by mandate.
 */
import type { ReceiptTree } from '../../../../clients/src/index.ts';
import { describeError, type ConsoleContext } from './context.ts';
import { facts, h } from './dom.ts';

/** Root receipts per page. */
export const PAGE_SIZE = 10;

/** One receipt and, nested, its calls. */
export function receiptNode(receipt: ReceiptTree): HTMLLIElement {
  const splits = receipt.splits.length === 0 ? 'none' : receipt.splits.map((split) => `${split.to} ${split.amount}`).join(', ');
  return h(
    'li',
    { class: 'receipt', 'data-receipt': receipt.id },
    h(
      'div',
      { class: 'receipt-head' },
      h('span', { class: `status status-${receipt.status}`, 'data-testid': 'status' }, receipt.status.replace('_', ' ')),
      ' ',
      h('strong', {}, receipt.agent ?? receipt.capability ?? 'nothing resolved'),
      ' ',
      h('span', { class: 'cost' }, `${receipt.cost.total} ${receipt.currency}`),
    ),
    facts([
      ['Receipt', receipt.id],
      ['Mandate', receipt.mandate],
      ['Cost', `own ${receipt.cost.own}, downstream ${receipt.cost.downstream}, total ${receipt.cost.total} ${receipt.currency}${receipt.billed ? ', billed' : ', not billed'}`],
      ['Splits', splits],
      ['Worst case', receipt.worst_case === null ? '—' : `${receipt.worst_case} ${receipt.currency}`],
      receipt.approval ? ['Approval', receipt.approval] : null,
      receipt.error ? ['Error', `${receipt.error.code}: ${receipt.error.message}`] : null,
      ['When', `${new Date(receipt.created_at).toLocaleString()}, ${receipt.duration_ms} ms`],
    ].filter((row): row is [string, string] => row !== null)),
    receipt.calls.length === 0 ? null : h('ul', { class: 'tree', 'aria-label': `Calls made by ${receipt.id}` }, ...receipt.calls.map(receiptNode)),
  );
}

/** The receipts view's own state: the mandate filter and the cursors of the pages walked so far. */
interface Paging {
  mandate: string;
  cursors: Array<string | undefined>;
}

const paging: Paging = { mandate: '', cursors: [undefined] };

/** Renders the current page of receipts into a fresh element. */
export async function receiptsView(context: ConsoleContext): Promise<HTMLElement> {
  const cursor = paging.cursors[paging.cursors.length - 1];
  const { receipts: page, next_cursor } = await context.holon.listReceipts({ limit: PAGE_SIZE, ...(paging.mandate ? { mandate: paging.mandate } : {}), ...(cursor ? { cursor } : {}) });
  const redraw = () => context.refresh().catch((error) => context.notify(describeError(error), 'error'));
  const filter = h('select', { id: 'receipts-mandate' }, h('option', { value: '' }, 'All mandates'), ...(context.me.mandates ?? []).map((id) => h('option', { value: id, selected: id === paging.mandate }, id)));
  filter.addEventListener('change', () => {
    paging.mandate = filter.value;
    paging.cursors = [undefined];
    void redraw();
  });
  const newer = h('button', { type: 'button', disabled: paging.cursors.length === 1, onclick: () => (paging.cursors.pop(), void redraw()) }, 'Newer');
  const older = h('button', { type: 'button', disabled: next_cursor === null, onclick: () => (paging.cursors.push(next_cursor ?? undefined), void redraw()) }, 'Older');
  return h(
    'section',
    { 'aria-labelledby': 'receipts-title' },
    h('h2', { id: 'receipts-title' }, 'Receipts'),
    h('div', { class: 'field' }, h('label', { for: 'receipts-mandate' }, 'Mandate'), filter),
    page.length === 0 ? h('p', {}, 'No receipts.') : h('ul', { class: 'tree roots' }, ...page.map(receiptNode)),
    h('nav', { class: 'pager', 'aria-label': 'Receipt pages' }, newer, h('span', {}, `Page ${paging.cursors.length}`), older),
  );
}
