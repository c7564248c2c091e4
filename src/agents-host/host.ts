/**
 * Starts `agents/host.mjs`, the reference MCP host of the shipped agents (gateway §6), as a child
 * process beside the gateway (dev and hosted alike), and stops it with the gateway. The gateway
 * lists its agents at the URL it prints (their manifests name the default, `http://127.0.0.1:4300/mcp`).
 *
 * The host never outlives the gateway: it is spawned with an IPC channel and exits when that
 * channel closes. The kernel closes it however the gateway ends, `kill -9` included, so the host
 * exits at once and frees its port for the next start. (A stdin pipe would say the same, but would
 * take stdin from a host run by hand and stop one started with stdin at /dev/null; polling the
 * parent pid is late, and a re-parented process's ppid need not be 1.)
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
 * `exclude` (agent ids) is passed as its `HOLON_EXCLUDE`, so that it serves exactly the agents the
 * gateway lists. Every line the host prints, on stdout or stderr, is passed to `onLine` (default: dropped).
 */
export async function startAgentsHost(script: string, port: number, exclude: readonly string[], onLine: (line: string) => void = () => {}): Promise<AgentsHost> {
  const env = { ...process.env, HOLON_EXCLUDE: exclude.join(',') };
  const child: ChildProcess = spawn(process.execPath, [script, '--port', String(port)], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'], env });
  // The channel exists to close when this process dies; it must not keep this process alive.
  child.channel?.unref();
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
      // A port taken since it was checked (two gateways starting at once): one line, not Node's stack trace.
      const taken = /EADDRINUSE/.test(output) ? `port ${port} on 127.0.0.1 is already in use` : output.trim();
      reject(new Error(`${script} exited with ${code} before listening: ${taken}`));
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
