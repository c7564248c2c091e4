/**
 * Connections to the primary of a replicated PostgreSQL (issue 27 §2): a URL may name several
 * hosts, `postgres://user@h1:5432,h2:5433/db?target_session_attrs=read-write`, as libpq and
 * pg_auto_failover's `pg_autoctl show uri` write it. node-postgres takes one host, so each new
 * connection tries the hosts in turn (the last one that accepted writes first) and keeps the
 * first whose session accepts writes (`SHOW transaction_read_only` is `off`, the test libpq's
 * `target_session_attrs=read-write` makes); a standby, or a promoted node still fenced read-only
 * by the failover engine, is closed and skipped. A URL with one host is checked the same way, so
 * an old primary restarted as a standby on the same port is never written to.
 *
 * Bounds: at most {@link MAX_HOSTS} hosts; each is given `connect_timeout_ms` to connect and
 * answer (default {@link CONNECT_TIMEOUT_MS}), so one connection attempt takes at most
 * hosts × that. When no host accepts writes it throws {@link DatabaseUnavailable}.
 */
import pg from 'pg';
import { DatabaseUnavailable } from './unavailable.ts';

/** The most hosts one URL may name. */
export const MAX_HOSTS = 16;

/** How long one host is given to connect and answer whether it accepts writes, in milliseconds. */
export const CONNECT_TIMEOUT_MS = 5_000;

/** One host of a URL. */
export interface HostPort {
  host: string;
  port: number;
}

/** A URL split into its hosts and a one-host URL for each (`target_session_attrs` removed: this module does that job). */
export interface ParsedUrl {
  hosts: HostPort[];
  /** The one-host URL of `hosts[i]`: same user, password, database and other parameters. */
  urlOf(host: HostPort): string;
}

const URL_SHAPE = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/;

/**
 * Splits a PostgreSQL URL into its hosts (`h1:p1,h2:p2`, a bracketed IPv6 address, a missing
 * port meaning 5432). Throws an Error naming what is wrong (no host, a bad port, more than
 * {@link MAX_HOSTS} hosts, `target_session_attrs` other than `read-write` or `any`).
 */
export function parseHosts(url: string): ParsedUrl {
  const match = URL_SHAPE.exec(url);
  if (!match) throw new Error('not a postgres:// or postgresql:// URL');
  const [, scheme, userinfo = '', hostList, tail] = match;
  const hosts = hostList.split(',').map((item): HostPort => {
    const one = /^(\[[^\]]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(item);
    if (!one) throw new Error(`the host ${JSON.stringify(item)} is not host or host:port`);
    const port = one[2] === undefined ? 5432 : Number(one[2]);
    if (port < 1 || port > 65_535) throw new Error(`the port of ${JSON.stringify(item)} is outside 1 to 65535`);
    return { host: one[1], port };
  });
  if (hosts.length > MAX_HOSTS) throw new Error(`the URL names ${hosts.length} hosts; at most ${MAX_HOSTS}`);
  const [path, query = ''] = tail.split('?', 2);
  const params = new URLSearchParams(query);
  const attrs = params.get('target_session_attrs');
  if (attrs !== null && attrs !== 'read-write' && attrs !== 'any') {
    throw new Error(`target_session_attrs=${attrs} is not supported: Holon always writes, so it connects to the host that accepts writes (read-write)`);
  }
  params.delete('target_session_attrs');
  const rest = `${path}${params.size > 0 ? `?${params}` : ''}`;
  return { hosts, urlOf: (host) => `${scheme}${userinfo}${host.host}:${host.port}${rest}` };
}

/**
 * Opens pg clients on the primary of one URL, remembering which host was the primary last, so
 * the common case costs one connection and one `SHOW`.
 */
export class PrimaryConnector {
  private readonly parsed: ParsedUrl;
  /** Index into `hosts` of the host that accepted writes last: tried first. */
  private last = 0;

  constructor(
    url: string,
    /** Settings passed to every `pg.Client` besides its connection string (e.g. `application_name`). */
    private readonly settings: pg.ClientConfig = {},
    private readonly connect_timeout_ms = CONNECT_TIMEOUT_MS,
  ) {
    this.parsed = parseHosts(url);
  }

  /** The hosts, as `host:port`, in the URL's order. */
  get hosts(): string[] {
    return this.parsed.hosts.map((host) => `${host.host}:${host.port}`);
  }

  /**
   * A connected client whose session accepts writes. Tries each host once, starting with the last
   * primary; throws {@link DatabaseUnavailable} naming what each host answered when none does.
   */
  async connect(): Promise<pg.Client> {
    const { hosts } = this.parsed;
    const answers: string[] = [];
    for (let i = 0; i < hosts.length; i++) {
      const index = (this.last + i) % hosts.length;
      const client = new pg.Client({ ...this.settings, connectionString: this.parsed.urlOf(hosts[index]), connectionTimeoutMillis: this.connect_timeout_ms });
      // An error on an idle client is reported to its owner later; until then it must not crash the process.
      client.on('error', () => {});
      try {
        await client.connect();
        const answer = await client.query({ text: 'SHOW transaction_read_only', query_timeout: this.connect_timeout_ms } as pg.QueryConfig);
        if (answer.rows[0].transaction_read_only === 'off') {
          this.last = index;
          return client;
        }
        answers.push(`${this.hosts[index]} is read-only`);
      } catch (error) {
        answers.push(`${this.hosts[index]}: ${(error as Error).message}`);
      }
      await client.end().catch(() => {});
    }
    throw new DatabaseUnavailable(`no database host accepts writes (${answers.join('; ')})`);
  }
}

/** A pg client as knex's pool keeps it: marked when it fails, so the pool discards it. */
type PooledClient = pg.Client & { __knex__disposed?: unknown };

/**
 * Makes a knex instance of the `pg` client open every connection through `connector` (knex's
 * own `_acquireOnlyConnection`, which takes one host, replaced; the rest of knex's handling
 * kept). A connection that fails or ends is marked as knex marks it, so its pool discards it at
 * the next acquire: after a failover, broken connections are dropped and new ones reach the new
 * primary. Throws when the instance is not of the `pg` client (nothing else is replaced).
 */
export function connectThroughPrimary(client: { dialect?: string; _acquireOnlyConnection?: () => Promise<pg.Client> }, connector: PrimaryConnector): void {
  if (client.dialect !== 'postgresql' || typeof client._acquireOnlyConnection !== 'function') throw new Error('connectThroughPrimary needs a knex instance of the pg client');
  client._acquireOnlyConnection = async () => {
    const connection: PooledClient = await connector.connect();
    connection.on('error', (error) => {
      connection.__knex__disposed = error;
    });
    connection.on('end', () => {
      connection.__knex__disposed ??= 'Connection ended unexpectedly';
    });
    return connection;
  };
}
