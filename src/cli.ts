/**
 * The `holon` command line. `holon clearing serve` runs the reference binding (issue: clearing
 * seam). Each subcommand prints what it started and shuts down cleanly on SIGINT/SIGTERM.
 */
import { Command } from 'commander';
import { targetFromEnv } from './db/index.ts';
import { startClearingServer } from './clearing/server.ts';

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

const program = new Command('holon').description('Holon: the gateway for calls between AI agents, and its clearing seam');

const clearing = program.command('clearing').description('the clearing seam');
clearing
  .command('serve')
  .description('run the reference clearing binding on 127.0.0.1')
  .option('--port <port>', 'TCP port', '4100')
  .option('--db <dir>', 'PGlite data directory (ignored when DATABASE_URL is set)', '.holon/clearing')
  .action(async (opts: { port: string; db: string }) => {
    const running = await startClearingServer({ target: targetFromEnv(opts.db), port: Number(opts.port) });
    process.stdout.write(`holon clearing binding listening on ${running.url}\n`);
    closeOnSignal(running.close);
  });

await program.parseAsync(process.argv);
