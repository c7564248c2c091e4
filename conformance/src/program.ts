/**
 * The kit's command line as a declaration: `holon-conformance [--config FILE] [--only IDS]
 * [--json FILE] [--junit FILE]` and `holon-conformance init [FILE] [--force]`, with their help
 * text. What each command does is handed in (`cli.ts` runs the kit), so the docs' test can read
 * every command and option without running anything.
 */
import { Command } from 'commander';
import pkg from '../package.json' with { type: 'json' };
import { CONTRACT_VERSION } from './contract.ts';
import { DEFAULT_CONFIG_FILE } from './init.ts';

/** The TLS flags of both commands: PEM files, relative to the working directory, replacing the config's `tls` fields. */
export interface TlsFlags {
  readonly cert?: string;
  readonly key?: string;
  readonly ca?: string;
}

/** Options of a run, as commander hands them over. */
export interface RunFlags extends TlsFlags {
  readonly config?: string;
  readonly only?: string;
  readonly json?: string;
  readonly junit?: string;
}

/** Options of `holon-conformance explore`, as commander hands them over (strings until validated). */
export interface ExploreFlags extends TlsFlags {
  readonly config?: string;
  readonly seed?: string;
  readonly budget: string;
  readonly shrinkBudget: string;
  readonly concurrency: string;
  readonly faults?: string;
  readonly faultRate?: string;
  readonly maxRequests?: string;
  readonly json?: string;
  readonly junit?: string;
}

/** What the commands do: `run` for the kit itself, `init` for `holon-conformance init [file]`, `explore` for explore mode. */
export interface KitActions {
  readonly run: (flags: RunFlags) => Promise<void>;
  readonly explore: (flags: ExploreFlags) => Promise<void>;
  readonly init: (file: string, flags: { force?: boolean }) => Promise<void>;
}

/** Adds `--cert`, `--key` and `--ca` to `command`: the credentials of a binding behind mutual TLS (issue 23 §4). */
function tlsOptions(command: Command): Command {
  return command
    .option('--cert <file>', 'the client certificate (PEM) a binding behind mutual TLS asks for, with --key; replaces tls.cert of the config; e.g. --cert kit.crt')
    .option('--key <file>', 'the private key (PEM) of --cert; replaces tls.key of the config; e.g. --key kit.key')
    .option('--ca <file>', 'the CA (PEM) that signed the binding\'s certificate, when not one Node trusts; replaces tls.ca of the config; e.g. --ca binding-ca.crt');
}

const EXAMPLES = `
Examples:
  $ holon-conformance init                      write ${DEFAULT_CONFIG_FILE}, every field commented
  $ holon-conformance --config ${DEFAULT_CONFIG_FILE}
  $ holon-conformance --config conf.json --json report.json --junit report.xml
  $ holon-conformance --config conf.json --only idempotency,draw.*,settle.moves-value
  $ holon-conformance --config conf.json --cert kit.crt --key kit.key --ca binding-ca.crt   a binding behind mutual TLS
  $ holon-conformance explore --config conf.json --budget 5m --faults lost-answers,duplicates,delays,resets

Exit status:
  0  every MUST check passed (a failed SHOULD is reported, not fatal)
  1  a MUST check failed
  2  the command line or the config is invalid, --only selects nothing, a fixture account is
     missing, the binding cannot be reached, or what answers is not a clearing binding`;

/** The `holon-conformance` program (commander, errors thrown rather than exiting), its commands running `actions`. */
export function kitProgram(actions: KitActions): Command {
  const program = new Command()
    .name('holon-conformance')
    // The run's options belong to the run: `explore --config F` hands --config to explore.
    .enablePositionalOptions()
    .description(`Certifies a clearing binding against the Holon clearing contract (clearing-contract version ${CONTRACT_VERSION}).`)
    .version(pkg.version)
    .exitOverride()
    .option('--config <file>', `the config, YAML (.yaml, .yml) or JSON: url, access, headers, tls, fixtures; e.g. --config ${DEFAULT_CONFIG_FILE}`)
    .option('--only <ids>', 'run only these checks: comma-separated ids, section names or prefix* patterns; e.g. --only idempotency,draw.*,settle.moves-value')
    .option('--json <file>', 'also write the results as JSON; e.g. --json report.json')
    .option('--junit <file>', 'also write the results as JUnit XML, one test case per check; e.g. --junit report.xml');
  tlsOptions(program)
    .addHelpText('after', EXAMPLES)
    .action(actions.run);
  program.command('init')
    .description(`write a config to start from, every field commented; e.g. holon-conformance init ${DEFAULT_CONFIG_FILE}`)
    .argument('[file]', 'where to write it', DEFAULT_CONFIG_FILE)
    .option('--force', 'overwrite the file if it exists; e.g. holon-conformance init --force')
    .action(actions.init);
  const explore = program.command('explore')
    .description('generate concurrent histories of contract operations, check every answer and the figures after every step against a model of the contract, and shrink a failure to the shortest history; e.g. holon-conformance explore --config conf.yaml --budget 60s --faults lost-answers,duplicates,delays,resets')
    .option('--config <file>', `the same config as a scripted run; e.g. --config ${DEFAULT_CONFIG_FILE}`)
    .option('--seed <n>', 'replay a run: the same seed generates the same histories and fault schedule; e.g. --seed 42 (random and printed when absent)')
    .option('--budget <duration>', 'how long to search, e.g. --budget 60s or --budget 5m', '60s')
    .option('--shrink-budget <duration>', 'how long to shrink a failure once found, e.g. --shrink-budget 2m', '60s')
    .option('--concurrency <n>', 'most requests in flight together, 1 to 16; e.g. --concurrency 8', '8')
    .option('--faults <kinds>', 'put the kit\'s fault proxy in front of the binding: lost-answers, duplicates, delays, resets; e.g. --faults lost-answers,duplicates')
    .option('--fault-rate <percent>', 'chance in percent, 1 to 50, that a request meets each fault named (default 8); e.g. --fault-rate 20')
    .option('--max-requests <n>', 'stop searching after this many requests; e.g. --max-requests 100000', '500000')
    .option('--json <file>', 'also write the results as JSON; e.g. --json explore.json')
    .option('--junit <file>', 'also write the results as JUnit XML, one test case per property; e.g. --junit explore.xml');
  tlsOptions(explore).action(actions.explore);
  return program;
}
