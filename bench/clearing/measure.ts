/**
 * Timing for the clearing benchmark: closed-loop clients for a fixed time, latency
 * percentiles, and the CPU each process spent meanwhile (read from /proc, Linux only), so a
 * figure can be explained by who was busy rather than guessed at.
 */
import { readFileSync } from 'node:fs';

/** Clock ticks per second of the times in /proc/stat and /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const TICKS_PER_S = 100;

/** One operation of a client: `client` is the client's index, `n` its sequence number within the cell, `measured` whether it started inside the measured window (after the warm-up). */
export type Operation = (client: number, n: number, measured: boolean) => Promise<void>;

/** What one cell measured: completed operations, their rate, latency percentiles, and who was busy. */
export interface CellResult {
  clients: number;
  ops: number;
  seconds: number;
  ops_per_s: number;
  p50_ms: number;
  p99_ms: number;
  /** CPU used during the measured window, in cores (1.0 = one core busy all the time); null where unreadable. */
  cpu: CpuShare | null;
}

/** CPU used during a window, in cores, by process group. */
export interface CpuShare {
  /** The binding's process (zero on the direct path, which does not use it). */
  binding: number;
  /** Every backend and background process of the Postgres server. */
  postgres: number;
  /** This process: the clients, and on the direct path the pg driver. */
  bench: number;
  /** Every other process on the machine (e.g. other people's builds): high means the figures are disturbed. */
  other: number;
}

/** The processes whose CPU a cell accounts for: the binding's pid and a way to list the server's. */
export interface CpuSubjects {
  bindingPid: number;
  postgresPids(): Promise<number[]>;
}

/** The value at nearest-rank percentile `p` (0..100) of `sorted` (ascending). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** A CPU reading of every subject, taken at one moment. */
interface CpuSample {
  binding: number | null;
  postgres: Map<number, number>;
  bench_s: number;
  machine: number | null;
}

/** Reads the CPU used so far by the binding, the server's processes and this process. */
async function sampleCpu(subjects: CpuSubjects): Promise<CpuSample> {
  const { user, system } = process.cpuUsage();
  return {
    binding: cpuSeconds(subjects.bindingPid),
    postgres: cpuByPid(await subjects.postgresPids()),
    bench_s: (user + system) / 1e6,
    machine: machineBusySeconds(),
  };
}

/**
 * Runs `clients` closed loops of `operation` for `warmup_s` unmeasured seconds, then
 * `seconds` measured ones, reading the CPU of `subjects` at both ends of the measured window.
 * An operation that throws stops the cell: a benchmark that counts failures as work would
 * measure the wrong thing.
 */
export async function runCell(clients: number, seconds: number, warmup_s: number, operation: Operation, subjects: CpuSubjects): Promise<CellResult> {
  const started_ms = performance.now();
  const measureFrom_ms = started_ms + warmup_s * 1000;
  const stopAt_ms = measureFrom_ms + seconds * 1000;
  const latencies_ms: number[] = [];
  const loop = async (client: number) => {
    for (let n = 0; ; n++) {
      const t0 = performance.now();
      if (t0 >= stopAt_ms) return;
      await operation(client, n, t0 >= measureFrom_ms);
      if (t0 >= measureFrom_ms) latencies_ms.push(performance.now() - t0);
    }
  };
  const window: { opened?: Promise<CpuSample> } = {};
  const windowOpens = setTimeout(() => (window.opened = sampleCpu(subjects)), warmup_s * 1000);
  try {
    await Promise.all(Array.from({ length: clients }, (_, client) => loop(client)));
  } finally {
    clearTimeout(windowOpens);
  }
  // Operations started inside the window are counted; the window is stretched to the last of them.
  const elapsed_s = (Math.max(performance.now(), stopAt_ms) - measureFrom_ms) / 1000;
  const last = await sampleCpu(subjects);
  const start = window.opened === undefined ? null : await window.opened;
  latencies_ms.sort((a, b) => a - b);
  return {
    clients,
    ops: latencies_ms.length,
    seconds: elapsed_s,
    ops_per_s: latencies_ms.length / elapsed_s,
    p50_ms: percentile(latencies_ms, 50),
    p99_ms: percentile(latencies_ms, 99),
    cpu: start === null ? null : cpuShare(start, last, elapsed_s),
  };
}

/** The CPU each group used between two samples, in cores; null when the binding's or the machine's figures are unreadable. */
function cpuShare(start: CpuSample, last: CpuSample, elapsed_s: number): CpuShare | null {
  if (start.binding === null || last.binding === null || start.machine === null || last.machine === null) return null;
  const binding = (last.binding - start.binding) / elapsed_s;
  const postgres = cpuSpent(start.postgres, last.postgres) / elapsed_s;
  const bench = (last.bench_s - start.bench_s) / elapsed_s;
  const machine = (last.machine - start.machine) / elapsed_s;
  return { binding, postgres, bench, other: Math.max(0, machine - binding - postgres - bench) };
}

/**
 * Waits until the whole machine uses less than `maxBusy_cores` over a 1 s sample (so a cell
 * does not start in the middle of somebody else's build), for at most `timeout_s`. Returns the
 * last sample's figure, or null when /proc/stat cannot be read.
 */
export async function waitForQuiet(maxBusy_cores: number, timeout_s: number): Promise<number | null> {
  const deadline_ms = performance.now() + timeout_s * 1000;
  for (;;) {
    const before = machineBusySeconds();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const after = machineBusySeconds();
    if (before === null || after === null) return null;
    const busy = after - before;
    if (busy < maxBusy_cores || performance.now() >= deadline_ms) return busy;
  }
}

/** CPU seconds the whole machine has been busy (all CPUs, everything but idle and iowait, from /proc/stat), or null. */
function machineBusySeconds(): number | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
    const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
    return (user + nice + system + irq + softirq + steal) / TICKS_PER_S;
  } catch {
    return null;
  }
}

/** CPU seconds (user + system) process `pid` has used so far, or null when it cannot be read. */
function cpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesized command name; utime and stime are fields 14 and 15 of the line.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_S;
  } catch {
    return null;
  }
}

/** CPU seconds used so far by each of `pids` that can be read. */
function cpuByPid(pids: readonly number[]): Map<number, number> {
  const result = new Map<number, number>();
  for (const pid of pids) {
    const seconds = cpuSeconds(pid);
    if (seconds !== null) result.set(pid, seconds);
  }
  return result;
}

/** CPU seconds the processes of `after` used since `before` (a process absent before counts from zero). */
function cpuSpent(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0);
  return total;
}
