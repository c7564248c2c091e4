/**
 * The `holon` command line (commander). Servers print their URL, log one line per request at
 * `HOLON_LOG_LEVEL` (default info) and stop cleanly on SIGINT or SIGTERM; a server that cannot
 * start (a port in use, a locked data directory, a bad `DATABASE_URL`) says so in one line on
 * stderr and exits 1. Bad usage of any command (an unknown command or option, a missing
 * argument) exits 2, the client commands' `EXIT.usage`. The client commands live in
 * `./cli/client-commands.ts`; the servers' modules are imported only by the command that runs
 * them, so a client command starts quickly.
 */
import type { AddressInfo } from 'node:net';
import { Command } from 'commander';
import type { Logger } from 'pino';
import packageJson from '../package.json' with { type: 'json' };
import { addClientCommands, EXIT } from './cli/client-commands.ts';
import { requestLogger } from './observe/log-context.ts';
import { envNumber } from './config/env.ts';
import { assertAgentsPortFree, assertPortFree, httpUrl } from './cli/preflight.ts';
import type { RunningGateway } from './serve/gateway.ts';
import type { Store } from './backup/backup.ts';

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

/**
 * Runs a server's start after its checks (the port, unless null, is free; `DATABASE_URL` is a PostgreSQL URL);
 * any failure is one line on stderr and exit code 1, not a stack trace.
 */
async function starting<T>(what: string, port: number | null, start: () => Promise<T>): Promise<T> {
  const { checkDatabaseUrl, redactedUrl } = await import('./db/index.ts');
  const url = process.env.DATABASE_URL;
  try {
    if (url) checkDatabaseUrl(url);
    if (port !== null) await assertPortFree(port);
    return await start();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    // A driver or network code (ECONNREFUSED, ENOTFOUND, 28P01 ...) while DATABASE_URL is set comes
    // from that server, and so does finding no host of it that accepts writes (db/primary.ts).
    const { DatabaseUnavailable } = await import('./db/unavailable.ts');
    const fromDatabase = url && ((typeof code === 'string' && code !== 'EADDRINUSE') || error instanceof DatabaseUnavailable);
    const message = (error as Error).message.split('\n')[0];
    process.stderr.write(`holon: could not start ${what}: ${fromDatabase ? `DATABASE_URL ${redactedUrl(url)}: ${message}` : message}\n`);
    process.exit(1);
  }
}

/**
 * The servers' logger: JSON lines on stdout at `HOLON_LOG_LEVEL` (default `info`); an unknown level exits 2 naming the levels.
 * pino is imported here, so the client commands start without it.
 */
async function serverLogger(): Promise<Logger> {
  const { default: pino } = await import('pino');
  const level = process.env.HOLON_LOG_LEVEL ?? 'info';
  const levels = Object.keys(pino.levels.values).concat('silent');
  if (!levels.includes(level)) {
    process.stderr.write(`holon: HOLON_LOG_LEVEL=${level} is not a level: use one of ${levels.join(', ')}\n`);
    process.exit(2);
  }
  return requestLogger({ level });
}

/** A port option's value (`--port`, `--agents-port`): a whole number from 0 to 65535; exits 2 otherwise. */
function portOf(text: string, option = '--port'): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    process.stderr.write(`holon: ${option} ${text}: give a whole number from 0 to 65535\n`);
    process.exit(2);
  }
  return port;
}

/**
 * The hosted gateway's port: `PORT` when set (platforms such as a container host name it), a
 * whole number from 0 to 65535, else `--port`. A `PORT` out of range is a start-up refusal: one
 * line naming it, exit 1.
 */
function hostedPortOf(option: string): number {
  try {
    return envNumber(process.env, { name: 'PORT', what: 'the port the hosted gateway listens on', default: portOf(option), min: 0, max: 65_535, integer: true });
  } catch (error) {
    process.stderr.write(`holon: could not start the gateway: ${(error as Error).message}\n`);
    process.exit(1);
  }
}

/** A URL option's value (`--clearing-url`): an absolute http(s) URL without a trailing slash; exits 2 otherwise, naming the URL to write. */
function urlOf(text: string, option: string): string {
  try {
    return httpUrl(text, option);
  } catch (error) {
    process.stderr.write(`holon: ${(error as Error).message}\n`);
    process.exit(EXIT.usage);
  }
}

/**
 * The line a gateway prints once it listens: where it listens, and a URL that reaches it from this
 * machine. On one address the two are the same URL; on every interface (`0.0.0.0`, `::`, as the
 * hosted image runs) the address and port come first, then `http://127.0.0.1:PORT`. Then its
 * clearing binding, its agents host when it started one, and its API reference.
 */
function listeningLine(running: RunningGateway): string {
  const { address, port } = running.server.address() as AddressInfo;
  const everywhere = address === '0.0.0.0' || address === '::';
  const where = everywhere ? `${address.includes(':') ? `[${address}]` : address}:${port}, every interface (from this machine: ${running.url}; ` : `${running.url} (`;
  return `holon gateway listening on ${where}clearing: ${running.clearing_url}${running.agents_url ? `, agents: ${running.agents_url}` : ''}; reference: ${running.url}/docs)`;
}

/**
 * The `holon` program: every command and option, as commander declares them. Exported so the docs'
 * test can check each command a page shows against it; `bin.mjs` parses the command line with it.
 */
export const program = new Command('holon').description('Holon: the gateway for calls between AI agents, and its clearing seam').version(packageJson.version, '-V, --version', 'print the version');
// Bad usage (an unknown command or option, a missing argument, no command) exits 2 as docs/callers.md's
// exit codes say, not commander's 1; `--help` and `--version` keep 0. Set before any command is
// added: each command copies it from its parent.
program.exitOverride((error) => process.exit(error.exitCode === 0 ? EXIT.ok : EXIT.usage));

program
  .command('serve')
  .description('run the dev gateway with the embedded database, the reference clearing binding and the example agents')
  .option('--port <port>', 'TCP port', '4000')
  .option('--db <dir>', 'data directory (PGlite; ignored when DATABASE_URL is set)', '.holon')
  .option('--clearing-url <url>', 'settle with this clearing binding (over HTTP) instead of the reference one in this process; with --hosted too')
  .option('--host <address>', 'the address to listen on; off loopback, peers of the network are served', '127.0.0.1')
  .option('--allowed-hosts <names>', 'comma-separated public names (host[:port] or URL) the gateway also answers to (default: HOLON_ALLOWED_HOSTS)')
  .option('--agents-port <port>', 'the port of agents/host.mjs, which the shipped MCP agents follow (default: HOLON_AGENTS_PORT, else 4300 when free, else a free one)')
  .option('--metrics-port <port>', 'also answer GET /metrics alone, with no key, on this port (loopback only unless --metrics-host)')
  .option('--metrics-host <address>', 'the address of the --metrics-port listener', '127.0.0.1')
  .option('--hosted', 'run the hosted gateway (gateway §7): accounts, keys, principals; PORT and HOST from the environment when set')
  .action(async (opts: { port: string; db: string; clearingUrl?: string; host: string; allowedHosts?: string; agentsPort?: string; metricsPort?: string; metricsHost: string; hosted?: boolean }) => {
    const port = opts.hosted ? hostedPortOf(opts.port) : portOf(opts.port);
    const host = opts.hosted ? (process.env.HOST ?? opts.host) : opts.host;
    const option_port = opts.agentsPort === undefined ? undefined : portOf(opts.agentsPort, '--agents-port');
    const clearing_url = opts.clearingUrl === undefined ? undefined : urlOf(opts.clearingUrl, '--clearing-url');
    const metrics = { metrics_port: opts.metricsPort === undefined ? undefined : portOf(opts.metricsPort, '--metrics-port'), metrics_host: opts.metricsHost };
    const allowed_hosts = opts.allowedHosts?.split(',').map((name) => name.trim()).filter(Boolean);
    const running = await starting('the gateway', port, async () => {
      const logger = await serverLogger();
      const { agentsPortFromEnv } = await import('./agents-host/port.ts');
      // An agents port someone asked for is checked like --port; with none, the gateway takes 4300 when free, else a free one.
      const agents_host_port = option_port ?? agentsPortFromEnv() ?? undefined;
      if (agents_host_port !== undefined) await assertAgentsPortFree(agents_host_port, option_port === undefined ? 'HOLON_AGENTS_PORT' : '--agents-port');
      if (opts.hosted) {
        const { startHostedGateway } = await import('./serve/hosted.ts');
        return startHostedGateway({ port, host, db: opts.db, clearing_url, allowed_hosts, agents_host_port, logger, ...metrics });
      }
      const { startDevGateway } = await import('./serve/dev.ts');
      return startDevGateway({ port, db: opts.db, clearing_url, host, allowed_hosts, agents_host_port, logger, ...metrics });
    });
    process.stdout.write(`${listeningLine(running)}\n`);
    closeOnSignal(running.close);
  });

addClientCommands(program);

/**
 * Runs `check` (the command's file, before any database is opened or created), then `work` on the
 * stores of `--db` (or `DATABASE_URL`), and prints the line `work` answers. A refusal (a file that
 * exists, is missing or is no backup; a non-empty database) is one line on stderr and exit code 1,
 * with the stores closed (their locks released).
 */
async function onStores(command: string, db: string, check: () => Promise<unknown>, work: (stores: Store[]) => Promise<string>): Promise<void> {
  const refuse = (error: unknown) => {
    process.stderr.write(`holon ${command}: ${(error as Error).message.split('\n')[0]}\n`);
    process.exitCode = 1;
  };
  try {
    await check();
  } catch (error) {
    return refuse(error);
  }
  const { openStores } = await import('./backup/backup.ts');
  const { stores, close } = await starting('the database', null, () => openStores(db));
  try {
    process.stdout.write(`${await work(stores)}\n`);
  } catch (error) {
    refuse(error);
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
  .action(async (opts: { out: string; db: string }) => {
    const { backup, checkBackupOut } = await import('./backup/backup.ts');
    await onStores('backup', opts.db, () => checkBackupOut(opts.out), async (stores) => `backed up ${await backup(stores, opts.out)} rows to ${opts.out}`);
  });

program
  .command('restore')
  .description('load a backup into an empty database, in one transaction, counters included (gateway §7 "Backups")')
  .requiredOption('--in <file>', 'the backup file')
  .option(...dbOption)
  .action(async (opts: { in: string; db: string }) => {
    const { checkBackupIn, restore } = await import('./backup/backup.ts');
    await onStores('restore', opts.db, () => checkBackupIn(opts.in), async (stores) => `restored ${await restore(stores, opts.in)} rows from ${opts.in}`);
  });

/** Runs a `holon verify` check: its line on stdout, or the refusal on stderr and exit 1. */
async function verifying(check: () => Promise<string>): Promise<void> {
  const { VerifyRefused } = await import('./signing/sources.ts');
  const { VerificationError } = await import('../clients/src/verify.ts');
  try {
    process.stdout.write(`${await check()}\n`);
  } catch (error) {
    if (!(error instanceof VerifyRefused || error instanceof VerificationError)) throw error;
    process.stderr.write(`holon verify: ${error.message}\n`);
    process.exit(EXIT.refused);
  }
}

const verify = program.command('verify').description('check a mandate or a receipt tree a gateway signed, offline, with its JWKS (issue 23)');
verify
  .command('mandate <file>')
  .description('a signed mandate: a compact JWS, or the saved answer of GET /v0/mandates/{issuer}/{name}')
  .requiredOption('--jwks <url|file>', "the gateway's keys: its /.well-known/jwks.json URL, or a saved copy")
  .option('--parent <file>', 'the parent mandate: also check the child is no wider (gateway §3)')
  .action(async (file: string, opts: { jwks: string; parent?: string }) => {
    const { verifyMandateFiles } = await import('./cli/verify.ts');
    await verifying(() => verifyMandateFiles(file, opts));
  });
verify
  .command('receipt <file>')
  .description('a signed receipt tree: the saved answer of GET /v0/receipts/{id}')
  .requiredOption('--jwks <url|file>', "the gateway's keys: its /.well-known/jwks.json URL, or a saved copy")
  .action(async (file: string, opts: { jwks: string }) => {
    const { verifyReceiptFile } = await import('./cli/verify.ts');
    await verifying(() => verifyReceiptFile(file, opts));
  });

program
  .command('rotate-signing-key')
  .description('retire the key that signs mandates and receipts and make a new one (issue 23 §1); needs HOLON_FILE_SECRET; restart every gateway process after')
  .option(...dbOption)
  .action(async (opts: { db: string }) => {
    const secret = process.env.HOLON_FILE_SECRET;
    const check = async () => {
      if (!secret || secret.length < 32) throw new Error('HOLON_FILE_SECRET (32 or more characters) must be set: the key is stored sealed under it');
    };
    await onStores('rotate-signing-key', opts.db, check, async (stores) => {
      const { rotateKey, SIGNING_KEY_RETAIN_DAYS } = await import('./signing/keys.ts');
      const gateway = stores.find((store) => store.owns('gateway_signing_keys'))!;
      const days = envNumber(process.env, SIGNING_KEY_RETAIN_DAYS);
      const { retired, active } = await rotateKey(gateway.knex, secret!, days);
      return `signing key ${active} is active${retired ? `; ${retired} retired, listed for at least ${days} days` : ''}`;
    });
  });

program
  .command('audit')
  .description('check the books (issue 23 §3): the journal\'s hash chain, zero-sum entries, balances, one settlement per billed receipt, and that a checkpoint is a prefix; prints the first entry that fails and exits 1')
  .option('--in <file>', 'a backup file (holon backup) instead of the live database')
  .option(...dbOption)
  .option('--checkpoint <file>', 'a checkpoint kept earlier (the JSON of GET /v0/journal/checkpoint or GET /internal/ledger/checkpoint): the journal must extend it')
  .option('--jwks <url|file>', 'the keys that verify the checkpoint\'s signature (required with --checkpoint): the gateway\'s /.well-known/jwks.json URL, or a saved copy')
  .action(async (opts: { in?: string; db: string; checkpoint?: string; jwks?: string }) => {
    const { runAudit } = await import('./backup/audit-command.ts');
    const { line, ok } = await runAudit(opts);
    process.stdout.write(`${line}\n`);
    if (!ok) process.exitCode = 1;
  });

const clearing = program.command('clearing').description('the clearing seam');
clearing
  .command('serve')
  .description('run the reference clearing binding on 127.0.0.1, or behind mutual TLS (issue 23 §4)')
  .option('--port <port>', 'TCP port', '4100')
  // Not `.holon/clearing`: that is where a running `holon serve` keeps its own binding's data.
  .option('--db <dir>', 'PGlite data directory (ignored when DATABASE_URL is set)', '.holon/binding')
  .option('--host <address>', 'the address to listen on; other than 127.0.0.1 only with mutual TLS (HOLON_CLEARING_TLS_CERT, _KEY, _CA)', '127.0.0.1')
  .action(async (opts: { port: string; db: string; host: string }) => {
    const port = portOf(opts.port);
    const running = await starting('the clearing binding', port, async () => {
      const [{ targetFromEnv }, { startClearingServer }, { mutualTlsFromEnv }] = await Promise.all([import('./db/index.ts'), import('./clearing/server.ts'), import('./clearing/tls.ts')]);
      // Its checkpoints are signed by its own keys, stored in its database sealed under HOLON_FILE_SECRET (issue 23 §3).
      return startClearingServer({ target: targetFromEnv(opts.db), port, host: opts.host, tls: mutualTlsFromEnv(), file_secret: process.env.HOLON_FILE_SECRET || null, logger: await serverLogger() });
    });
    process.stdout.write(`holon clearing binding listening on ${running.url}\n`);
    closeOnSignal(running.close);
  });

