/**
 * Runs the `holon` command line as a user does (`node src/bin.mjs ...`) and collects what it
 * printed and its exit code.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The `holon` executable. */
export const BIN = path.join(ROOT, 'src', 'bin.mjs');

/** What a finished command printed, and its exit code. */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `holon ...args` in `cwd` (default: the repository) with `env` added to the environment and
 * `stdin` as its input (default: none). With `timeout_ms`, a command still running then is killed
 * (SIGKILL: `code` null), so a command that hangs fails its test instead of holding it.
 */
export function holon(args: string[], options: { env?: Record<string, string | undefined>; cwd?: string; stdin?: string; timeout_ms?: number } = {}): Promise<CliResult> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, ...options.env },
    stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    ...(options.timeout_ms === undefined ? {} : { timeout: options.timeout_ms, killSignal: 'SIGKILL' as const }),
  });
  if (options.stdin !== undefined) child.stdin!.end(options.stdin);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A port on 127.0.0.1 that nothing listens on (taken, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The top-level JSON documents of a command's stdout (each printed indented, starting at a line's `{`). */
export function jsonDocuments(stdout: string): unknown[] {
  return stdout.split(/^(?=\{)/m).filter((part) => part.trim()).map((part) => JSON.parse(part));
}

/** A `holon` server started by {@link serving}: its process, the line it printed once it listened, and how to stop it. */
export interface Serving {
  child: ChildProcess;
  /** The first stdout line containing ` listening on `. */
  line: string;
  /** SIGTERM, then waits for the process to exit (nothing when it already has). */
  stop(): Promise<void>;
}

/**
 * Starts `holon ...args` (a server command) in the repository with `env` added to the environment
 * (a key set to undefined is removed), and resolves once it prints the line saying it listens;
 * rejects with what it printed on stderr when it exits first.
 */
export function serving(args: string[], env: Record<string, string | undefined> = {}): Promise<Serving> {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk) => {
      stdout += chunk;
      const found = /^.* listening on .*$/m.exec(stdout);
      if (found) resolve({ child, line: found[0], stop });
    });
    child.once('exit', (code) => reject(new Error(`holon ${args.join(' ')} exited with ${code}: ${stderr.trim()}`)));
  });
}
