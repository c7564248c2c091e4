/**
 * Starts `agents/host.mjs`, the reference MCP host of the shipped agents (gateway §6), as a child
 * process beside the dev gateway, and stops it with the gateway. Its agents' manifests name its
 * endpoint (`http://127.0.0.1:4300/mcp`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';

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
 */
export async function startAgentsHost(script: string, port: number): Promise<AgentsHost> {
  const child: ChildProcess = spawn(process.execPath, [script, '--port', String(port)], { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not start within ${START_TIMEOUT_MS} ms: ${output}`)), START_TIMEOUT_MS);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const found = /holon agents host: (\S+)/.exec(output);
      if (found) {
        clearTimeout(timer);
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
