/**
 * `holon-conformance init`: writes a starting config, every field commented, in YAML (the one
 * config format with comments that CI users already write; JSON configs stay accepted).
 */
import { writeFile } from 'node:fs/promises';
import { ConfigError } from './config.ts';

/** The file `init` writes when no name is given. */
export const DEFAULT_CONFIG_FILE = 'holon-conformance.yaml';

/**
 * The commented config `init` writes. Its values are the README's example fixtures, so it runs
 * as written against a reference binding set up as the README shows.
 */
export const CONFIG_TEMPLATE = `# holon-conformance config: where your clearing binding is and which fixtures it already holds.
# Run the kit with:  npx holon-conformance --config ${DEFAULT_CONFIG_FILE}
# Every field is explained in the README of holon-conformance ("Write the config").

# Base URL of your binding, http or https. The kit first reads GET <url>/internal/clearing/capabilities.
url: http://127.0.0.1:4100

# How your binding restricts its callers (clearing-contract §3):
#   loopback  it answers only local, unproxied callers; the kit checks that a request carrying
#             X-Forwarded-For is refused 403 not_permitted while /healthz still answers
#   other     it restricts callers some other way; the gate checks are skipped
access: loopback

# Headers sent on every request, e.g. the authentication of a binding that is not co-located (§3):
#   headers:
#     authorization: Bearer <token>
headers: {}

# TLS to an https:// binding: PEM files, paths relative to this file (--cert, --key and --ca
# replace them). A binding behind mutual TLS asks for a client certificate its CA signed; it runs
# no loopback gate, so set access: other.
#   tls:
#     cert: kit.crt          # the kit's client certificate, with its key
#     key: kit.key
#     ca: binding-ca.crt     # the CA that signed the binding's certificate, when Node does not trust it

# Per-request timeout in milliseconds (at least 100).
timeout_ms: 10000

# Accounts and agent keys your binding must hold before the run.
fixtures:
  accounts:
    # The account the kit pays from, holds against and funds.
    payer: conf-payer
    # A second account: the earning side of every settlement and draw. Must differ from payer.
    payee: conf-payee
  # An agent key your binding resolves to accounts.payer (§6.1 resolve-account).
  agent_key: conf-agent
  # An agent key your binding resolves to nobody (account null).
  unknown_agent_key: conf-nobody
  # Only for a binding that offers neither credit nor adjust: the units you put in the payer's
  # account yourself before the run (at least a few thousand units of limits.min_amount). Else 0.
  prefunded: 0
`;

/**
 * Writes CONFIG_TEMPLATE to `path`. Refuses (ConfigError) to overwrite an existing file unless
 * `force` is set, so a config someone edited is never lost to a second `init`.
 */
export async function writeConfigTemplate(path: string, force = false): Promise<void> {
  try {
    await writeFile(path, CONFIG_TEMPLATE, { flag: force ? 'w' : 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new ConfigError(`${path} already exists; edit it, or pass --force to overwrite it`);
    throw new ConfigError(`cannot write ${path}: ${(error as Error).message}`);
  }
}
