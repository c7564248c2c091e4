/**
 * The `holon` command line (commander). Servers print their URL and stop cleanly on SIGINT or
 * SIGTERM; client commands talk to a running gateway through the generated `/v0` client and
 * print JSON.
 */
import { readFile } from 'node:fs/promises';
import { Command } from 'commander';
import { createClient } from '../generated/gateway/client/client/index.ts';
import * as gatewayApi from '../generated/gateway/client/sdk.gen.ts';
import { targetFromEnv } from './db/index.ts';
import { startClearingServer } from './clearing/server.ts';
import { startGateway } from './gateway/server.ts';
import { backup, openStores, restore, type Store } from './hosted/backup.ts';
import { startHostedGateway } from './hosted/server.ts';

/** Waits for SIGINT or SIGTERM, then runs `close` once and exits. */
function closeOnSignal(close: () => Promise<void>): void {
  let closing = false;
  const stop = async (signal: string) => {
    if (closing) return;
    closing = true;
    process.stderr.write(`${signal}: shutting down\n`);
    await close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}

/** Runs a server's start; a failure (a locked data directory, a port in use) is one line on stderr and exit code 1, not a stack trace. */
async function starting<T>(what: string, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    process.stderr.write(`holon: could not start ${what}: ${(error as Error).message}\n`);
    process.exit(1);
  }
}

/** Prints a client answer as JSON; a non-2xx answer also sets exit code 1. */
function print(result: { data?: unknown; error?: unknown; response?: Response }): void {
  const body = result.data ?? result.error;
  process.stdout.write(`${JSON.stringify(body, null, 2)}\n`);
  const approval = (body as { approval?: { id?: string } } | undefined)?.approval?.id;
  if (result.response?.status === 202 && approval) {
    process.stderr.write(`held for approval ${approval}: POST /v0/approvals/${approval} with {} to run it, or {"decision":"reject"}\n`);
  }
  if (!result.response || result.response.status >= 300) process.exitCode = 1;
}

/** Parses `--input`: JSON text. Exits 2 with a clear message otherwise. */
function parseInput(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    process.stderr.write(`--input must be JSON: ${(error as Error).message}\n`);
    process.exit(2);
  }
}

/** Sets `input[field]` to the text of each `field=path` file. Exits 2 when a file cannot be read or the input is not an object. */
async function withFiles(input: unknown, files: string[]): Promise<unknown> {
  if (files.length === 0) return input;
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    process.stderr.write('--file needs --input to be a JSON object\n');
    process.exit(2);
  }
  const result = { ...(input as Record<string, unknown>) };
  for (const spec of files) {
    const at = spec.indexOf('=');
    if (at < 1) {
      process.stderr.write(`--file ${spec}: write it as field=path\n`);
      process.exit(2);
    }
    try {
      result[spec.slice(0, at)] = await readFile(spec.slice(at + 1), 'utf8');
    } catch (error) {
      process.stderr.write(`--file ${spec}: ${(error as Error).message}\n`);
      process.exit(2);
    }
  }
  return result;
}

const program = new Command('holon').description('Holon: the gateway for calls between AI agents, and its clearing seam');
const gatewayOption = ['--gateway <url>', 'the gateway', process.env.HOLON_GATEWAY_URL ?? 'http://127.0.0.1:4000'] as const;

program
  .command('serve')
  .description('run the dev gateway with the embedded database, the reference clearing binding and the example agents')
  .option('--port <port>', 'TCP port', '4000')
  .option('--db <dir>', 'data directory (PGlite; ignored when DATABASE_URL is set)', '.holon')
  .option('--clearing-url <url>', 'use this clearing binding instead of the reference one')
  .option('--hosted', 'run the hosted gateway (gateway §7): accounts, keys, principals; PORT and HOST from the environment when set')
  .action(async (opts: { port: string; db: string; clearingUrl?: string; hosted?: boolean }) => {
    const running = await starting('the gateway', () =>
      opts.hosted
        ? startHostedGateway({ port: Number(process.env.PORT ?? opts.port), host: process.env.HOST, db: opts.db })
        : startGateway({ port: Number(opts.port), db: opts.db, clearing_url: opts.clearingUrl }),
    );
    process.stdout.write(`holon gateway listening on ${running.url} (clearing: ${running.clearing_url}${running.agents_url ? `, agents: ${running.agents_url}` : ''})\n`);
    closeOnSignal(running.close);
  });

program
  .command('call [agent]')
  .description('call an agent (ns/name[@range]) or a capability through the gateway')
  .option('--capability <class>', 'call the best implementer of a capability instead of a named agent')
  .option('--mandate <id>', 'the mandate to call under', 'dev/sandbox')
  .option('--input <json>', 'the input, as JSON', '{}')
  .option('--file <field=path...>', "put a text file's content into a field of the input, e.g. --file csv=people.csv")
  .option('--max-cost <amount>', "a ceiling in the mandate's currency, e.g. 0.20")
  .option(...gatewayOption)
  .action(async (agent: string | undefined, opts: { capability?: string; mandate: string; input: string; file?: string[]; maxCost?: string; gateway: string }) => {
    if ((agent === undefined) === (opts.capability === undefined)) {
      process.stderr.write('name exactly one of an agent and --capability\n');
      process.exit(2);
    }
    const client = createClient({ baseUrl: opts.gateway });
    const body = {
      mandate: opts.mandate,
      input: await withFiles(parseInput(opts.input), opts.file ?? []),
      ...(agent === undefined ? { capability: opts.capability } : { agent }),
      ...(opts.maxCost === undefined ? {} : { max_cost: opts.maxCost }),
    };
    print(await gatewayApi.call({ client, body }));
  });

program
  .command('receipts [id]')
  .description('receipt trees, newest first, or one receipt tree')
  .option('--mandate <id>', 'only under this mandate')
  .option(...gatewayOption)
  .action(async (id: string | undefined, opts: { mandate?: string; gateway: string }) => {
    const client = createClient({ baseUrl: opts.gateway });
    print(id ? await gatewayApi.readReceipt({ client, path: { id } }) : await gatewayApi.listReceipts({ client, query: { mandate: opts.mandate } }));
  });

/**
 * Runs `work` on the stores of `--db` (or `DATABASE_URL`) and prints the line it answers; a
 * refusal (a non-empty database, a file that exists) is one line on stderr and exit code 1.
 */
async function onStores(command: string, db: string, work: (stores: Store[]) => Promise<string>): Promise<void> {
  const { stores, close } = await starting('the database', () => openStores(db));
  try {
    process.stdout.write(`${await work(stores)}\n`);
  } catch (error) {
    process.stderr.write(`holon ${command}: ${(error as Error).message}\n`);
    process.exitCode = 1;
  } finally {
    await close();
  }
}

const dbOption = ['--db <dir>', 'data directory (PGlite; ignored when DATABASE_URL is set)', '.holon'] as const;

program
  .command('backup')
  .description('copy every row of the gateway and the reference binding to a JSON lines file (gateway §7 "Backups"); on PGlite, stop the gateway first')
  .requiredOption('--out <file>', 'the file to write (must not exist)')
  .option(...dbOption)
  .action((opts: { out: string; db: string }) => onStores('backup', opts.db, async (stores) => `backed up ${await backup(stores, opts.out)} rows to ${opts.out}`));

program
  .command('restore')
  .description('load a backup into an empty database, in one transaction, counters included (gateway §7 "Backups")')
  .requiredOption('--in <file>', 'the backup file')
  .option(...dbOption)
  .action((opts: { in: string; db: string }) => onStores('restore', opts.db, async (stores) => `restored ${await restore(stores, opts.in)} rows from ${opts.in}`));

const clearing = program.command('clearing').description('the clearing seam');
clearing
  .command('serve')
  .description('run the reference clearing binding on 127.0.0.1')
  .option('--port <port>', 'TCP port', '4100')
  .option('--db <dir>', 'PGlite data directory (ignored when DATABASE_URL is set)', '.holon/clearing')
  .action(async (opts: { port: string; db: string }) => {
    const running = await starting('the clearing binding', () => startClearingServer({ target: targetFromEnv(opts.db), port: Number(opts.port) }));
    process.stdout.write(`holon clearing binding listening on ${running.url}\n`);
    closeOnSignal(running.close);
  });

await program.parseAsync(process.argv);
