/**
 * The author section (issue 11 "For authors", gateway §6 and §7 "Publishing agents",
 * "Earnings"): from `GET /v0/me/agents`, what the account's versions earned (the total, and a
 * chart of the last 30 days), then each agent it published with its endpoint credential (set or
 * not, set with `PUT …/credential`, removed with `DELETE …/credential`) and its versions, each
 * with its evaluations (public cases in detail, hidden ones as pass/fail, as the gateway answers
 * them) and what it earned; then "Connect a webhook" (`connect-webhook.ts`). Credentials and
 * "Connect a webhook" are shown only when the gateway offers them (`GET /v0/features`: endpoint
 * credentials need `HOLON_FILE_SECRET`, publishing a GitHub app); otherwise one line says why.
 */
import type { MyAgentVersion } from '../../../../clients/src/index.ts';
import type { CaseResult, EvaluationView } from '../../evaluation.ts';
import { connectWebhook } from './connect-webhook.ts';
import { describeError, featuresOff, type ConsoleContext } from './context.ts';
import { facts, h, type Child } from './dom.ts';
import { earningsChart } from './earnings-chart.ts';

/** `ns/name` of `ns/name@x.y.z`. */
function agentIdOf(agent: string): string {
  return agent.slice(0, agent.lastIndexOf('@'));
}

/** A value as indented JSON, for a public case's input, expectation and answer. */
function json(value: unknown): HTMLElement {
  return h('pre', {}, JSON.stringify(value, null, 2) ?? 'nothing');
}

/** One case: its name and pass/fail; a public case's input, expectation and answer folded under it. */
function caseItem(result: CaseResult): HTMLElement {
  const verdict = h('span', { class: `status status-${result.pass ? 'succeeded' : 'failed'}` }, result.pass ? 'pass' : 'fail');
  if (result.input === undefined) return h('li', { 'data-case': result.name }, verdict, ' ', result.name, ' (hidden case)');
  return h(
    'li',
    { 'data-case': result.name },
    h('details', {}, h('summary', {}, verdict, ' ', result.name), h('p', {}, 'Input'), json(result.input), h('p', {}, 'Expected'), json(result.expect), h('p', {}, 'Answered'), json(result.got)),
  );
}

/** One evaluation: capability, suite, status and score, then its cases. */
function evaluationItem(evaluation: EvaluationView): HTMLElement {
  return h(
    'li',
    { 'data-evaluation': evaluation.capability },
    h('strong', {}, evaluation.capability),
    ` (${evaluation.suite} suite): `,
    h('span', { 'data-testid': 'evaluation-score' }, evaluation.status === 'done' ? `${evaluation.passed} of ${evaluation.total} passed` : evaluation.status),
    evaluation.error ? h('p', { class: 'hint' }, evaluation.error) : null,
    h('ul', { class: 'cases' }, ...evaluation.cases.map(caseItem)),
  );
}

/** One version: when it was published, whether it is listed, what it earned, its evaluations. */
function versionItem(version: MyAgentVersion, currency: string): HTMLElement {
  const evaluations = version.evaluations as unknown as EvaluationView[];
  const state = version.yanked_at ? `yanked by ${version.yanked_by}${version.yank_reason ? `: ${version.yank_reason}` : ''}` : version.listed ? 'listed' : 'not listed';
  return h(
    'li',
    { class: 'receipt', 'data-version': version.agent },
    h('h4', {}, version.agent),
    facts([
      ['Published', new Date(version.published_at).toLocaleString()],
      ['State', state],
      ['License', version.proprietary ? 'proprietary (no code checked)' : version.license],
      ['Earned', h('span', { 'data-testid': 'earned' }, `${version.earned.total} ${currency} from ${version.earned.calls} paid ${version.earned.calls === 1 ? 'call' : 'calls'} (share ${version.earned.share}, royalties ${version.earned.royalties})`)],
    ]),
    evaluations.length === 0 ? h('p', { class: 'hint' }, 'No evaluation: no suite for the capabilities it claims.') : h('ul', { class: 'evaluations', 'aria-label': `Evaluations of ${version.agent}` }, ...evaluations.map(evaluationItem)),
  );
}

/** The form setting the endpoint credential of `agent` (`ns/name`); `field` names its input uniquely; `before` are fields shown first. */
function credentialForm(context: ConsoleContext, agent: () => string, field: string, label: string, ...before: Child[]): HTMLFormElement {
  const token = h('input', { id: field, type: 'password', name: 'token', required: true, autocomplete: 'off', spellcheck: 'false', maxlength: '4096' });
  const form = h('form', { class: 'inline-form' }, ...before, h('div', { class: 'field' }, h('label', { for: field }, label), token), h('button', { type: 'submit' }, 'Set credential'));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const status = await context.holon.setCredential(agent(), token.value);
      token.value = '';
      await context.refresh();
      context.notify(`The endpoint credential of ${status.agent} is set: it is sent to its endpoint on every call.`);
    } catch (error) {
      context.notify(`Setting the credential of ${agent()} was refused: ${describeError(error)}`, 'error');
    }
  });
  return form;
}

/** One agent (`ns/name`): its credential status and controls (when credentials are on), then its versions, newest first. */
function agentCard(context: ConsoleContext, id: string, versions: MyAgentVersion[], currency: string): HTMLElement {
  const credentials = context.features.credentials.on;
  const set = versions[0].credential_set;
  const remove = async () => {
    try {
      await context.holon.deleteCredential(id);
      await context.refresh();
      context.notify(`The endpoint credential of ${id} is removed: no Authorization header is sent from now on.`);
    } catch (error) {
      context.notify(`Removing the credential of ${id} was refused: ${describeError(error)}`, 'error');
    }
  };
  const slug = id.replace(/[^a-z0-9]/g, '-');
  return h(
    'li',
    { class: 'card', 'data-agent': id },
    h('h3', {}, id),
    credentials && h('p', {}, 'Endpoint credential: ', h('strong', { 'data-testid': 'credential' }, set ? 'set' : 'not set')),
    credentials && credentialForm(context, () => id, `credential-${slug}`, `${set ? 'Replace' : 'Set'} the endpoint credential of ${id}`),
    credentials && set ? h('div', { class: 'actions' }, h('button', { type: 'button', class: 'danger', 'aria-label': `Remove the endpoint credential of ${id}`, onclick: remove }, 'Remove credential')) : null,
    h('ul', { class: 'cards' }, ...versions.map((version) => versionItem(version, currency))),
  );
}

/** Renders the author section into a fresh element. */
export async function authorsView(context: ConsoleContext): Promise<HTMLElement> {
  const mine = await context.holon.myAgents();
  const byAgent = new Map<string, MyAgentVersion[]>();
  for (const version of mine.versions) {
    const id = agentIdOf(version.agent);
    byAgent.set(id, [...(byAgent.get(id) ?? []), version]);
  }
  const handle = context.me.handle;
  const { credentials, publishing } = context.features;
  const newName = h('input', { id: 'credential-name', type: 'text', name: 'name', required: true, autocomplete: 'off', spellcheck: 'false', maxlength: '64' });
  return h(
    'div',
    {},
    featuresOff(context.features, ['publishing', 'credentials']),
    h(
      'section',
      { 'aria-labelledby': 'earnings-title' },
      h('h2', { id: 'earnings-title' }, 'Earnings'),
      h('p', { class: 'balance', 'data-testid': 'earned-total' }, `${mine.total} ${mine.currency}`),
      h('p', { class: 'hint' }, 'Your share of each paid call and the royalties from forks, as the journal holds them; the last 30 days by day (UTC):'),
      earningsChart(mine.by_day, mine.currency),
    ),
    h(
      'section',
      { 'aria-labelledby': 'agents-title' },
      h('h2', { id: 'agents-title' }, 'Published agents'),
      byAgent.size === 0 ? h('p', {}, publishing.on ? 'You have published nothing yet: connect a webhook below.' : 'You have published nothing yet.') : h('ul', { class: 'cards' }, ...[...byAgent].map(([id, versions]) => agentCard(context, id, versions, mine.currency))),
    ),
    credentials.on &&
      h(
        'section',
        { 'aria-labelledby': 'new-credential-title' },
        h('h2', { id: 'new-credential-title' }, 'Credential for a new agent'),
        h('p', { class: 'hint' }, `Set the token your server requires before publishing: it is sent as Authorization: Bearer to ${handle}/<name>'s endpoint, drafts included, and never shown again.`),
        credentialForm(context, () => `${handle}/${newName.value.trim()}`, 'credential-new', 'Endpoint credential', h('div', { class: 'field' }, h('label', { for: 'credential-name' }, `Agent name (${handle}/…)`), newName)),
      ),
    publishing.on && connectWebhook(context),
  );
}
