/**
 * The client commands of `holon` (gateway §5 through `@holon/client`): `call`, `receipts`,
 * `agents`, `accounts`, `mandate`, `approvals`, and for authors on a hosted gateway (gateway §7)
 * `publish` and `earnings`. Each prints the gateway's JSON answer on stdout
 * and exits with one of `EXIT`: a refusal prints its `{error, code, receipt}` body; a gateway
 * that cannot be reached, or a URL without a scheme, is one line on stderr saying what to do.
 */
import { readFile } from 'node:fs/promises';
import { Option, type Command } from 'commander';
import { createHolonClient, HolonError, HolonUnreachable, type HolonClient } from '../../clients/src/index.ts';
import { httpUrl } from './preflight.ts';
import type { Manifest } from '../../clients/src/index.ts';

/** Exit codes of the client commands (docs/callers.md, "Exit codes of the client commands"). */
export const EXIT = {
  ok: 0,
  /** The gateway refused: a non-2xx answer, its body printed. */
  refused: 1,
  /**
   * Bad usage: an option's value, `--input` that is not JSON, a URL without a scheme; and, for
   * every command (commander's, through the program's `exitOverride` in `cli.ts`), an unknown
   * command or option, a missing argument or required option, no command at all.
   */
  usage: 2,
  /** The call is held for a human's approval (202), and `--wait` was not given or ran out. */
  held: 3,
  /** No gateway answered at the URL. */
  unreachable: 4,
} as const;

/** The longest `holon call --wait` waits for a decision: one day, in seconds. */
export const MAX_WAIT_S = 86_400;

/** How long `holon call --wait` waits when given no number: 10 minutes, in seconds. */
export const DEFAULT_WAIT_S = 600;

/** Thrown to end a command with `code` after `line` on stderr. */
class Exit extends Error {
  constructor(
    readonly code: number,
    line: string,
  ) {
    super(line);
  }
}

/** Prints `body` as indented JSON on stdout. */
function print(body: unknown): void {
  process.stdout.write(`${JSON.stringify(body, null, 2)}\n`);
}

/** The `--gateway` option: its value, else `HOLON_GATEWAY_URL`, else the dev gateway. */
function gatewayOption(): Option {
  return new Option('--gateway <url>', 'the gateway').env('HOLON_GATEWAY_URL').default('http://127.0.0.1:4000');
}

/** What the network said, briefly: `ECONNREFUSED` rather than "fetch failed". */
function networkReason(error: HolonUnreachable): string {
  const cause = error.cause as { message?: string; cause?: { code?: string; message?: string } } | undefined;
  return cause?.cause?.code ?? cause?.cause?.message ?? cause?.message ?? 'no answer';
}

/**
 * Runs a client command's `body` against the gateway of `opts.gateway`, then exits: 0 unless
 * `body` returns another code; a `HolonError` prints its body (exit 1); no answer is one line
 * naming the URL and what to do (exit 4).
 */
async function withGateway(opts: { gateway: string }, body: (holon: HolonClient) => Promise<number | void>): Promise<never> {
  let code: number;
  try {
    let url: string;
    try {
      url = httpUrl(opts.gateway, '--gateway');
    } catch (error) {
      throw new Exit(EXIT.usage, (error as Error).message);
    }
    code = (await body(createHolonClient({ baseUrl: url, key: process.env.HOLON_API_KEY }))) ?? EXIT.ok;
  } catch (error) {
    if (error instanceof Exit) {
      process.stderr.write(`holon: ${error.message}\n`);
      code = error.code;
    } else if (error instanceof HolonError) {
      print(error.body);
      code = EXIT.refused;
    } else if (error instanceof HolonUnreachable) {
      process.stderr.write(
        `holon: no gateway answers at ${error.url} (${networkReason(error)}): start one with \`npx holon serve\`, or pass --gateway URL (or set HOLON_GATEWAY_URL) for a gateway that runs elsewhere\n`,
      );
      code = EXIT.unreachable;
    } else {
      throw error;
    }
  }
  process.exit(code);
}

/** Parses `--input`: JSON text. */
function parseInput(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Exit(EXIT.usage, `--input must be JSON: ${(error as Error).message}`);
  }
}

/** Sets `input[field]` to the text of each `field=path` file. */
async function withFiles(input: unknown, files: string[]): Promise<unknown> {
  if (files.length === 0) return input;
  if (input === null || typeof input !== 'object' || Array.isArray(input)) throw new Exit(EXIT.usage, '--file needs --input to be a JSON object');
  const result = { ...(input as Record<string, unknown>) };
  for (const spec of files) {
    const at = spec.indexOf('=');
    if (at < 1) throw new Exit(EXIT.usage, `--file ${spec}: write it as field=path`);
    try {
      result[spec.slice(0, at)] = await readFile(spec.slice(at + 1), 'utf8');
    } catch (error) {
      throw new Exit(EXIT.usage, `--file ${spec}: ${(error as Error).message}`);
    }
  }
  return result;
}

/** `--wait [seconds]` as a number of seconds: `true` is the default wait; bounded by `MAX_WAIT_S`. */
function waitSeconds(wait: string | true): number {
  if (wait === true) return DEFAULT_WAIT_S;
  const seconds = Number(wait);
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > MAX_WAIT_S) throw new Exit(EXIT.usage, `--wait ${wait}: give a whole number of seconds from 1 to ${MAX_WAIT_S}`);
  return seconds;
}

/**
 * Waits up to `seconds` for approval `id` to be decided, printing the approved call's answer:
 * exit 0 for its output, 1 for a refusal, a rejection or an expiry, 3 when time runs out.
 */
async function waitForDecision(holon: HolonClient, id: string, seconds: number): Promise<number> {
  process.stderr.write(`holon: waiting up to ${seconds} s for a decision: \`npx holon approvals approve ${id}\` (or reject) in another terminal\n`);
  const deadline_ms = Date.now() + seconds * 1000;
  for (;;) {
    const remaining_s = Math.ceil((deadline_ms - Date.now()) / 1000);
    const state = await holon.readApproval(id, { wait_s: Math.max(0, Math.min(60, remaining_s)) });
    const result = state.result;
    if (state.approval.status === 'approved' && result) {
      print(result);
      return 'output' in result ? EXIT.ok : EXIT.refused;
    }
    if (state.approval.status === 'approved') {
      // Decided where the answer is not kept (over MCP, or long ago): the receipt says how it ended.
      const receipt = await holon.readReceipt(state.approval.receipt);
      print({ approval: state.approval, receipt });
      process.stderr.write(`holon: approval ${id} was approved and ran, but its output went to its approver; the receipt is above\n`);
      return receipt.status === 'succeeded' ? EXIT.ok : EXIT.refused;
    }
    if (state.approval.status !== 'pending') {
      print(state);
      return EXIT.refused;
    }
    if (remaining_s <= 0) {
      process.stderr.write(`holon: approval ${id} is still pending after ${seconds} s\n`);
      return EXIT.held;
    }
  }
}

/** Reads and parses the manifest file `file` (YAML 1.2, duplicate keys refused); bad usage when unreadable or not YAML. */
async function readManifestFile(file: string): Promise<Manifest> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new Exit(EXIT.usage, `${file}: ${(error as Error).message}`);
  }
  // Imported here, not at the top: the YAML parser is only `publish`'s, and every other command starts without it.
  const { parseYamlDocument } = await import('../contracts/yaml-document.ts');
  try {
    return parseYamlDocument(text, 'invalid_manifest', file) as Manifest;
  } catch (error) {
    throw new Exit(EXIT.usage, (error as Error).message);
  }
}

/** The most `holon credential set` reads from stdin, in bytes (a token is at most 4096 characters). */
export const MAX_TOKEN_INPUT_BYTES = 8192;

/** Reads the token from stdin: everything up to the end, one trailing line break dropped; bounded by {@link MAX_TOKEN_INPUT_BYTES}. */
async function tokenFromStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('holon: type the token, then Enter and Ctrl-D\n');
  let text = '';
  for await (const chunk of process.stdin) {
    text += chunk;
    if (Buffer.byteLength(text) > MAX_TOKEN_INPUT_BYTES) throw new Exit(EXIT.usage, `the token on stdin is longer than ${MAX_TOKEN_INPUT_BYTES} bytes`);
  }
  const token = text.replace(/\r?\n$/, '');
  if (token === '') throw new Exit(EXIT.usage, 'give the token on stdin, e.g. `printenv MY_TOKEN | holon credential set ns/name`');
  return token;
}

/** Adds the client commands to `program`. */
export function addClientCommands(program: Command): void {
  program
    .command('call [agent]')
    .description('call an agent (ns/name[@range]) or a capability through the gateway')
    .option('--capability <class>', 'call the best implementer of a capability instead of a named agent')
    .option('--mandate <id>', 'the mandate to call under', 'dev/sandbox')
    .option('--input <json>', 'the input, as JSON', '{}')
    .option('--file <field=path...>', "put a text file's content into a field of the input, e.g. --file csv=people.csv")
    .option('--max-cost <amount>', "a ceiling in the mandate's currency, e.g. 0.20")
    .option('--wait [seconds]', `when the call is held for approval, wait for the decision and print the output (default ${DEFAULT_WAIT_S} s, at most ${MAX_WAIT_S})`)
    .addOption(gatewayOption())
    .action((agent: string | undefined, opts: { capability?: string; mandate: string; input: string; file?: string[]; maxCost?: string; wait?: string | true; gateway: string }) =>
      withGateway(opts, async (holon) => {
        if ((agent === undefined) === (opts.capability === undefined)) throw new Exit(EXIT.usage, 'name exactly one of an agent and --capability');
        const wait_s = opts.wait === undefined ? null : waitSeconds(opts.wait);
        const answer = await holon.call({
          mandate: opts.mandate,
          input: await withFiles(parseInput(opts.input), opts.file ?? []),
          ...(agent === undefined ? { capability: opts.capability } : { agent }),
          ...(opts.maxCost === undefined ? {} : { max_cost: opts.maxCost }),
        });
        print(answer);
        if (!('approval' in answer)) return EXIT.ok;
        const id = answer.approval.id;
        if (wait_s === null) {
          process.stderr.write(`holon: held for approval ${id} (${answer.approval.reason}): \`npx holon approvals approve ${id}\` runs it, \`... reject ${id}\` refuses it; \`holon call --wait\` waits for it\n`);
          return EXIT.held;
        }
        return waitForDecision(holon, id, wait_s);
      }),
    );

  program
    .command('receipts [id]')
    .description('receipt trees, newest first, or one receipt tree')
    .option('--mandate <id>', 'only under this mandate')
    .option('--limit <n>', 'how many receipt trees (1 to 500)', '50')
    .addOption(gatewayOption())
    .action((id: string | undefined, opts: { mandate?: string; limit: string; gateway: string }) =>
      withGateway(opts, async (holon) => {
        if (id) return print(await holon.readReceipt(id));
        const limit = Number(opts.limit);
        if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new Exit(EXIT.usage, `--limit ${opts.limit}: give a whole number from 1 to 500`);
        print(await holon.listReceipts({ mandate: opts.mandate, limit }));
      }),
    );

  program
    .command('agents [words...]')
    .description('the agents listed on the gateway, matching words, a capability, or what a mandate allows')
    .option('--capability <class>', 'only implementers of this capability')
    .option('--mandate <id>', 'price and admit against this mandate')
    .addOption(gatewayOption())
    .action((words: string[], opts: { capability?: string; mandate?: string; gateway: string }) =>
      withGateway(opts, async (holon) => {
        print(await holon.searchAgents({ ...(words.length ? { q: words.join(' ') } : {}), capability: opts.capability, mandate: opts.mandate }));
      }),
    );

  program
    .command('accounts')
    .description('balances of the payers and authors the gateway knows')
    .addOption(gatewayOption())
    .action((opts: { gateway: string }) => withGateway(opts, async (holon) => print(await holon.listAccounts())));

  program
    .command('mandate <id>')
    .description('a mandate and its budget: total, spent, reserved, remaining')
    .addOption(gatewayOption())
    .action((id: string, opts: { gateway: string }) =>
      withGateway(opts, async (holon) => {
        if (!/^[^/]+\/[^/]+$/.test(id)) throw new Exit(EXIT.usage, `mandate ${id}: write it issuer/name, e.g. dev/sandbox`);
        print(await holon.readMandate(id));
      }),
    );

  program
    .command('publish <file>')
    .description('publish the agent version a holon.yaml describes, on a hosted gateway (HOLON_API_KEY: your human key)')
    .addOption(gatewayOption())
    .action((file: string, opts: { gateway: string }) => withGateway(opts, async (holon) => print(await holon.publishAgent(await readManifestFile(file)))));

  program
    .command('earnings')
    .description('your published versions, their evaluations and what each earned, on a hosted gateway (HOLON_API_KEY: your human key)')
    .addOption(gatewayOption())
    .action((opts: { gateway: string }) => withGateway(opts, async (holon) => print(await holon.myAgents())));

  program
    .command('credential <action> <agent>')
    .description('hosted, human key: `credential set ns/name` reads the token your endpoint requires from stdin (never an argument: it would stay in the shell history); `credential delete ns/name` removes it')
    .addOption(gatewayOption())
    .action((action: string, agent: string, opts: { gateway: string }) =>
      withGateway(opts, async (holon) => {
        if (!/^[^/]+\/[^/]+$/.test(agent)) throw new Exit(EXIT.usage, `agent ${agent}: write it ns/name, e.g. alice/invoices`);
        if (action === 'set') return print(await holon.setCredential(agent, await tokenFromStdin()));
        if (action === 'delete') return print(await holon.deleteCredential(agent));
        throw new Exit(EXIT.usage, 'write `holon credential set ns/name` (the token on stdin) or `holon credential delete ns/name`');
      }),
    );

  program
    .command('approvals [decision] [id]')
    .description('the pending approvals; `approvals approve ID` runs a held call and prints its output, `approvals reject ID` refuses it')
    .addOption(gatewayOption())
    .action((decision: string | undefined, id: string | undefined, opts: { gateway: string }) =>
      withGateway(opts, async (holon) => {
        if (decision === undefined) return print(await holon.listApprovals());
        if ((decision !== 'approve' && decision !== 'reject') || !id) throw new Exit(EXIT.usage, 'write `holon approvals`, `holon approvals approve ID` or `holon approvals reject ID`');
        const answer = await holon.decideApproval(id, decision);
        print(answer);
      }),
    );
}
