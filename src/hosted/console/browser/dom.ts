/**
 * The console's one way to build DOM (issue 11): elements from a tag, attributes and children,
 * text always set as text nodes, never parsed as HTML, so an author-written summary, an error
 * sentence or a receipt field can never inject markup. Inline `style` attributes are not used:
 * the Content-Security-Policy refuses them (`style-src 'self'`).
 */

/** A child: a node, a text (set as a text node), or nothing (skipped). */
export type Child = Node | string | null | undefined | false;

/** Attributes: strings set with `setAttribute`, booleans present or absent, functions as `on<event>` listeners. */
export type Attributes = Record<string, string | boolean | ((event: Event) => void) | undefined>;

/** Creates `<tag>` with `attributes` and `children`. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Attributes = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.replace(/^on/, ''), value);
    else element.setAttribute(name, value === true ? '' : value);
  }
  append(element, children);
  return element;
}

/** Appends `children` to `parent`, skipping empty ones. */
export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  }
}

/** Replaces every child of `parent` with `children`. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

/** A labelled term/definition list from `[label, value]` rows. */
export function facts(rows: Array<[string, Child]>): HTMLDListElement {
  const list = h('dl', { class: 'facts' });
  for (const [label, value] of rows) append(list, [h('dt', {}, label), h('dd', {}, value)]);
  return list;
}
