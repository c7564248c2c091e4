/**
 * "Connect a webhook" (issue 11, gateway §6 "Drafting a listing"): the author gives a name, the
 * webhook's https URL, an example input (JSON) and a price; `POST /v0/agents/draft` calls the
 * webhook once and answers a draft manifest and its `holon.yaml`, shown for review; "Publish"
 * sends that manifest to `POST /v0/agents`. Nothing is stored before "Publish".
 */
import type { Draft } from '../../../../clients/src/index.ts';
import { describeError, type ConsoleContext } from './context.ts';
import { h } from './dom.ts';

/** The largest example input the form sends, in characters of JSON (the gateway's bound is 64 KiB). */
const MAX_INPUT_CHARS = 65_536;

/** The review of a draft: its YAML and the button publishing it. */
function review(context: ConsoleContext, draft: Draft): HTMLElement {
  const publish = async () => {
    try {
      const published = await context.holon.publishAgent(draft.manifest);
      await context.refresh();
      context.notify(`Published ${published.agent}: callers can call it now.`);
    } catch (error) {
      context.notify(`Publishing ${draft.manifest.id} was refused: ${describeError(error)}`, 'error');
    }
  };
  return h(
    'div',
    { class: 'card', role: 'group', 'aria-labelledby': 'draft-title' },
    h('h3', { id: 'draft-title' }, `Draft of ${draft.manifest.id}@${draft.manifest.version}`),
    h('p', { class: 'hint' }, 'Review the manifest drafted from the example call: the schemas, the price and the summary are what callers will see.'),
    h('pre', { class: 'yaml', 'data-testid': 'draft-yaml', tabindex: '0', 'aria-label': 'holon.yaml of the draft' }, draft.yaml),
    h('div', { class: 'actions' }, h('button', { type: 'button', class: 'primary', onclick: publish }, `Publish ${draft.manifest.id}@${draft.manifest.version}`)),
  );
}

/** The "Connect a webhook" section: the form, and the draft's review once drafted. */
export function connectWebhook(context: ConsoleContext): HTMLElement {
  const field = (id: string, label: string, control: HTMLElement, hint?: string) =>
    h('div', { class: 'field' }, h('label', { for: id }, label), control, hint ? h('p', { class: 'hint' }, hint) : null);
  const name = h('input', { id: 'webhook-name', type: 'text', required: true, autocomplete: 'off', spellcheck: 'false', maxlength: '64', pattern: '[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?' });
  const endpoint = h('input', { id: 'webhook-endpoint', type: 'url', required: true, autocomplete: 'off', spellcheck: 'false', maxlength: '2048', placeholder: 'https://…' });
  const input = h('textarea', { id: 'webhook-input', required: true, rows: '4', spellcheck: 'false' }, '{}');
  const summary = h('input', { id: 'webhook-summary', type: 'text', autocomplete: 'off', maxlength: '280' });
  const price = h('input', { id: 'webhook-price', type: 'text', autocomplete: 'off', inputmode: 'decimal', placeholder: '0.05', pattern: '(0|[1-9][0-9]{0,8})(\\.[0-9]{1,6})?' });
  const slot = h('div', { id: 'draft-slot', 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'inline-form', 'aria-labelledby': 'webhook-title' },
    field('webhook-name', `Name (${context.me.handle}/…)`, name, 'Lowercase letters, digits and dashes.'),
    field('webhook-endpoint', 'Webhook URL', endpoint, 'https; the gateway calls it once with the example input.'),
    field('webhook-input', 'Example input (JSON)', input),
    field('webhook-summary', 'Summary (optional)', summary),
    field('webhook-price', 'Price per run in EUR (empty: free)', price),
    h('button', { type: 'submit' }, 'Draft'),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    slot.replaceChildren();
    let example: unknown;
    try {
      if (input.value.length > MAX_INPUT_CHARS) throw new Error(`the example input is longer than ${MAX_INPUT_CHARS} characters`);
      example = JSON.parse(input.value);
    } catch (error) {
      return context.notify(`The example input is not usable: ${(error as Error).message}`, 'error');
    }
    const amount = price.value.trim();
    try {
      const draft = await context.holon.draftAgent({
        name: name.value.trim(),
        endpoint: endpoint.value.trim(),
        input: example,
        ...(summary.value.trim() ? { summary: summary.value.trim() } : {}),
        price: amount ? { model: 'per_run', currency: 'EUR', amount } : { model: 'free', currency: 'EUR' },
      });
      slot.replaceChildren(review(context, draft));
      context.notify(`Drafted ${draft.manifest.id}@${draft.manifest.version}: review it below, then publish.`);
    } catch (error) {
      context.notify(`Drafting was refused: ${describeError(error)}`, 'error');
    }
  });
  return h('section', { 'aria-labelledby': 'webhook-title' }, h('h2', { id: 'webhook-title' }, 'Connect a webhook'), form, slot);
}
