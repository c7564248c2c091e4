/**
 * A test gateway in a process of its own, so a test can `kill -9` it (gateway §7 "Restarts").
 * Run as `node --import tsx tests/helpers/gateway-child.ts '<DevGatewayOptions as JSON>'`:
 * it starts `startDevGateway` with those options (logger silent) and prints one line, `listening
 * <url>`, once it serves, and closes gracefully on SIGTERM. {@link spawnGateway} does that and
 * resolves with the URL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { startDevGateway, type DevGatewayOptions } from '../../src/serve/dev.ts';

/** A gateway child process and its URL. */
export interface GatewayChild {
  url: string;
  process: ChildProcess;
  /** `kill -9`; resolves once the process is gone. */
  kill(): Promise<void>;
  /** SIGTERM: the gateway closes (its lease ended, its database lock released); resolves once the process is gone. */
  stop(): Promise<void>;
}

/** Spawns a gateway child with `options` (JSON-serializable) and `env` added to the environment; rejects if it exits before it listens. */
export function spawnGateway(options: Omit<DevGatewayOptions, 'logger' | 'onLost'>, env: Record<string, string> = {}): Promise<GatewayChild> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    let seen = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const match = /listening (\S+)/.exec(seen);
      if (match) resolve({ url: match[1], process: child, kill: () => (child.kill('SIGKILL'), exited), stop: () => (child.kill('SIGTERM'), exited) });
    });
    child.once('exit', (code) => reject(new Error(`the gateway child exited (${code}) before it listened: ${seen}`)));
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const options = JSON.parse(process.argv[2]) as DevGatewayOptions;
  const onLost = (reason: string) => {
    process.stderr.write(`gateway child ${process.pid}: ${reason}: exiting\n`);
    process.exit(1);
  };
  // Silent unless the test asks for a level (`HOLON_TEST_CHILD_LOG`): its log goes to stderr.
  const running = await startDevGateway({ ...options, logger: pino({ level: process.env.HOLON_TEST_CHILD_LOG ?? 'silent' }, pino.destination(2)), onLost });
  process.once('SIGTERM', () => void running.close().then(() => process.exit(0)));
  process.stdout.write(`listening ${running.url}\n`);
}
