/**
 * The author's earnings over time as a chart (issue 11 "earnings (a chart over time)"): one
 * column per UTC day of `GET /v0/me/agents` `by_day` (the last 30 days, oldest first), each as
 * tall as its share of the best day, computed from integer micro-units (`parseMoney`) and sized
 * through the CSS object model (the Content-Security-Policy refuses inline `style` attributes).
 * The figures are written out too: the chart's label names the span and the best day, and a
 * table lists every day that earned something, so the chart is never the only carrier.
 */
import { parseMoney } from '../../../contracts/money.ts';
import type { EarningsDay } from '../../../../clients/src/index.ts';
import { percentOf } from './budget-bar.ts';
import { h } from './dom.ts';

/** The chart, its first and last day, and the table of the days that earned something, for `days` in `currency`. */
export function earningsChart(days: EarningsDay[], currency: string): HTMLElement {
  const micros = days.map((day) => parseMoney(day.total));
  const best = Math.max(0, ...micros);
  const earning = days.filter((_, index) => micros[index] > 0);
  const bestDay = days[micros.indexOf(best)];
  const label =
    earning.length === 0
      ? `Nothing earned from ${days[0]?.day} to ${days.at(-1)?.day}`
      : `Earned from ${days[0].day} to ${days.at(-1)!.day}: ${earning.length} ${earning.length === 1 ? 'day' : 'days'} with earnings, best ${bestDay.day} (${bestDay.total} ${currency})`;
  const chart = h('div', { class: 'chart', role: 'img', 'aria-label': label, 'data-testid': 'earnings-chart' });
  days.forEach((day, index) => {
    const column = h('span', { class: 'chart-day', 'data-day': day.day });
    column.style.height = `${percentOf(micros[index], best)}%`;
    chart.appendChild(column);
  });
  return h(
    'div',
    { class: 'earnings' },
    chart,
    h('p', { class: 'legend' }, h('span', {}, days[0]?.day ?? ''), h('span', {}, days.at(-1)?.day ?? '')),
    earning.length === 0
      ? h('p', { class: 'hint' }, `Nothing earned in these ${days.length} days.`)
      : h(
          'div',
          { class: 'table-wrap' },
          h(
            'table',
            {},
            h('caption', {}, 'Days with earnings'),
            h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Day'), h('th', { scope: 'col' }, `Earned (${currency})`))),
            h('tbody', {}, ...earning.map((day) => h('tr', { 'data-earned-day': day.day }, h('td', {}, day.day), h('td', {}, day.total)))),
          ),
        ),
  );
}
