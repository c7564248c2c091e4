/**
 * The console (issue 11, gateway §7): one page at `/console`, served by the hosted gateway,
 * that talks to it only through the typed client `@holon/client` over `/v0`. It first reads what
 * the operator switched on (`GET /v0/features`) and offers only that (issue 26). Signed out, it
 * offers "Sign in with GitHub" when it is on (the gateway's `/v0/auth/github` round trip ends at
 * `/console#login=<code>`, traded once with `POST /v0/auth/exchange`) and pasting a human key.
 * Signed in, five views: overview (balance, mandates), approvals, keys, receipts, and the author
 * section (agents: published versions, evaluations, earnings, and when on, endpoint credentials
 * and connect a webhook).
 */
import { createHolonClient, HolonError, type Features, type NewKey } from '../../../../clients/src/index.ts';
import { approvalsView } from './approvals.ts';
import { authorsView } from './authors.ts';
import { describeError, featuresOff, type ConsoleContext } from './context.ts';
import { h, replace } from './dom.ts';
import { keysView, newKeyPanel } from './keys.ts';
import { overviewView } from './overview.ts';
import { receiptsView } from './receipts.ts';
import { forgetKey, storedKey, storeKey, takeLoginFragment } from './session.ts';

/** The views of a signed-in human, in navigation order. */
const VIEWS = {
  overview: { title: 'Overview', render: overviewView },
  approvals: { title: 'Approvals', render: approvalsView },
  keys: { title: 'Keys', render: keysView },
  receipts: { title: 'Receipts', render: receiptsView },
  agents: { title: 'Agents', render: authorsView },
} as const;

type ViewName = keyof typeof VIEWS;

/** What each `#login_error=<code>` of the sign-in callback means for the person signing in. */
const LOGIN_ERRORS: Record<string, string> = {
  access_denied: 'GitHub sign-in was cancelled.',
  invalid_state: 'That sign-in link expired or was opened in another browser: sign in again.',
  github_unavailable: 'GitHub could not be reached: try again in a minute.',
  github_refused: 'GitHub refused the sign-in: try again.',
  account_disabled: 'This account is disabled.',
  email_taken: 'An account already uses this email: sign in with that account.',
  handle_unavailable: 'Your GitHub login cannot be used as a handle here (it is reserved or taken).',
  clearing_unavailable: 'Your account could not be credited right now: try again in a minute.',
};

const main = document.getElementById('main')!;
const who = document.getElementById('who')!;
const status = document.getElementById('status')!;
const alertRegion = document.getElementById('alert')!;

/** What the gateway offers, read once by `start`; null until read, or when it could not be read (then GitHub sign-in is not offered). */
let features: Features | null = null;

/** Announces `message`: an outcome in the status region, a refusal in the alert region. */
function notify(message: string, kind: 'ok' | 'error' = 'ok'): void {
  replace(kind === 'error' ? alertRegion : status, message);
  replace(kind === 'error' ? status : alertRegion);
}

/** The signed-out page: GitHub sign-in when it is on (else the line saying why it is off), and a pasted human key. */
function showSignIn(message?: string): void {
  const github = features?.github_sign_in.on === true;
  replace(who);
  if (message) notify(message, 'error');
  const input = h('input', { id: 'paste-key', type: 'password', name: 'key', autocomplete: 'off', required: true, spellcheck: 'false', placeholder: 'hlk_h_…' });
  const form = h(
    'form',
    { class: 'card sign-in', 'aria-labelledby': 'paste-title' },
    h('h2', { id: 'paste-title' }, github ? 'Or paste a human key' : 'Paste a human key'),
    h('div', { class: 'field' }, h('label', { for: 'paste-key' }, 'Human key'), input),
    h('p', { class: 'hint' }, 'The key stays in this tab (session storage) and is forgotten when you close it.'),
    h('button', { type: 'submit' }, 'Open the console'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    storeKey(input.value.trim());
    void start();
  });
  replace(
    main,
    h(
      'section',
      { class: 'card sign-in', 'aria-labelledby': 'signin-title' },
      h('h2', { id: 'signin-title' }, 'Sign in'),
      h('p', {}, `See your balance, mandates, keys and receipts, decide the calls waiting for your approval${features?.publishing.on ? ', and publish agents and see what they earn' : ''}.`),
      github ? h('a', { class: 'button primary', href: '/v0/auth/github', id: 'github-signin' }, 'Sign in with GitHub') : features && featuresOff(features, ['github_sign_in']),
    ),
    form,
  );
}

/** Draws the signed-in shell and `view`; a key that stopped working signs out. */
async function showConsole(key: string, view: ViewName, offered: Features, shownOnce?: NewKey): Promise<void> {
  const holon = createHolonClient({ baseUrl: location.origin, key });
  let current = view;
  const content = h('div', { id: 'view' });
  const nav = h('nav', { class: 'tabs', 'aria-label': 'Console' });
  // A new account's agent key, shown until the first move to another view.
  const once = h('div', {}, shownOnce ? newKeyPanel(shownOnce, 'Your agent key for Claude Code', 'signin-key') : null);
  const context: ConsoleContext = {
    holon,
    me: await holon.readMe(),
    features: offered,
    notify,
    refresh: async () => {
      try {
        context.me = await holon.readMe();
        replace(content, await VIEWS[current].render(context));
      } catch (error) {
        if (error instanceof HolonError && error.status === 401) return signOut('Your key no longer works (revoked or expired): sign in again.');
        notify(describeError(error), 'error');
      }
    },
  };
  if (context.me.principal !== 'human') return signOut('This is an agent key: the console needs a human key (hlk_h_…).');
  const drawNav = () =>
    replace(
      nav,
      ...(Object.keys(VIEWS) as ViewName[]).map((name) =>
        h('button', { type: 'button', 'aria-current': name === current ? 'page' : undefined, 'data-view': name, onclick: () => ((current = name), once.remove(), notify(''), drawNav(), void context.refresh()) }, VIEWS[name].title),
      ),
    );
  drawNav();
  replace(who, h('span', { 'data-testid': 'handle' }, context.me.handle), ' ', h('button', { type: 'button', onclick: () => signOut() }, 'Sign out'));
  replace(main, nav, once, content);
  await context.refresh();
}

/** Forgets the key and shows the sign-in page. */
function signOut(message?: string): void {
  forgetKey();
  notify('');
  showSignIn(message);
}

/** Starts the console: reads what the gateway offers, trades a sign-in code when the fragment carries one, then opens the session's key. */
async function start(): Promise<void> {
  const fragment = takeLoginFragment();
  let shownOnce: NewKey | undefined;
  try {
    features ??= await createHolonClient({ baseUrl: location.origin }).readFeatures();
    if (fragment && 'login' in fragment) {
      const traded = await createHolonClient({ baseUrl: location.origin }).exchangeLoginCode(fragment.login);
      storeKey(traded.human_key.key);
      shownOnce = traded.agent_key;
    }
    if (fragment && 'login_error' in fragment) return showSignIn(LOGIN_ERRORS[fragment.login_error] ?? `Sign-in failed (${fragment.login_error}).`);
    const key = storedKey();
    if (!key) return showSignIn();
    await showConsole(key, 'overview', features, shownOnce);
  } catch (error) {
    if (error instanceof HolonError && error.status === 401) return signOut('That key is unknown, revoked or expired: sign in again.');
    forgetKey();
    showSignIn(`Signing in failed: ${describeError(error)}`);
  }
}

void start();
