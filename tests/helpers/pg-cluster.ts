/**
 * A replicated PostgreSQL for the failover test (issue 27 §2), run by pg_auto_failover (Debian
 * `postgresql-15-auto-failover`, `pg-auto-failover-cli`): a monitor and two keeper-managed nodes
 * (a primary and a standby), in a temporary directory, on free loopback ports, `--auth trust
 * --no-ssl`. The monitor's health checks are tuned from tens of seconds down to about a second,
 * so a failover takes seconds. pg_autoctl refuses to run as root: as root every command runs as
 * the `postgres` user (`runuser`), as the CI's throwaway server does.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { closedPort } from './cli.ts';
import { waitFor } from './gateway.ts';
import { asRoot, pgBin, postgresTempDir } from './pg-server.ts';

/** Why pg_autoctl cannot run here (not installed), or null when it can. */
export function missingPgAutoctl(): string | null {
  const bin = pgBin();
  const pathVar = `${bin ?? ''}:${process.env.PATH}`;
  const found = spawnSync('sh', ['-c', 'command -v pg_autoctl'], { encoding: 'utf8', env: { ...process.env, PATH: pathVar } }).status === 0;
  return found ? null : 'pg_autoctl is not installed: apt-get install postgresql-15-auto-failover pg-auto-failover-cli (.ci/run does)';
}

/** The monitor's settings: detection in about 2 s, a promotion that waits at most 3 s for the old primary to step down. */
const MONITOR_SETTINGS: Record<string, number> = {
  health_check_period: 1000,
  health_check_timeout: 1000,
  health_check_retry_delay: 500,
  health_check_max_retries: 1,
  node_considered_unhealthy_timeout: 2000,
  primary_demote_timeout: 3000,
};

/** One node of the cluster. */
export interface ClusterNode {
  name: string;
  port: number;
  pgdata: string;
}

/** A running cluster. */
export interface PgCluster {
  nodes: ClusterNode[];
  /** The libpq multi-host URL of database `db` (as `pg_autoctl show uri` writes it, TLS off on loopback). */
  url(db: string): string;
  /** Waits (at most `timeout_ms`) until one node is primary and the other secondary, both as the monitor assigned; answers the primary. */
  healthy(timeout_ms?: number): Promise<ClusterNode>;
  /** `kill -9` of the primary's postmaster (its keeper stays, as after a crash of the server alone); answers that node. */
  killPrimary(): Promise<ClusterNode>;
  /** Whether the primary waits for the standby at commit: synchronous (replication-quorum true, the default) or asynchronous. */
  setSynchronous(synchronous: boolean): Promise<void>;
  /** The monitor's events (`pgautofailover.event`) since `since`, one line each (time, node, reported and goal state, LSN, description): what the engine did, for a report. */
  events(since: Date): Promise<string[]>;
  stop(): Promise<void>;
}

/** Starts a monitor and two nodes; resolves once the standby is secondary. Throws (after stopping what started) on failure. */
export async function startPgCluster(): Promise<PgCluster> {
  const bin = pgBin();
  const dir = await postgresTempDir('holon-pgaf-');
  const env = { PATH: `${bin}:${process.env.PATH}`, XDG_CONFIG_HOME: path.join(dir, 'config'), XDG_DATA_HOME: path.join(dir, 'data'), PGHOST: '127.0.0.1' };
  const command = (args: string[]): [string, string[]] => (asRoot ? ['runuser', ['-u', 'postgres', '--', 'env', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), 'pg_autoctl', ...args]] : ['pg_autoctl', args]);
  const autoctl = (args: string[]) =>
    new Promise<string>((resolve, reject) => {
      const [file, argv] = command(args);
      const child = spawn(file, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (chunk) => (out += chunk));
      child.stderr.on('data', (chunk) => (out += chunk));
      child.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`pg_autoctl ${args.join(' ')} exited ${code}: ${out.slice(-2000)}`))));
    });
  const runners: ChildProcess[] = [];
  const run = (pgdata: string) => {
    const [file, argv] = command(['run', '--pgdata', pgdata]);
    runners.push(spawn(file, argv, { env: { ...process.env, ...env }, stdio: 'ignore' }));
  };
  const monitorPort = await closedPort();
  const monitorData = path.join(dir, 'monitor');
  const nodes: ClusterNode[] = [];
  for (const name of ['node1', 'node2']) nodes.push({ name, port: await closedPort(), pgdata: path.join(dir, name) });
  const monitorUrl = `postgres://autoctl_node@127.0.0.1:${monitorPort}/pg_auto_failover?sslmode=disable`;
  const monitorQuery = async (text: string) => {
    const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${monitorPort}/pg_auto_failover` });
    await client.connect();
    try {
      return (await client.query(text)).rows;
    } finally {
      await client.end();
    }
  };

  const stop = async () => {
    for (const pgdata of [...nodes.map((node) => node.pgdata), monitorData]) await autoctl(['stop', '--pgdata', pgdata, '--immediate']).catch(() => {});
    for (const runner of runners) runner.kill('SIGKILL');
    // A postmaster the stop left running (its keeper killed first) would keep writing into the directory.
    for (const pgdata of [...nodes.map((node) => node.pgdata), monitorData]) {
      const pid = Number((await readFile(path.join(pgdata, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0]);
      if (pid > 0) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
    }
    await rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  };

  const roles = async () => {
    const rows = await monitorQuery('SELECT nodename, reportedstate, goalstate FROM pgautofailover.node');
    return new Map(rows.map((row) => [row.nodename as string, row.reportedstate === row.goalstate ? (row.reportedstate as string) : 'moving']));
  };
  const healthy = async (timeout_ms = 60_000) => {
    const name = await waitFor(async () => {
      const states = await roles().catch(() => new Map<string, string>());
      const primary = [...states].find(([, state]) => state === 'primary')?.[0];
      return primary && [...states.values()].filter((state) => state === 'secondary').length === 1 ? primary : null;
    }, timeout_ms);
    return nodes.find((node) => node.name === name)!;
  };

  try {
    await autoctl(['create', 'monitor', '--pgdata', monitorData, '--pgport', String(monitorPort), '--hostname', '127.0.0.1', '--auth', 'trust', '--no-ssl']);
    run(monitorData);
    await waitFor(() => monitorQuery('SELECT 1').then(() => true, () => false), 30_000);
    for (const [name, value] of Object.entries(MONITOR_SETTINGS)) await monitorQuery(`ALTER SYSTEM SET pgautofailover.${name} TO ${value}`);
    await monitorQuery('SELECT pg_reload_conf()');
    for (const node of nodes) {
      await autoctl(['create', 'postgres', '--pgdata', node.pgdata, '--pgport', String(node.port), '--hostname', '127.0.0.1', '--name', node.name, '--auth', 'trust', '--no-ssl', '--pg-hba-lan', '--monitor', monitorUrl]);
      run(node.pgdata);
      if (node === nodes[0]) await waitFor(async () => (await roles().catch(() => new Map())).get(node.name) === 'single', 60_000);
    }
    await healthy();
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    nodes,
    url: (db) => `postgres://postgres@${nodes.map((node) => `127.0.0.1:${node.port}`).join(',')}/${db}?target_session_attrs=read-write&sslmode=disable`,
    healthy,
    async killPrimary() {
      const primary = await healthy();
      const pid = Number((await readFile(path.join(primary.pgdata, 'postmaster.pid'), 'utf8')).split('\n')[0]);
      process.kill(pid, 'SIGKILL');
      return primary;
    },
    async setSynchronous(synchronous) {
      // On the standby: whether it counts in the primary's synchronous_standby_names (pg_autoctl "replication-quorum").
      const primary = await healthy();
      const standby = nodes.find((node) => node !== primary)!;
      await autoctl(['set', 'node', 'replication-quorum', String(synchronous), '--pgdata', standby.pgdata]);
      await waitFor(async () => {
        const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${primary.port}/postgres` });
        await client.connect();
        try {
          const names = (await client.query('SHOW synchronous_standby_names')).rows[0].synchronous_standby_names as string;
          return (names !== '') === synchronous;
        } finally {
          await client.end();
        }
      }, 30_000);
    },
    async events(since) {
      const rows = await monitorQuery(`SELECT eventtime, nodename, reportedstate, goalstate, reportedlsn, description FROM pgautofailover.event WHERE eventtime >= '${since.toISOString()}' ORDER BY eventid`);
      return rows.map((row) => `${new Date(row.eventtime).toISOString()} ${row.nodename} ${row.reportedstate} -> ${row.goalstate} lsn ${row.reportedlsn}: ${row.description}`);
    },
    stop,
  };
}
