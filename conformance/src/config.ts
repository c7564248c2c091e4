/**
 * The kit's configuration: where the binding is and which fixtures it already holds.
 * `parseConfig` is the only place a config is validated; everything downstream trusts its result.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';

/** How the binding restricts its callers (§3). `loopback`: the kit checks the X-Forwarded-For gate. */
export type Access = 'loopback' | 'other';

/**
 * The kit's side of TLS to an `https://` binding (issue 23 §4), PEM text: `cert` and `key`, the
 * client certificate a binding behind mutual TLS asks for (both or neither); `ca`, the CA that
 * signed the binding's certificate (absent: Node's trusted CAs).
 */
export interface ClientTls {
  readonly cert?: string;
  readonly key?: string;
  readonly ca?: string;
}

/** Where the {@link ClientTls} PEM files are, by field: in a config file relative to it, as flags (`--cert`, `--key`, `--ca`) relative to the working directory; absolute once parsed. */
export type TlsFiles = Readonly<Partial<Record<keyof ClientTls, string>>>;

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
  /** The TLS credentials of an `https://` binding: absolute paths of PEM files, each checked readable and of its kind ({@link readClientTls}); null: none. */
  readonly tls: TlsFiles | null;
}

/** The config is unusable; the CLI exits 2 with this message. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Reads and validates a config file: YAML when its name ends in `.yaml` or `.yml` (comments
 * allowed; `holon-conformance init` writes one), JSON otherwise. The `tls` paths are relative to
 * the file; `tlsFlags` (`--cert`, `--key`, `--ca`, relative to the working directory) replace
 * those fields. Throws ConfigError naming the first problem.
 */
export async function loadConfig(path: string, tlsFlags: TlsFiles = {}): Promise<ConformanceConfig> {
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
  const flags = Object.fromEntries(Object.entries(tlsFlags).filter(([, file]) => file !== undefined).map(([field, file]) => [field, resolve(file as string)]));
  if (Object.keys(flags).length > 0 && typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
    const root = parsed as Record<string, unknown>;
    const tls = typeof root.tls === 'object' && root.tls !== null ? root.tls : {};
    parsed = { ...root, tls: { ...tls, ...flags } };
  }
  return parseConfig(parsed, dirname(resolve(path)));
}

/**
 * Validates a config object (the parsed file) and fills defaults: `headers` {}, `access`
 * loopback, `prefunded` 0, `timeout_ms` 10 000, `tls` null; reads the `tls` files, relative to
 * `base` (default: the working directory). Throws ConfigError naming the first problem.
 */
export function parseConfig(input: unknown, base: string = process.cwd()): ConformanceConfig {
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
  const tls = root.tls === undefined || root.tls === null ? null : tlsFiles(object(root.tls, 'tls'), base);
  if (tls !== null && parsed.protocol !== 'https:') {
    throw new ConfigError(`tls is set but url ${url} is plain http: certificates are used only over TLS; give the binding's https:// URL`);
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
    tls,
  };
}

/** The `tls` field's files made absolute (relative to `base`) and checked: `cert` and `key` both or neither, `ca` alone allowed, no other field, each file readable and of its kind. */
function tlsFiles(fields: Record<string, unknown>, base: string): TlsFiles {
  const unknown = Object.keys(fields).find((field) => !['cert', 'key', 'ca'].includes(field));
  if (unknown !== undefined) throw new ConfigError(`tls.${unknown} is not a field of tls: give cert, key and ca (PEM file paths)`);
  if ((fields.cert === undefined) !== (fields.key === undefined)) throw new ConfigError('tls.cert and tls.key go together: the client certificate and its private key (--cert and --key)');
  if (Object.keys(fields).length === 0) throw new ConfigError('tls must name cert and key, or ca, or all three (PEM file paths)');
  const files = Object.fromEntries(Object.entries(fields).map(([field, file]) => [field, resolve(base, string(file, `tls.${field}`))]));
  readClientTls(files);
  return files;
}

/**
 * Reads the PEM files of `files`; throws ConfigError naming the field and the file when one
 * cannot be read or does not hold what its field says (a certificate, a private key), so a wrong
 * file is named before the run rather than as a failed handshake.
 */
export function readClientTls(files: TlsFiles): ClientTls {
  const tls: Record<string, string> = {};
  for (const [field, file] of Object.entries(files)) {
    if (file === undefined) continue;
    let pem: string;
    try {
      pem = readFileSync(file, 'utf8');
    } catch (error) {
      throw new ConfigError(`tls.${field}: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
    try {
      if (field === 'key') createPrivateKey(pem);
      else new X509Certificate(pem);
    } catch {
      throw new ConfigError(`tls.${field}: ${file} is not a PEM ${field === 'key' ? 'private key' : 'certificate'}`);
    }
    tls[field] = pem;
  }
  return tls;
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
