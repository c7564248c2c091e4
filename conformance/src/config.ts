/**
 * The kit's configuration: where the binding is and which fixtures it already holds.
 * `parseConfig` is the only place a config is validated; everything downstream trusts its result.
 */
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';

/** How the binding restricts its callers (§3). `loopback`: the kit checks the X-Forwarded-For gate. */
export type Access = 'loopback' | 'other';

/** A validated configuration. Field meanings are those of the config file (see README). */
export interface ConformanceConfig {
  /** Base URL of the binding, without a trailing slash. */
  readonly url: string;
  /** Headers sent on every request (e.g. the binding's own authentication, §3). */
  readonly headers: Readonly<Record<string, string>>;
  readonly access: Access;
  readonly fixtures: {
    /** An agent key the binding resolves to `accounts.payer` (§6.1). */
    readonly agent_key: string;
    /** An agent key the binding resolves to null (§6.1). */
    readonly unknown_agent_key: string;
    readonly accounts: { readonly payer: string; readonly payee: string };
    /**
     * Units already available in the payer's account, relied upon when the binding offers
     * neither credit nor adjust; 0 otherwise.
     */
    readonly prefunded: number;
  };
  /** Per-request timeout in milliseconds (default 10 000). */
  readonly timeout_ms: number;
}

/** The config is unusable; the CLI exits 2 with this message. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Reads and validates a config file: YAML when its name ends in `.yaml` or `.yml` (comments
 * allowed; `holon-conformance init` writes one), JSON otherwise. Throws ConfigError naming the
 * first problem.
 */
export async function loadConfig(path: string): Promise<ConformanceConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read config ${path}: ${(error as Error).message}`);
  }
  const format = /\.ya?ml$/i.test(path) ? 'YAML' : 'JSON';
  let parsed: unknown;
  try {
    parsed = format === 'YAML' ? parseYaml(text) : JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`config ${path} is not ${format}: ${(error as Error).message}`);
  }
  return parseConfig(parsed);
}

/**
 * Validates a config object (the parsed file) and fills defaults: `headers` {}, `access`
 * loopback, `prefunded` 0, `timeout_ms` 10 000. Throws ConfigError naming the first problem.
 */
export function parseConfig(input: unknown): ConformanceConfig {
  const root = object(input, 'config');
  const url = string(root.url, 'url');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError(`url must be an absolute http(s) URL, got ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(`url must be http or https, got ${parsed.protocol}`);
  }
  const headers = root.headers === undefined ? {} : object(root.headers, 'headers');
  for (const [name, value] of Object.entries(headers)) string(value, `headers.${name}`);
  const access = root.access ?? 'loopback';
  if (access !== 'loopback' && access !== 'other') {
    throw new ConfigError(`access must be "loopback" or "other", got ${JSON.stringify(access)}`);
  }
  const fixtures = object(root.fixtures, 'fixtures');
  const accounts = object(fixtures.accounts, 'fixtures.accounts');
  const payer = string(accounts.payer, 'fixtures.accounts.payer');
  const payee = string(accounts.payee, 'fixtures.accounts.payee');
  if (payer === payee) throw new ConfigError('fixtures.accounts.payer and payee must differ');
  const agent_key = string(fixtures.agent_key, 'fixtures.agent_key');
  const unknown_agent_key = string(fixtures.unknown_agent_key, 'fixtures.unknown_agent_key');
  if (agent_key === unknown_agent_key) {
    throw new ConfigError('fixtures.agent_key and unknown_agent_key must differ');
  }
  const prefunded = fixtures.prefunded ?? 0;
  if (!Number.isSafeInteger(prefunded) || (prefunded as number) < 0) {
    throw new ConfigError(`fixtures.prefunded must be a non-negative integer, got ${JSON.stringify(prefunded)}`);
  }
  const timeout_ms = root.timeout_ms ?? 10_000;
  if (!Number.isSafeInteger(timeout_ms) || (timeout_ms as number) < 100) {
    throw new ConfigError(`timeout_ms must be an integer of at least 100, got ${JSON.stringify(timeout_ms)}`);
  }
  return {
    url: url.replace(/\/+$/, ''),
    headers: headers as Record<string, string>,
    access,
    fixtures: {
      agent_key,
      unknown_agent_key,
      accounts: { payer, payee },
      prefunded: prefunded as number,
    },
    timeout_ms: timeout_ms as number,
  };
}

function object(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigError(`${where} must be an object`);
  }
  return value as Record<string, unknown>;
}

function string(value: unknown, where: string): string {
  if (typeof value !== 'string' || value === '') {
    throw new ConfigError(`${where} must be a non-empty string`);
  }
  return value;
}
