/**
 * Which shipped agents are listed (gateway §7 "Operating", `HOLON_EXCLUDE` and
 * `HOLON_SEC_CONTACT`): one rule for the gateway, which lists them (`src/serve/gateway.ts`),
 * and for `agents/host.mjs`, which serves them, so that an agent is listed exactly when it is
 * served.
 *
 * - `HOLON_EXCLUDE` (comma-separated agent ids) leaves agents out; unset, {@link DEFAULT_EXCLUDE}:
 *   `holon-labs/summarize` spends the operator's Anthropic credits, `holon-labs/sec-company` is
 *   paused until it has an SEC contact. `HOLON_EXCLUDE=` (empty) leaves nothing out.
 * - `holon-labs/sec-company` is listed only when `HOLON_SEC_CONTACT` is an email address too: the
 *   SEC's fair access policy asks for a contact in the User-Agent of every request.
 *   In production the hosted gateway refuses to start instead (`src/hosted/settings.ts`,
 *   {@link secContactProblem}).
 *
 * Plain JavaScript because `agents/host.mjs` runs on plain Node; types in `shipped-agents.d.mts`.
 */

/** The agent of SEC EDGAR company facts (`agents/sec-company`). */
export const SEC_COMPANY = 'holon-labs/sec-company';

/** The agent ids left out when `HOLON_EXCLUDE` is unset. */
export const DEFAULT_EXCLUDE = Object.freeze(['holon-labs/summarize', SEC_COMPANY]);

/** The longest contact accepted, in characters (an email address is at most 254). */
const MAX_CONTACT_CHARS = 254;

/** An email address: something@host.tld, no spaces, nothing a header or a mail parser would split on. */
const EMAIL_PATTERN = /^[^\s@<>()[\],;:"]+@[^\s@<>()[\],;:"]+\.[^\s@<>()[\],;:"]+$/;

/**
 * The agent ids `HOLON_EXCLUDE` names (comma-separated, trimmed, empty entries dropped), or
 * {@link DEFAULT_EXCLUDE} when it is unset.
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {string[]}
 */
export function excludedAgents(env = process.env) {
  const text = env.HOLON_EXCLUDE;
  if (text === undefined) return [...DEFAULT_EXCLUDE];
  return text.split(',').map((id) => id.trim()).filter(Boolean);
}

/**
 * `HOLON_SEC_CONTACT`, trimmed, when it is an email address of at most 254 characters; else null.
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {string | null}
 */
export function secContact(env = process.env) {
  const contact = (env.HOLON_SEC_CONTACT ?? '').trim();
  return contact.length <= MAX_CONTACT_CHARS && EMAIL_PATTERN.test(contact) ? contact : null;
}

/**
 * The agent ids not to list or serve: `exclude`, plus {@link SEC_COMPANY} while
 * `HOLON_SEC_CONTACT` holds no email address.
 * @param {readonly string[]} exclude the ids left out on purpose (`HOLON_EXCLUDE` or an option)
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {string[]}
 */
export function leftOut(exclude, env = process.env) {
  return secContact(env) === null && !exclude.includes(SEC_COMPANY) ? [...exclude, SEC_COMPANY] : [...exclude];
}

/**
 * Why production must not start (gateway §7 "Operating"): {@link SEC_COMPANY} is not in
 * `HOLON_EXCLUDE` but `HOLON_SEC_CONTACT` is missing or not an email address. Null when all is well
 * (the agent is excluded, or has its contact).
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {string | null}
 */
export function secContactProblem(env = process.env) {
  if (excludedAgents(env).includes(SEC_COMPANY) || secContact(env) !== null) return null;
  const what = (env.HOLON_SEC_CONTACT ?? '').trim() === '' ? 'is required' : 'must be an email address';
  return `HOLON_SEC_CONTACT ${what} while ${SEC_COMPANY} is listed (HOLON_EXCLUDE leaves it in): set an email the SEC can reach, or add ${SEC_COMPANY} to HOLON_EXCLUDE`;
}
