/**
 * A mandate's budget as a bar (issue 11): spent, reserved and remaining side by side, each a
 * share of `total`, with the figures written out beside it so the bar is never the only
 * carrier of the numbers. Widths are computed from integer micro-units (`parseMoney`) and set
 * through the CSS object model, which the Content-Security-Policy allows (inline `style`
 * attributes it refuses).
 */
import { parseMoney } from '../../../contracts/money.ts';
import type { Budget } from '../../../../clients/src/index.ts';
import { h } from './dom.ts';

/** The share of `part` in `total`, in percent (0..100); 0 when the total is 0. Display only: no money is computed from it. */
export function percentOf(part_micros: number, total_micros: number): number {
  if (total_micros <= 0) return 0;
  return Math.min(100, Math.max(0, (part_micros * 100) / total_micros));
}

/** The bar and its legend for `budget`. */
export function budgetBar(budget: Budget): HTMLElement {
  const total = parseMoney(budget.total);
  const parts = [
    ['spent', budget.spent],
    ['reserved', budget.reserved],
    ['remaining', budget.remaining],
  ] as const;
  const label = `${parts.map(([name, amount]) => `${name} ${amount}`).join(', ')} of ${budget.total} ${budget.currency}`;
  const bar = h('div', { class: 'bar', role: 'img', 'aria-label': label });
  for (const [name, amount] of parts) {
    const segment = h('span', { class: `bar-${name}` });
    segment.style.width = `${percentOf(parseMoney(amount), total)}%`;
    bar.appendChild(segment);
  }
  const legend = h(
    'p',
    { class: 'legend' },
    ...parts.flatMap(([name, amount]) => [h('span', { class: `key key-${name}` }, `${name} ${amount}`), ' ']),
    `of ${budget.total} ${budget.currency}`,
  );
  return h('div', { class: 'budget' }, bar, legend);
}
