/**
 * A fleet for tests (issue 27 §1 "Any process serves any request"): hosted gateway processes
 * (`startHostedGateway`, each with the reference binding in its process) on one Postgres database
 * of their own, behind a real load balancer, Debian's `haproxy`, round robin, its configuration
 * written to a temporary directory. {@link startFleet} starts it all, {@link Fleet.stop} stops it
 * all. Postgres only ({@link fleetSkip}): two processes cannot share a PGlite directory.
 *
 * The balancer, as a production one would be: `option forwardfor` appends the client's address
 * to `X-Forwarded-For` (the gateways run with `HOLON_TRUST_PROXY=1`), every request is balanced
 * on its own (keep-alive connections included), no health checks (they would spend the
 * balancer's address budget). Two test-only additions: a request's `X-Fleet-Peer` header becomes
 * the client address haproxy appends (so a test can be several clients from 127.0.0.1), and every
 * answer names the process that served it in `X-Fleet-Server` (`g0`, `g1`, ...).
 *
 * Run as `node --import tsx tests/helpers/fleet.ts '<FleetChildOptions as JSON>'`, this file is
 * one gateway process: it prints `listening <url>` once it serves and closes on SIGTERM.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { startHostedGateway } from '../../src/serve/hosted.ts';
import { readSettings } from '../../src/hosted/settings.ts';
import { FIXTURE_AGENTS, freshStore, onPostgres } from './gateway.ts';
import { ADMIN_KEY, FILE_SECRET } from './hosted.ts';

/** The haproxy binary: on `PATH`, else Debian's place (`/usr/sbin` is not on a user's `PATH`). */
export const HAPROXY = ['haproxy', '/usr/sbin/haproxy'].find((candidate) => candidate.includes('/') ? executable(candidate) : (process.env.PATH ?? '').split(':').some((dir) => executable(path.join(dir, candidate)))) ?? null;

/** Whether `file` exists and may be run. */
function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Why a fleet test cannot run here (a `skip` reason), or false when it can. */
export function fleetSkip(): string | false {
  if (!onPostgres()) return 'Postgres only (DATABASE_URL): two gateway processes cannot share a PGlite directory';
  if (HAPROXY === null) return 'haproxy is not installed (Debian: apt-get install haproxy)';
  return false;
}

/** The settings every fleet process starts with, before `FleetOptions.env`: the test admin key and file secret, limits too high to matter. */
const FLEET_ENV: Readonly<Record<string, string>> = {
  HOLON_ADMIN_KEY: ADMIN_KEY,
  HOLON_FILE_SECRET: FILE_SECRET,
  HOLON_TRUST_PROXY: '1',
  HOLON_RATE_ADDRESS: '100000',
  HOLON_RATE_ACCOUNT: '100000',
  HOLON_RATE_ADMIN: '100000',
  HOLON_RATE_SIGNUP: '100000',
};

/** What one fleet process is started with (JSON on its command line). */
interface FleetChildOptions {
  store: { db: string; database_url?: string };
  /** `readSettings` variables over {@link FLEET_ENV}. */
  env: Record<string, string>;
  /** The balancer's `host:port`, which every process must answer to (the DNS-rebinding gate). */
  allowed_hosts: string[];
}

/** One gateway process of the fleet. */
export interface FleetProcess {
  /** Its own URL (`http://127.0.0.1:PORT`), past the balancer. */
  url: string;
  /** Its name in the balancer and in `X-Fleet-Server`: `g0`, `g1`, ... */
  name: string;
  process: ChildProcess;
  /** `kill -9`; resolves once the process is gone. */
  kill(): Promise<void>;
  /** SIGTERM (the gateway closes, its lease ended); resolves once the process is gone. */
  stop(): Promise<void>;
}

/** A running fleet. */
export interface Fleet {
  /** The balancer's URL: every request a client of the fleet sends goes here. */
  balancer_url: string;
  /** The balancer's `host:port` (the `Host` its clients send; every process allows it). */
  balancer_host: string;
  /** The gateway processes, in the balancer's order. */
  processes: FleetProcess[];
  /** The database they share (`database_url`) and the data directory. */
  store: { db: string; database_url?: string };
  /** The admin key of every process. */
  admin_key: string;
  /** Stops the balancer and every process, then drops the data directory. */
  stop(): Promise<void>;
}

/** How a fleet is started. */
export interface FleetOptions {
  /** How many gateway processes: 2 unless given (1 to 8). */
  processes?: number;
  /** Hosted settings (`HOLON_RATE_ACCOUNT`, ...) for every process, over the fleet's defaults. */
  env?: Record<string, string>;
}

/** A free loopback port, found by listening on port 0 (the balancer's, which must be known before the processes start). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Spawns one fleet process; resolves with its URL once it listens, rejects if it exits first. */
function spawnProcess(name: string, options: FleetChildOptions): Promise<FleetProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    let seen = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const match = /listening (\S+)/.exec(seen);
      if (match) resolve({ url: match[1], name, process: child, kill: () => (child.kill('SIGKILL'), exited), stop: () => (child.exitCode === null ? (child.kill('SIGTERM'), exited) : exited) });
    });
    child.once('exit', (code) => reject(new Error(`fleet process ${name} exited (${code}) before it listened: ${seen}`)));
  });
}

/** haproxy's configuration: round robin over `servers`, on `port`. */
function balancerConfig(port: number, servers: readonly FleetProcess[]): string {
  return [
    'global',
    '  maxconn 512',
    'defaults',
    '  mode http',
    '  timeout connect 2s',
    // A `wait_s` answer may take 60 s: the balancer must not cut it.
    '  timeout client 90s',
    '  timeout server 90s',
    'frontend fleet',
    `  bind 127.0.0.1:${port}`,
    '  http-request set-src req.hdr(x-fleet-peer) if { req.hdr(x-fleet-peer) -m found }',
    '  option forwardfor',
    '  default_backend gateways',
    'backend gateways',
    '  balance roundrobin',
    '  http-response set-header x-fleet-server %s',
    ...servers.map((server) => `  server ${server.name} ${new URL(server.url).host}`),
    '',
  ].join('\n');
}

/** Waits until `port` accepts a connection (haproxy has bound it), at most `timeout_ms`. */
async function listening(port: number, timeout_ms: number, balancer: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeout_ms;
  for (;;) {
    if (balancer.exitCode !== null) throw new Error(`haproxy exited (${balancer.exitCode}) before it listened`);
    const ok = await new Promise<boolean>((resolve) => {
      const client = connect(port, '127.0.0.1');
      client.once('connect', () => (client.destroy(), resolve(true)));
      client.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`haproxy did not listen on ${port} within ${timeout_ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Starts `options.processes` (2) hosted gateway processes on a fresh Postgres database and haproxy in front of them. */
export async function startFleet(options: FleetOptions = {}): Promise<Fleet> {
  const skip = fleetSkip();
  if (skip) throw new Error(`a fleet cannot start here: ${skip}`);
  const count = options.processes ?? 2;
  if (!Number.isInteger(count) || count < 1 || count > 8) throw new Error(`a fleet has 1 to 8 processes, not ${count}`);
  const store = await freshStore();
  const port = await freePort();
  const balancer_host = `127.0.0.1:${port}`;
  const processes: FleetProcess[] = [];
  const dir = await mkdtemp(path.join(tmpdir(), 'holon-fleet-'));
  let balancer: ChildProcess | null = null;
  const stop = async () => {
    if (balancer && balancer.exitCode === null) {
      const gone = new Promise((resolve) => balancer!.once('exit', resolve));
      balancer.kill('SIGTERM');
      await gone;
    }
    await Promise.all(processes.map((child) => child.stop()));
    await rm(dir, { recursive: true, force: true });
    await rm(store.db, { recursive: true, force: true });
  };
  try {
    // Started together, as an operator's supervisor would: they migrate one after another under the advisory lock.
    const started = await Promise.allSettled(Array.from({ length: count }, (_, i) => spawnProcess(`g${i}`, { store, env: options.env ?? {}, allowed_hosts: [balancer_host] })));
    for (const outcome of started) if (outcome.status === 'fulfilled') processes.push(outcome.value);
    const failed = started.find((outcome) => outcome.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    const config = path.join(dir, 'haproxy.cfg');
    await writeFile(config, balancerConfig(port, processes));
    // -db: in the foreground, not a daemon, so the test owns the process and stops it by its id.
    balancer = spawn(HAPROXY!, ['-f', config, '-db'], { stdio: ['ignore', 'inherit', 'inherit'] });
    await listening(port, 10_000, balancer);
  } catch (error) {
    await stop();
    throw error;
  }
  return { balancer_url: `http://${balancer_host}`, balancer_host, processes, store, admin_key: ADMIN_KEY, stop };
}

/** An answer as {@link send} gives it: status, JSON body (null when none), the process that served it through the balancer, and the headers. */
export interface FleetAnswer {
  status: number;
  body: any;
  /** `X-Fleet-Server` (`g0`, ...) when it came through the balancer, else null. */
  server: string | null;
  headers: Headers;
}

let peers = 0;

/**
 * One request to `base` (the balancer's URL or a process's): `key` as a bearer, `body` as JSON,
 * and through the balancer a client address of its own (`peer`, else a fresh `10.x.y.z` each
 * time, so the per-address limit of one test never spends another's).
 */
export async function send(base: string, route: string, options: { method?: string; key?: string; body?: unknown; peer?: string; headers?: Record<string, string> } = {}): Promise<FleetAnswer> {
  const n = ++peers;
  const headers: Record<string, string> = { 'x-fleet-peer': options.peer ?? `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`, ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${base}${route}`, { method: options.method ?? (options.body === undefined ? 'GET' : 'POST'), headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null, server: response.headers.get('x-fleet-server'), headers: response.headers };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const options = JSON.parse(process.argv[2]) as FleetChildOptions;
  const running = await startHostedGateway({
    port: 0,
    ...options.store,
    settings: readSettings({ ...FLEET_ENV, ...options.env }),
    agent_dirs: [FIXTURE_AGENTS],
    exclude: [],
    agents_host_port: null,
    allowed_hosts: options.allowed_hosts,
    logger: pino({ level: process.env.HOLON_LOG_LEVEL ?? 'silent' }),
  });
  process.once('SIGTERM', () => void running.close().then(() => process.exit(0)));
  process.stdout.write(`listening ${running.url}\n`);
}
