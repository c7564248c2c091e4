/**
 * The hosted gateway's settings, read once from the environment (gateway §7 "Operating"; every
 * variable is in the README's table). With `NODE_ENV=production` the gateway refuses to start
 * without the settings a public deployment needs, naming each missing one; a setting that only
 * disables a feature (GitHub sign-in) never stops it.
 */
import { envNumbers } from '../config/env.ts';
import { parseMoney, type Micros } from '../contracts/money.ts';
import { secContactProblem } from '../gateway/shipped-agents.mjs';
import { privateEndpointsAllowed } from './egress.ts';
import { MAX_FILE_BYTES, MAX_LIVE_FILE_BYTES, type FileBounds } from './files.ts';
import { RATE_LIMIT_VARIABLES, type RateLimits } from './limits.ts';

/** The hosted settings. Money in EUR micro-units. */
export interface HostedSettings {
  production: boolean;
  /** The operator key (`HOLON_ADMIN_KEY`), or null: no admin principal. */
  admin_key: string | null;
  /** `HOLON_SIGNUP_CREDIT`, default 5.00 EUR. */
  signup_credit_micros: Micros;
  /** `HOLON_PUBLIC_URL`: the public origin, e.g. `https://holon.example`. */
  public_url: string | null;
  /** `HOLON_SITE_URL`: the public site: the console links its `/terms` and `/privacy` pages, and it is the one origin the demo answers CORS for; null: neither. */
  site_url: string | null;
  /** `HOLON_TRUST_PROXY=1`: the client address is the last one the proxy appended to `X-Forwarded-For`. */
  trust_proxy: boolean;
  /** GitHub sign-in, when `HOLON_GITHUB_CLIENT_ID` and `_SECRET` are both set. */
  github: { client_id: string; client_secret: string; web_url: string; api_url: string } | null;
  /** Exchange rates set by the platform on hosted mandates (`HOLON_FX`, JSON `{"USD": "0.92"}`). */
  fx: Record<string, string>;
  /** `HOLON_RATE_ADDRESS`, `_ACCOUNT`, `_ADMIN`, `_SIGNUP`: each a whole number from 1 to 1,000,000 ({@link RATE_LIMIT_VARIABLES}). */
  rate_limits: RateLimits;
  /**
   * `HOLON_FILE_SECRET`: signs file links and seals endpoint credentials. Required in production;
   * elsewhere, when unset, endpoint credentials are off (503) and file links are signed with a
   * random key per process (they then stop working at a restart).
   */
  file_secret: string | null;
  /** `HOLON_ALLOW_PRIVATE_ENDPOINTS=1` outside production: published endpoints may be http and private (local development). */
  allow_private_endpoints: boolean;
  /** Upload bounds in bytes: 20 MiB per file, 200 MiB live per account (gateway §7 "Files"). */
  file_bounds: FileBounds;
  /** `HOLON_RECORDS=1`: the catalogue shows measured records (off by default: sample records are not measurements). */
  records: boolean;
}

/** What production refuses to start without, and why. */
const REQUIRED_IN_PRODUCTION: ReadonlyArray<[string, (value: string) => string | null]> = [
  ['DATABASE_URL', () => null],
  ['HOLON_PUBLIC_URL', (v) => (v.startsWith('https://') ? null : 'must be an https origin')],
  ['HOLON_FILE_SECRET', (v) => (v.length >= 32 ? null : 'must be 32 or more characters')],
  ['HOLON_ADMIN_KEY', (v) => (v.length >= 32 ? null : 'must be 32 or more characters')],
  ['HOLON_TRUST_PROXY', (v) => (v === '0' || v === '1' ? null : 'must be 1 (behind a proxy) or 0 (exposed directly)')],
  ['HOLON_SITE_URL', (v) => (v.startsWith('https://') ? null : 'must be an https origin')],
];

/** Default platform rates into EUR. */
const DEFAULT_FX = { USD: '0.92', GBP: '1.17' };

/**
 * Reads the settings from `env`. Throws an Error naming every problem at once: in production a
 * missing or malformed required variable, `HOLON_ALLOW_PRIVATE_ENDPOINTS=1`, or
 * `holon-labs/sec-company` left in `HOLON_EXCLUDE` without `HOLON_SEC_CONTACT`; anywhere, a
 * malformed `HOLON_SIGNUP_CREDIT` or `HOLON_FX`, or a rate limit outside its range ({@link RATE_LIMIT_VARIABLES}: 1 to 1,000,000).
 */
export function readSettings(env: NodeJS.ProcessEnv = process.env): HostedSettings {
  const production = env.NODE_ENV === 'production';
  const problems: string[] = [];
  if (production) {
    for (const [name, check] of REQUIRED_IN_PRODUCTION) {
      const value = env[name];
      if (value === undefined || value === '') problems.push(`${name} is required in production`);
      else {
        const wrong = check(value);
        if (wrong) problems.push(`${name} ${wrong}`);
      }
    }
    if (env.HOLON_ALLOW_PRIVATE_ENDPOINTS === '1') problems.push('HOLON_ALLOW_PRIVATE_ENDPOINTS=1 is refused in production: it is for local development only');
    // Outside production sec-company is simply not listed without its contact (`shipped-agents.mjs`).
    const sec = secContactProblem(env);
    if (sec) problems.push(sec);
  }
  let signup_credit_micros = 5_000_000;
  try {
    if (env.HOLON_SIGNUP_CREDIT) signup_credit_micros = parseMoney(env.HOLON_SIGNUP_CREDIT, 'HOLON_SIGNUP_CREDIT');
    if (signup_credit_micros < 0) problems.push('HOLON_SIGNUP_CREDIT must not be negative');
  } catch (error) {
    problems.push((error as Error).message);
  }
  let fx: Record<string, string> = DEFAULT_FX;
  if (env.HOLON_FX) {
    try {
      fx = JSON.parse(env.HOLON_FX);
    } catch {
      problems.push('HOLON_FX must be a JSON object of rates, e.g. {"USD": "0.92"}');
    }
  }
  const rate_limits: RateLimits = envNumbers(env, RATE_LIMIT_VARIABLES, problems);
  if (env.HOLON_RECORDS !== undefined && !['', '0', '1'].includes(env.HOLON_RECORDS)) problems.push('HOLON_RECORDS must be 1 (show measured records) or 0');
  if (env.HOLON_SITE_URL && !URL.canParse(env.HOLON_SITE_URL)) problems.push('HOLON_SITE_URL must be an origin such as https://holon.example');
  if (problems.length > 0) throw new Error(`refusing to start: ${problems.join('; ')}`);
  const admin_key = env.HOLON_ADMIN_KEY || null;
  const { HOLON_GITHUB_CLIENT_ID: id, HOLON_GITHUB_CLIENT_SECRET: secret } = env;
  return {
    production,
    admin_key,
    signup_credit_micros,
    public_url: env.HOLON_PUBLIC_URL || null,
    site_url: env.HOLON_SITE_URL || null,
    trust_proxy: env.HOLON_TRUST_PROXY === '1',
    github: id && secret
      ? { client_id: id, client_secret: secret, web_url: env.HOLON_GITHUB_URL ?? 'https://github.com', api_url: env.HOLON_GITHUB_API_URL ?? 'https://api.github.com' }
      : null,
    fx,
    rate_limits,
    file_secret: env.HOLON_FILE_SECRET || null,
    allow_private_endpoints: privateEndpointsAllowed(env),
    file_bounds: { max_file_bytes: MAX_FILE_BYTES, max_live_bytes: MAX_LIVE_FILE_BYTES },
    records: env.HOLON_RECORDS === '1',
  };
}
