/**
 * The overview (issue 11): the account's balance (`GET /v0/me`) and its root mandates with
 * spent, reserved and remaining as bars (`GET /v0/mandates`, gateway §5 "Mandates").
 */
import type { ConsoleContext } from './context.ts';
import { budgetBar } from './budget-bar.ts';
import { facts, h } from './dom.ts';

/** Renders the overview into a fresh element. */
export async function overviewView(context: ConsoleContext): Promise<HTMLElement> {
  const { me } = context;
  const { mandates } = await context.holon.listMandates();
  const balance = me.balance;
  return h(
    'div',
    {},
    h(
      'section',
      { 'aria-labelledby': 'balance-title' },
      h('h2', { id: 'balance-title' }, 'Balance'),
      balance
        ? h('p', { class: 'balance', 'data-testid': 'balance' }, `${balance.balance} EUR`)
        : h('p', {}, 'No balance yet: the clearing binding has no account for you.'),
      balance ? facts([['Available', `${balance.available} EUR`], ['Reserved by running calls', `${balance.reserved} EUR`]]) : null,
      h('p', { class: 'hint' }, 'Demo credit: there are no real payments yet.'),
    ),
    h(
      'section',
      { 'aria-labelledby': 'mandates-title' },
      h('h2', { id: 'mandates-title' }, 'Mandates'),
      mandates.length === 0
        ? h('p', {}, 'No mandates.')
        : h(
            'ul',
            { class: 'cards' },
            ...mandates.map(({ mandate, budget }) =>
              h(
                'li',
                { class: 'card', 'data-mandate': String(mandate.id) },
                h('h3', {}, String(mandate.id)),
                facts([['Grantee', String(mandate.grantee)]]),
                budgetBar(budget),
              ),
            ),
          ),
    ),
  );
}
