/**
 * A lone throwaway PostgreSQL server for tests that change what the shared test server must keep:
 * Debian's binaries, `initdb` into a temporary directory, a free loopback port, trust auth, no
 * replication. `tests/fleet/durable-read.test.ts` names a synchronous standby that never comes, so
 * every commit that wrote WAL waits for it, as on an old primary whose standby is gone. As root
 * every command runs as the `postgres` user (`runuser`), as the CI's own server does.
 */
import { spawnSync } from 'node:child_process';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { closedPort } from './cli.ts';

/** The directory of Debian's PostgreSQL binaries (the newest installed), or null. */
export function pgBin(): string | null {
  const found = spawnSync('sh', ['-c', 'ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1'], { encoding: 'utf8' }).stdout.trim();
  return found || null;
}

/** Whether this process runs as root: PostgreSQL's programs then run as the `postgres` user (`runuser`), which refuses root. */
export const asRoot = process.getuid?.() === 0;

/** A new temporary directory named `prefix…` that the user PostgreSQL's programs run as can write into. */
export async function postgresTempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  if (asRoot) await chown(dir, Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout), Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout));
  return dir;
}

/** A running lone server. */
export interface LonePostgres {
  /** The URL of database `db` on it, as the superuser `postgres`. */
  url(db?: string): string;
  /** Sets a server-wide setting (`ALTER SYSTEM`, then a reload); null resets it. Answers once a new session sees it. */
  set(name: string, value: string | null): Promise<void>;
  /** Stops the server at once (`immediate`: a commit waiting for a standby cannot stop a fast shutdown) and removes its directory. */
  stop(): Promise<void>;
}

/** Starts a lone server; throws (after cleaning up) when PostgreSQL's binaries are missing or it does not start. */
export async function startLonePostgres(): Promise<LonePostgres> {
  const bin = pgBin();
  if (!bin) throw new Error("PostgreSQL's binaries are not installed: apt-get install postgresql (.ci/run does)");
  const dir = await postgresTempDir('holon-pg-');
  const run = (program: string, args: string[]) => {
    const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', path.join(bin, program), ...args]] : [path.join(bin, program), args];
    const result = spawnSync(file, argv, { encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`${program} ${args.join(' ')} exited ${result.status}: ${(result.stdout + result.stderr).slice(-2000)}`);
  };
  const data = path.join(dir, 'data');
  const port = await closedPort();
  const stop = async () => {
    try {
      run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    } catch {
      // Never started, or already stopped.
    }
    await rm(dir, { recursive: true, force: true });
  };
  try {
    run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale']);
    run('pg_ctl', ['-D', data, '-l', path.join(dir, 'log'), '-w', '-t', '30', 'start', '-o', `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir}`]);
  } catch (error) {
    await stop();
    throw error;
  }
  const url = (db = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${db}`;
  const query = async (text: string) => {
    const client = new pg.Client({ connectionString: url() });
    await client.connect();
    try {
      return (await client.query(text)).rows;
    } finally {
      await client.end();
    }
  };
  return {
    url,
    async set(name, value) {
      // ALTER SYSTEM writes postgresql.auto.conf, no WAL: it never waits for a standby itself.
      await query(value === null ? `ALTER SYSTEM RESET ${name}` : `ALTER SYSTEM SET ${name} TO ${pg.Client.prototype.escapeLiteral(value)}`);
      await query('SELECT pg_reload_conf()');
      const want = value ?? '';
      for (let i = 0; i < 100 && (await query(`SHOW ${name}`))[0][name] !== want; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    },
    stop,
  };
}
