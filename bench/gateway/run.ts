/**
 * The gateway benchmark (issue 12 §2): what the gateway adds to a call. One trivial MCP agent
 * (`agent.ts`, a `per_run` tool that answers at once) is called three ways, by closed-loop clients:
 *
 * - `gateway`: `POST /v0/calls` to a gateway process (`gateway.ts`) on Postgres, which resolves,
 *   admits, reserves, runs the agent with its MCP client, writes the receipt and settles;
 * - `floor` (`floor.ts`): a bare HTTP server doing only the round trips the gateway's call path
 *   waits for (a read, two committed writes, the agent with the same MCP client, a committed
 *   write) on the same Postgres: the least any gateway with those durable steps costs here;
 * - `direct`: the same agent called with the same MCP client (the gateway's `mcp` runtime) from
 *   this process.
 *
 * Overhead per call = gateway latency − direct latency, at the same percentile (and the floor's
 * the same way). Billed calls/s are the gateway cell's calls, each checked to be `succeeded` and
 * billed. The gateway runs with `HOLON_SERVER_TIMING=1`; each measured call's phases are read
 * off its `Server-Timing` header and printed as "where a gateway call's time goes".
 *
 *   DATABASE_URL=postgres://... node --import tsx bench/gateway/run.ts
 *
 * Environment: `BENCH_SECONDS` (10) measured and `BENCH_WARMUP_SECONDS` (1) unmeasured seconds
 * per cell, `BENCH_CLIENTS` (`1,16`), `BENCH_PORT_BASE` (4440: the agent listens on it, the
 * gateway on the next port, the floor on the one after), `BENCH_CPU_PROF_DIR` a directory for a V8 CPU profile of the gateway,
 * `BENCH_OUT` a JSON path. After each gateway cell, the settlement lag of its calls (receipt written
 * → settlement applied at the binding, issue 12 §3) is read from Postgres. The last line of a run is
 * `gateway_overhead_p50_ms_1=… gateway_overhead_p99_ms_1=… gateway_overhead_p50_ms_16=… gateway_overhead_p99_ms_16=… billed_calls_per_s_16=… settlement_lag_p50_ms_16=… settlement_lag_p99_ms_16=… floor_overhead_p50_ms_1=… floor_overhead_p50_ms_16=… commits_per_call=… pglite_over_pg=… billed_calls_per_s_16_before=…`.
 *
 * Issue 21 §5 adds two paths, `gateway-pglite` (the same gateway on PGlite) and `before` (`gateway.ts`
 * of `BENCH_BEFORE_REF`, default 7d2dcc0, on a database of its own), chosen with `BENCH_PATHS`, and
 * counts each Postgres gateway cell's commits per call ({@link CommitCounter}).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { envNumber } from '../../src/config/env.ts';
import { PHASES } from '../../src/gateway/server-timing.ts';
import { createMcpRuntime } from '../../src/runtimes/mcp.ts';
import { JsonClient } from '../clearing/binding.ts';
import { percentile, runCell, type CellResult, type Operation } from '../clearing/measure.ts';

/** This checkout's root (the `before` path is extracted from its git history). */
const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** How long a child may take to print its first line (a PGlite gateway migrates its new directory first: seconds on a quiet machine, minutes on a loaded one). */
const START_TIMEOUT_MS = 300_000;
/** The benchmark agent's price per run, as its manifest states it. */
const PRICE = '0.001';

/** A child process and the first line it printed. */
interface Child {
  process: ChildProcess;
  line: string;
}

/** Starts `node [nodeArgs] --import tsx <script> ...args` and resolves with its first line of output. Rejects with its stderr when it exits first. */
function startChild(script: string, args: string[], env: NodeJS.ProcessEnv, nodeArgs: string[] = []): Promise<Child> {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', fileURLToPath(new URL(script, import.meta.url)), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-16_384)));
  return new Promise((resolve, reject) => {
    let stdout = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script} did not start within ${START_TIMEOUT_MS} ms: ${stderr}`));
    }, START_TIMEOUT_MS);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const end = stdout.indexOf('\n');
      if (end >= 0) {
        clearTimeout(timer);
        resolve({ process: child, line: stdout.slice(0, end) });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited with ${code} before starting: ${stderr}`));
    });
  });
}

/** Stops a child with SIGTERM and waits for it. */
async function stopChild(child: Child | null): Promise<void> {
  if (!child || child.process.exitCode !== null) return;
  const exited = new Promise((resolve) => child.process.once('exit', resolve));
  child.process.kill('SIGTERM');
  await exited;
}

/** The benchmark agent's manifest: per_run, charged on success, the `echo` tool at `endpoint`. */
function manifest(endpoint: string): string {
  return [
    'id: bench/echo',
    'version: 1.0.0',
    'summary: Answers its input at once (the gateway benchmark).',
    'capabilities: [bench.echo]',
    'interface:',
    '  input: { type: object }',
    '  output: { type: object }',
    '  charge_on: success',
    `price: { model: per_run, currency: EUR, amount: "${PRICE}" }`,
    `runtime: { kind: mcp, endpoint: "${endpoint}", tool: echo, limits: { timeout_s: 30 } }`,
    'license: Apache-2.0',
    '',
  ].join('\n');
}

/** How long the benchmark waits after a gateway cell for its settlements to be applied, in ms. */
const SETTLE_WAIT_MS = 60_000;

/** Settlement lag of a cell (issue 12 §3): receipt written → settlement applied at the binding, in ms. */
interface SettlementLag {
  settlements: number;
  p50_ms: number;
  p99_ms: number;
  /** Settlements of the cell still not applied after {@link SETTLE_WAIT_MS}. */
  unapplied: number;
}

/** The database's clock now (lags are measured on it alone). */
async function dbNow(db: pg.Client): Promise<string> {
  return (await db.query('SELECT clock_timestamp()::text AS now')).rows[0].now as string;
}

/**
 * The lag of every settlement whose intent was written since `from`: from the intent's row
 * (written in the receipt's transaction) to the binding's transaction row (written when the
 * settle was applied), both `clock_timestamp()` on the one Postgres the gateway and its
 * in-process binding share. Waits up to {@link SETTLE_WAIT_MS} for pending ones first.
 */
async function settlementLag(db: pg.Client, from: string): Promise<SettlementLag> {
  const pendingSql = `SELECT count(*)::int AS n FROM gateway_settlement_intents WHERE operation = 'settle' AND status = 'pending' AND created_at >= $1`;
  const deadline = Date.now() + SETTLE_WAIT_MS;
  while ((await db.query(pendingSql, [from])).rows[0].n > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  const { rows } = await db.query(
    `SELECT count(*)::int AS settlements,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY lag_ms) AS p50_ms,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY lag_ms) AS p99_ms
       FROM (SELECT extract(epoch FROM (t.created_at - i.created_at)) * 1000 AS lag_ms
               FROM gateway_settlement_intents i JOIN clearing_transactions t ON t.txn_id = i.body->>'txnId'
              WHERE i.operation = 'settle' AND i.created_at >= $1) AS lags`,
    [from],
  );
  return { settlements: rows[0].settlements, p50_ms: Number(rows[0].p50_ms), p99_ms: Number(rows[0].p99_ms), unapplied: (await db.query(pendingSql, [from])).rows[0].n };
}

/** The `Server-Timing` phases of a cell's measured calls, and the latency the client saw, in ms per call. */
class PhaseTimings {
  readonly #values = new Map<string, number[]>();

  /** Adds one call: its header (`name;dur=ms, …, total;dur=ms`) and the latency the client saw. Throws on a header without `total`. */
  add(header: string, latency_ms: number): void {
    const phases = new Map(header.split(', ').map((entry) => {
      const [name, duration] = entry.split(';dur=');
      return [name, Number(duration)] as const;
    }));
    const total = phases.get('total');
    if (total === undefined || Number.isNaN(total)) throw new Error(`a gateway answer without Server-Timing total: ${JSON.stringify(header)}`);
    for (const [name, ms] of [...phases, ['outside', latency_ms - total] as const, ['latency', latency_ms] as const]) {
      const list = this.#values.get(name) ?? [];
      list.push(ms);
      this.#values.set(name, list);
    }
  }

  /** `mean / p50` of one phase, two decimals; a dash when no call had it. */
  cell(name: string): string {
    const { mean_ms, p50_ms } = this.#stats(name);
    return mean_ms === undefined ? '-' : `${mean_ms.toFixed(2)} / ${p50_ms!.toFixed(2)}`;
  }

  /** Every phase's mean and p50 (for `BENCH_OUT`). */
  summary(): Record<string, { mean_ms?: number; p50_ms?: number }> {
    return Object.fromEntries([...this.#values.keys()].map((name) => [name, this.#stats(name)]));
  }

  #stats(name: string): { mean_ms?: number; p50_ms?: number } {
    const values = [...(this.#values.get(name) ?? [])].sort((a, b) => a - b);
    if (values.length === 0) return {};
    return { mean_ms: values.reduce((sum, v) => sum + v, 0) / values.length, p50_ms: percentile(values, 50) };
  }
}

/**
 * This benchmark's `gateway.ts` as of `ref` (the \`before\` path, issue 21 §5): \`git archive\` of
 * that commit in a directory under the system's temporary directory. It borrows this checkout's
 * \`node_modules\` when its \`package-lock.json\` is this checkout's; when not, a copy of them
 * brought in line with its lock (\`npm install --ignore-scripts\`, about 15 s): \`7d2dcc0\` still
 * needs \`undici\`, which this checkout dropped. A snapshot, not a \`git
 * worktree\`: nothing is registered in the repository, so an interrupted run leaves nothing to
 * clean up there. Extracted once per ref.
 */
function beforeGateway(ref: string): string {
  if (!/^[0-9a-zA-Z._/-]+$/.test(ref)) throw new Error(`BENCH_BEFORE_REF=${ref} is not a commit or tag name`);
  const dir = path.join(os.tmpdir(), `holon-bench-gateway-before-${ref.replace(/\W/g, '_')}`);
  const script = path.join(dir, 'bench', 'gateway', 'gateway.ts');
  // Written last, so an interrupted extraction or install is done again.
  const ready = path.join(dir, '.holon-bench-ready');
  if (!existsSync(ready)) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const archive = execFileSync('git', ['-C', REPO_ROOT, 'archive', '--format=tar', ref], { maxBuffer: 512 * 2 ** 20 });
    execFileSync('tar', ['-x', '-C', dir], { input: archive });
    const lock = (root: string) => readFileSync(path.join(root, 'package-lock.json'), 'utf8');
    if (lock(dir) === lock(REPO_ROOT)) symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    else {
      // A copy of this checkout's packages brought in line with the ref's lock: the packages both
      // share keep their built native parts (re2), which an install without scripts would lack.
      execFileSync('cp', ['-a', path.join(REPO_ROOT, 'node_modules'), path.join(dir, 'node_modules')]);
      execFileSync('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
    }
    writeFileSync(ready, ref);
  }
  return script;
}

/** `url` with its database replaced by `database`, created on the server when missing. */
async function siblingDatabase(monitor: pg.Client, url: string, database: string): Promise<string> {
  const exists = await monitor.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
  if (exists.rowCount === 0) await monitor.query(`CREATE DATABASE "${database}"`);
  const sibling = new URL(url);
  sibling.pathname = `/${database}`;
  return sibling.toString();
}

/**
 * Counts the transactions committed in one database (\`pg_stat_database.xact_commit\`, read from
 * another database so the reads count nowhere), less those of this benchmark's own client on it
 * (each of its queries is one transaction; counted by {@link countQueries}). Backends report
 * their counts when idle, at most once a second, so a reading waits {@link STATS_FLUSH_MS} first.
 */
class CommitCounter {
  constructor(
    private readonly stats: pg.Client,
    private readonly database: string,
    private readonly own: { queries: number },
  ) {}

  /** The committed transactions of others so far. */
  async read(): Promise<number> {
    await new Promise((resolve) => setTimeout(resolve, STATS_FLUSH_MS));
    const { rows } = await this.stats.query('SELECT xact_commit::bigint AS n FROM pg_stat_database WHERE datname = $1', [this.database]);
    return Number(rows[0].n) - this.own.queries;
  }
}

/** How long the commit counter waits for idle backends to report their counts (they do at most once a second). */
const STATS_FLUSH_MS = 2_500;

/** Counts the queries sent on `client` from now on (the benchmark's own transactions, left out of a {@link CommitCounter}). */
function countQueries(client: pg.Client): { queries: number } {
  const counter = { queries: 0 };
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    counter.queries++;
    return query(...args);
  };
  return counter;
}

/** Formats a number with `digits` decimals, or a dash (missing, or not finite: a cell that finished no call). */
const fixed = (value: number | undefined, digits: number) => (value === undefined || !Number.isFinite(value) ? '-' : value.toFixed(digits));

/** The paths of a run (`BENCH_PATHS`), in the order each client count runs them. */
const ALL_PATHS = ['gateway', 'gateway-pglite', 'before', 'floor', 'direct'] as const;
type PathName = (typeof ALL_PATHS)[number];

/** A gateway under test: its process, its HTTP client and mandate, and (on Postgres) its database. */
interface GatewayUnderTest {
  child: Child;
  http: JsonClient;
  mandate: string;
  /** Its database, read for settlement lag and commits; null on PGlite (a directory the gateway holds). */
  db: { client: pg.Client; commits: CommitCounter } | null;
}

/** Runs every path at each client count and prints the tables and the summary line. */
async function main(): Promise<void> {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('set DATABASE_URL to a Postgres server (see bench/README.md)');
  const seconds = envNumber(process.env, { name: 'BENCH_SECONDS', what: 'measured seconds per cell', default: 10, min: 1, max: 3_600, integer: false });
  const warmup_s = envNumber(process.env, { name: 'BENCH_WARMUP_SECONDS', what: 'unmeasured seconds before each cell', default: 1, min: 0, max: 600, integer: false });
  const clientCounts = (process.env.BENCH_CLIENTS || '1,16').split(',').map(Number);
  const portBase = envNumber(process.env, { name: 'BENCH_PORT_BASE', what: 'the first of the ports the bench listens on', default: 4440, min: 1_024, max: 65_000, integer: true });
  const paths = (process.env.BENCH_PATHS || ALL_PATHS.join(',')).split(',') as PathName[];
  for (const name of paths) if (!ALL_PATHS.includes(name)) throw new Error(`BENCH_PATHS: ${name} is none of ${ALL_PATHS.join(', ')}`);
  const beforeRef = process.env.BENCH_BEFORE_REF || '7d2dcc0';
  const work = await mkdtemp(path.join(os.tmpdir(), 'holon-bench-gateway-'));
  const stats = new pg.Client({ connectionString: Object.assign(new URL(url), { pathname: '/postgres' }).toString() });
  await stats.connect();
  const opened: pg.Client[] = [stats];
  /** A client on `databaseUrl` whose own queries a commit counter leaves out. */
  const databaseOf = async (databaseUrl: string) => {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    opened.push(client);
    const own = countQueries(client);
    return { client, commits: new CommitCounter(stats, decodeURIComponent(new URL(databaseUrl).pathname.slice(1)), own) };
  };
  const monitor = await databaseOf(url);
  const children: Child[] = [];
  const started = async (script: string, args: string[], env: NodeJS.ProcessEnv, nodeArgs: string[] = []) => {
    const child = await startChild(script, args, env, nodeArgs);
    children.push(child);
    return child;
  };
  const maxClients = Math.max(...clientCounts);
  try {
    const agent = await started('./agent.ts', [String(portBase)], process.env);
    const endpoint = agent.line.replace('listening on ', '');
    const agentDir = path.join(work, 'agents', 'bench--echo');
    await mkdir(agentDir, { recursive: true });
    await writeFile(path.join(agentDir, 'holon.yaml'), manifest(endpoint));
    const profileDir = process.env.BENCH_CPU_PROF_DIR;
    /** Starts a gateway (`script`, this checkout's or the before ref's) on `databaseUrl`, or on PGlite in its own directory when null. */
    const startGateway = async (script: string, port: number, name: string, databaseUrl: string | null, nodeArgs: string[] = []): Promise<GatewayUnderTest> => {
      const data = path.join(work, `data-${name}`);
      await mkdir(path.join(data, 'mandates'), { recursive: true });
      const env: NodeJS.ProcessEnv = { ...process.env, HOLON_SERVER_TIMING: '1' };
      if (databaseUrl) env.DATABASE_URL = databaseUrl;
      else delete env.DATABASE_URL;
      const child = await started(script, [String(port), path.join(work, 'agents'), data], env, nodeArgs);
      const { url: gatewayUrl, mandate } = JSON.parse(child.line) as { url: string; mandate: string };
      return { child, http: new JsonClient(gatewayUrl, maxClients), mandate, db: databaseUrl === url ? monitor : databaseUrl ? await databaseOf(databaseUrl) : null };
    };
    const gateways = new Map<PathName, GatewayUnderTest>();
    if (paths.includes('gateway')) gateways.set('gateway', await startGateway('./gateway.ts', portBase + 1, 'gateway', url, profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []));
    if (paths.includes('gateway-pglite')) gateways.set('gateway-pglite', await startGateway('./gateway.ts', portBase + 3, 'pglite', null));
    if (paths.includes('before')) {
      const beforeUrl = await siblingDatabase(monitor.client, url, `${decodeURIComponent(new URL(url).pathname.slice(1)) || 'postgres'}_before_21`);
      gateways.set('before', await startGateway(beforeGateway(beforeRef), portBase + 4, 'before', beforeUrl));
    }
    const floor = paths.includes('floor') ? await started('./floor.ts', [String(portBase + 2), endpoint], process.env) : null;
    const floorHttp = floor ? new JsonClient(floor.line.replace('listening on ', ''), maxClients) : null;
    const runtime = createMcpRuntime();
    const target = { id: 'bench/echo', version: '1.0.0', runtime: { kind: 'mcp' as const, endpoint, tool: 'echo' } };

    let timings: PhaseTimings = new PhaseTimings();
    /** Calls sent through a gateway in the current cell, warm-up included (the denominator of commits per call). */
    let sent = 0;
    const viaGateway =
      (under: GatewayUnderTest): Operation =>
      async (client, n, measured) => {
        const started_ms = performance.now();
        const answer = await under.http.post('/v0/calls', { mandate: under.mandate, agent: 'bench/echo', input: { client, n } });
        if (answer.status !== 200 || answer.body.receipt?.status !== 'succeeded' || answer.body.receipt?.billed !== true) {
          throw new Error(`call ${client}/${n} answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 400)}`);
        }
        sent++;
        if (measured) timings.add(String(answer.headers['server-timing']), performance.now() - started_ms);
      };
    const viaFloor: Operation = async (client, n) => {
      const answer = await floorHttp!.post('/call', { client, n });
      if (answer.status !== 200) throw new Error(`floor call ${client}/${n} answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 400)}`);
    };
    const direct: Operation = async (client, n) => {
      const outcome = await runtime.run({
        target,
        input: { client, n },
        call_id: `direct-${client}-${n}`,
        max_cost: null,
        credential: null,
        signal: new AbortController().signal,
        delegate: () => Promise.reject(new Error('the benchmark agent delegates nothing')),
      });
      if (outcome.kind !== 'output') throw new Error(`direct call ${client}/${n}: ${JSON.stringify(outcome)}`);
    };
    const subjectsOf = (server: Child) => ({
      bindingPid: server.process.pid!,
      postgresPids: async () => (await stats.query('select pid from pg_stat_activity')).rows.map((r) => Number(r.pid)),
    });
    console.log(`# gateway benchmark: ${JSON.stringify({ cpus: os.availableParallelism(), node: process.version, loadavg: os.loadavg().map((l) => Number(l.toFixed(2))), seconds, warmup_s, paths, before: beforeRef })}`);
    const rows: Array<CellResult & { path: PathName; lag?: SettlementLag; phases?: PhaseTimings; commits_per_call?: number }> = [];
    for (const clients of clientCounts) {
      for (const name of paths) {
        const under = gateways.get(name);
        const [op, server] = under ? [viaGateway(under), under.child] : name === 'floor' ? [viaFloor, floor!] : [direct, children[0]!];
        const from = under?.db ? await dbNow(under.db.client) : null;
        const commitsBefore = under?.db ? await under.db.commits.read() : null;
        timings = new PhaseTimings();
        sent = 0;
        const result = await runCell(clients, seconds, warmup_s, op, subjectsOf(server));
        const lag = under?.db ? await settlementLag(under.db.client, from!) : undefined;
        const commits_per_call = under?.db && commitsBefore !== null ? ((await under.db.commits.read()) - commitsBefore) / sent : undefined;
        console.log(`${name} clients=${clients}: ${result.ops_per_s.toFixed(0)}/s p50 ${result.p50_ms.toFixed(2)} ms p99 ${result.p99_ms.toFixed(2)} ms cpu ${JSON.stringify(result.cpu)}${lag ? ` settlement lag ${JSON.stringify(lag)}` : ''}${commits_per_call === undefined ? '' : ` commits/call ${commits_per_call.toFixed(2)}`}`);
        rows.push({ path: name, ...result, lag, commits_per_call, ...(under ? { phases: timings } : {}) });
      }
    }
    for (const under of gateways.values()) await under.http.close();
    await floorHttp?.close();
    await runtime.close();
    console.log('\n| path | clients | calls/s | p50 ms | p99 ms | commits/call | settlement lag p50 ms | p99 ms | CPU ms/call server | postgres | bench (clients, agent) | CPU other (cores) |');
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    const perCall = (cores: number | undefined, r: CellResult) => (cores === undefined ? undefined : (cores * 1000) / r.ops_per_s);
    for (const r of rows) {
      console.log(
        `| ${r.path} | ${r.clients} | ${fixed(r.ops_per_s, 0)} | ${fixed(r.p50_ms, 2)} | ${fixed(r.p99_ms, 2)} | ${fixed(r.commits_per_call, 2)} | ${fixed(r.lag?.p50_ms, 1)} | ${fixed(r.lag?.p99_ms, 1)} | ${fixed(perCall(r.cpu?.binding, r), 2)} | ` +
          `${fixed(perCall(r.cpu?.postgres, r), 2)} | ${fixed(perCall(r.cpu?.bench, r), 2)} | ${fixed(r.cpu?.other, 2)} |`,
      );
    }
    console.log(`\nWhere a gateway call's time goes (from its Server-Timing header), mean / p50 ms: ${PHASES.join(', ')}, \`total\` (the gateway's call pipeline), and \`outside\` (the latency the client saw minus \`total\`: HTTP, routing, body parsing and checks, the answer's serialization, the network).`);
    console.log(`\n| path | clients | ${PHASES.join(' | ')} | total | outside | latency |`);
    console.log(`|---|---:|${PHASES.map(() => '---:').join('|')}|---:|---:|---:|`);
    for (const r of rows) if (r.phases) console.log(`| ${r.path} | ${r.clients} | ${[...PHASES, 'total', 'outside', 'latency'].map((phase) => r.phases!.cell(phase)).join(' | ')} |`);
    const cellOf = (p: PathName, clients: number) => rows.find((r) => r.path === p && r.clients === clients);
    const overhead = (clients: number, key: 'p50_ms' | 'p99_ms', over: PathName = 'gateway') => {
      const g = cellOf(over, clients);
      const d = cellOf('direct', clients);
      return g && d ? g[key] - d[key] : undefined;
    };
    const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : a / b);
    console.log(
      `\ngateway_overhead_p50_ms_1=${fixed(overhead(1, 'p50_ms'), 2)} gateway_overhead_p99_ms_1=${fixed(overhead(1, 'p99_ms'), 2)} ` +
        `gateway_overhead_p50_ms_16=${fixed(overhead(16, 'p50_ms'), 2)} gateway_overhead_p99_ms_16=${fixed(overhead(16, 'p99_ms'), 2)} ` +
        `billed_calls_per_s_16=${fixed(cellOf('gateway', 16)?.ops_per_s, 0)} ` +
        `settlement_lag_p50_ms_16=${fixed(cellOf('gateway', 16)?.lag?.p50_ms, 1)} settlement_lag_p99_ms_16=${fixed(cellOf('gateway', 16)?.lag?.p99_ms, 1)} ` +
        `floor_overhead_p50_ms_1=${fixed(overhead(1, 'p50_ms', 'floor'), 2)} floor_overhead_p50_ms_16=${fixed(overhead(16, 'p50_ms', 'floor'), 2)} ` +
        `commits_per_call=${fixed(cellOf('gateway', 16)?.commits_per_call, 2)} pglite_over_pg=${fixed(ratio(cellOf('gateway-pglite', 16)?.ops_per_s, cellOf('gateway', 16)?.ops_per_s), 2)} ` +
        `billed_calls_per_s_16_before=${fixed(cellOf('before', 16)?.ops_per_s, 0)}`,
    );
    if (process.env.BENCH_OUT) await writeFile(process.env.BENCH_OUT, JSON.stringify({ rows: rows.map(({ phases, ...row }) => ({ ...row, ...(phases ? { phases: phases.summary() } : {}) })) }, null, 2));
  } finally {
    for (const child of children.reverse()) await stopChild(child);
    for (const client of opened) await client.end();
    await rm(work, { recursive: true, force: true });
  }
}

await main();
