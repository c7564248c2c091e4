/**
 * Keys (issue 11, gateway §7 "Principals"): the account's live keys by prefix, a form that
 * creates an agent key under one of its root mandates (`POST /v0/keys`, with `ask_in_client`),
 * shown once and never stored by the console, and a revoke button per key
 * (`DELETE /v0/keys/{prefix}`).
 */
import type { KeyView, NewKey } from '../../../../clients/src/index.ts';
import { describeError, type ConsoleContext } from './context.ts';
import { h } from './dom.ts';

/** The panel that shows a new key once; `id` names its elements (two panels may share a page). */
export function newKeyPanel(key: NewKey, title: string, id: string): HTMLElement {
  return h(
    'div',
    { class: 'new-key', role: 'group', 'aria-labelledby': `${id}-title` },
    h('h3', { id: `${id}-title` }, title),
    h('p', {}, 'Copy it now: it is shown once and only its hash is kept.'),
    h('label', { for: `${id}-value` }, `${key.kind === 'agent' ? 'Agent' : 'Human'} key${key.mandate ? ` for ${key.mandate}` : ''}`),
    h('input', { id: `${id}-value`, type: 'text', readonly: true, value: key.key, 'data-testid': id, spellcheck: 'false', autocomplete: 'off' }),
  );
}

/** One row of the keys table. */
function keyRow(context: ConsoleContext, key: KeyView): HTMLTableRowElement {
  const revoke = async () => {
    if (!confirm(`Revoke ${key.prefix}? It stops working at once, for good.`)) return;
    try {
      await context.holon.revokeKey(key.prefix);
      context.notify(`Revoked ${key.prefix}.`);
    } catch (error) {
      context.notify(`Revoking ${key.prefix} was refused: ${describeError(error)}`, 'error');
    }
    await context.refresh();
  };
  return h(
    'tr',
    { 'data-key': key.prefix },
    h('td', {}, h('code', {}, key.prefix)),
    h('td', {}, key.kind),
    h('td', {}, key.mandate ?? '—'),
    h('td', {}, key.ask_in_client ? 'yes' : 'no'),
    h('td', {}, key.expires_at ? new Date(key.expires_at).toLocaleDateString() : 'never'),
    h('td', {}, h('button', { type: 'button', class: 'danger', 'aria-label': `Revoke ${key.prefix}`, onclick: revoke }, 'Revoke')),
  );
}

/** The form creating an agent key; the new key is shown once in `#new-key-slot`. */
function createForm(context: ConsoleContext): HTMLFormElement {
  const mandate = h('select', { id: 'key-mandate', name: 'mandate', required: true }, ...(context.me.mandates ?? []).map((id) => h('option', { value: id }, id)));
  const ask = h('input', { id: 'key-ask', type: 'checkbox', name: 'ask_in_client' });
  const form = h(
    'form',
    { class: 'inline-form', 'aria-labelledby': 'create-key-title' },
    h('h3', { id: 'create-key-title' }, 'New agent key'),
    h('div', { class: 'field' }, h('label', { for: 'key-mandate' }, 'Mandate'), mandate),
    h('div', { class: 'field check' }, ask, h('label', { for: 'key-ask' }, 'Ask in client (approval forms in Claude Code or Claude Desktop)')),
    h('button', { type: 'submit', class: 'primary' }, 'Create key'),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const key = await context.holon.createKey({ mandate: mandate.value, ask_in_client: ask.checked });
      await context.refresh();
      // After the redraw, so the key stays on screen until the next action.
      document.getElementById('new-key-slot')?.replaceChildren(newKeyPanel(key, `New key ${key.prefix}`, 'new-key'));
      context.notify(`Created ${key.prefix} for ${key.mandate}.`);
    } catch (error) {
      context.notify(`Creating a key was refused: ${describeError(error)}`, 'error');
    }
  });
  return form;
}

/** Renders the keys view into a fresh element. */
export async function keysView(context: ConsoleContext): Promise<HTMLElement> {
  const keys = context.me.keys ?? [];
  return h(
    'section',
    { 'aria-labelledby': 'keys-title' },
    h('h2', { id: 'keys-title' }, 'Keys'),
    createForm(context),
    h('div', { id: 'new-key-slot', 'aria-live': 'polite' }),
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        {},
        h('caption', {}, 'Live keys (prefixes only: a key is shown once, when it is made)'),
        h('thead', {}, h('tr', {}, ...['Prefix', 'Kind', 'Mandate', 'Ask in client', 'Expires', ''].map((title) => h('th', { scope: 'col' }, title)))),
        h('tbody', {}, ...keys.map((key) => keyRow(context, key))),
      ),
    ),
  );
}
