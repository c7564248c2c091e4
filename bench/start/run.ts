/**
 * How long `holon serve` takes to answer (issue 21 §4): the dev gateway started as a user starts
 * it, `node src/bin.mjs serve` in a child process (the compiled `dist/` when it is fresh, the
 * sources through tsx otherwise: the run says which), timed from the spawn to its first 200 on
 * `GET /healthz`. Twice per round: on a new data directory ("fresh", what the first `holon serve`
 * of a fresh clone does) and again on the directory that start left ("existing", every later
 * start). With each time, the CPU the gateway process and its agents host had used by then
 * (`/proc`, so Linux only), since on a shared machine the wall time says as much about the
 * neighbours as about the start.
 *
 *   node --import tsx bench/start/run.ts          (PGlite; the dev gateway's default)
 *
 * Environment: `BENCH_ROUNDS` (5, at most 50) rounds, each one fresh start then one existing;
 * `BENCH_DIR` (the temporary directory) where the data directories are made, then removed.
 * Each figure is the median of the rounds, with the minimum and maximum (a start that failed is
 * counted apart). The last line is
 * `serve_fresh_wall_s=… serve_fresh_cpu_s=… serve_existing_wall_s=… serve_existing_cpu_s=…`.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** What `src/bin.mjs` decides with (plain JavaScript without declarations, hence the untyped import). */
const { compiledCli } = (await import(new URL('../../src/cli/compiled.mjs', import.meta.url).href)) as { compiledCli(): string | null };
const ROUNDS = Math.min(50, Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5)));
/** How long one start may take before the run gives up on it, in milliseconds. */
const START_BOUND_MS = 120_000;
/** Clock ticks per second of `/proc/<pid>/stat` (USER_HZ, 100 on Linux). */
const TICKS_PER_S = 100;

/** The CPU seconds (user + system) process `pid` has used, from `/proc/<pid>/stat`. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces), from field 3: utime is 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_S;
}

/** The live children of process `pid` (the agents host), from `/proc`; none on a kernel without the children file. */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** One start of `holon serve` on `db`: seconds from spawn to the first 200 on `/healthz`, and the CPU seconds the gateway process and its children had used by then. */
async function start(db: string): Promise<{ wall_s: number; gateway_cpu_s: number; children_cpu_s: number }> {
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, [path.join(ROOT, 'src', 'bin.mjs'), 'serve', '--port', '0', '--agents-port', '0', '--db', db], {
    cwd: ROOT,
    env: { ...process.env, HOLON_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = once(child, 'exit');
  try {
    const deadline = Date.now() + START_BOUND_MS;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`holon serve exited with ${child.exitCode}: ${output}`);
      if (Date.now() > deadline) throw new Error(`holon serve did not answer within ${START_BOUND_MS} ms: ${output}`);
      const url = /listening on (http:\/\/[^\s(]+)/.exec(output)?.[1];
      const answer = url ? await fetch(`${url}/healthz`).catch(() => null) : null;
      if (answer?.status === 200) {
        const wall_s = Number(process.hrtime.bigint() - started) / 1e9;
        return { wall_s, gateway_cpu_s: cpuSeconds(child.pid!), children_cpu_s: childrenOf(child.pid!).reduce((sum, pid) => sum + cpuSeconds(pid), 0) };
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

/** `median (min–max)` of `values`, in seconds to two decimals. */
function spread(values: number[]): { median: number; text: string } {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  return { median, text: `${median.toFixed(2)} (${sorted[0].toFixed(2)}–${sorted.at(-1)!.toFixed(2)})` };
}

type Figures = { wall: number[]; cpu: number[]; gateway_cpu: number[]; failed: number };
const empty = (): Figures => ({ wall: [], cpu: [], gateway_cpu: [], failed: 0 });
const figures = { fresh: empty(), existing: empty() };
const base = process.env.BENCH_DIR ?? tmpdir();
console.log(`holon serve runs ${compiledCli() ? 'the compiled dist/' : 'the sources through tsx (dist/ is missing or stale: npm run build)'}; ${ROUNDS} rounds, data under ${base}`);
for (let round = 0; round < ROUNDS; round++) {
  const dir = await mkdtemp(path.join(base, 'holon-bench-start-'));
  try {
    for (const kind of ['fresh', 'existing'] as const) {
      try {
        const { wall_s, gateway_cpu_s, children_cpu_s } = await start(path.join(dir, 'db'));
        figures[kind].wall.push(wall_s);
        figures[kind].cpu.push(gateway_cpu_s + children_cpu_s);
        figures[kind].gateway_cpu.push(gateway_cpu_s);
        console.log(`round ${round + 1} ${kind}: ${wall_s.toFixed(2)} s wall, ${(gateway_cpu_s + children_cpu_s).toFixed(2)} s CPU (gateway ${gateway_cpu_s.toFixed(2)}, agents host ${children_cpu_s.toFixed(2)})`);
      } catch (error) {
        // A start that failed (on a loaded machine, the agents host can miss its own start bound) is counted, not timed.
        figures[kind].failed++;
        console.log(`round ${round + 1} ${kind}: failed: ${(error as Error).message.split('\n')[0]}`);
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
const rows = Object.entries(figures).filter(([, f]) => f.wall.length > 0).map(([kind, f]) => ({ kind, failed: f.failed, wall: spread(f.wall), cpu: spread(f.cpu), gateway_cpu: spread(f.gateway_cpu) }));
console.log('\n| start | wall s | CPU s, gateway and agents host | CPU s, gateway process | failed |\n|---|---|---|---|---|');
for (const row of rows) console.log(`| ${row.kind} | ${row.wall.text} | ${row.cpu.text} | ${row.gateway_cpu.text} | ${row.failed} |`);
console.log(rows.map((row) => `serve_${row.kind}_wall_s=${row.wall.median.toFixed(2)} serve_${row.kind}_cpu_s=${row.cpu.median.toFixed(2)}`).join(' '));
