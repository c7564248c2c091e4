/**
 * Starts `agents/host.mjs`, the reference MCP host of the shipped agents (gateway §6), as a child
 * process beside the dev gateway, and stops it with the gateway. Its agents' manifests name its
 * endpoint (`http://127.0.0.1:4300/mcp`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

/** A running host: its `/mcp` URL and how to stop it. */
export interface AgentsHost {
  url: string;
  close(): Promise<void>;
}

/** How long the host may take to print that it listens. */
const START_TIMEOUT_MS = 20_000;

/**
 * Runs `node <script> --port <port>` and resolves once it prints its URL. Throws when it exits
 * first (e.g. the port is taken) or stays silent past the start timeout, with what it printed.
 * Every line the host prints, on stdout or stderr, is passed to `onLine` (default: dropped).
 */
export async function startAgentsHost(script: string, port: number, onLine: (line: string) => void = () => {}): Promise<AgentsHost> {
  const child: ChildProcess = spawn(process.execPath, [script, '--port', String(port)], { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', onLine);
  }
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not start within ${START_TIMEOUT_MS} ms: ${output}`)), START_TIMEOUT_MS);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const found = /holon agents host: (\S+)/.exec(output);
      if (found) {
        clearTimeout(timer);
        child.stdout!.off('data', read);
        child.stderr!.off('data', read);
        resolve(found[1]);
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited with ${code} before listening: ${output.trim()}`));
    });
  });
  return {
    url,
    async close() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}
