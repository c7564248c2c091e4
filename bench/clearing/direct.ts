/**
 * The database work of the reference binding's settle (§6.8) and admission path (§6.1 + §6.2),
 * issued straight through a `pg.Pool`: no HTTP, no Koa, no knex. The SQL is the text knex emits
 * for `src/clearing/settlements.ts` `settle` (via `post`, `lockAccounts`, `findTransaction`,
 * `postEntry` in `ledger.ts`) and for `accounts.ts` `resolveAccount` + `readBalance` (via
 * `readFigures`), statement for statement, transaction for transaction; the
 * statements were captured from knex's `query` event. What this path reaches is the ceiling of
 * the design on the machine: everything the binding adds on top of it is overhead.
 */
import pg from 'pg';

/** settle's statements, in order, inside one transaction (ledger.ts `inTransaction`). */
const SQL = {
  lockAccounts: 'select "id" from "clearing_accounts" where "id" in ($1, $2) order by "id" asc for update',
  findTransaction: 'select * from "clearing_transactions" where "txn_id" = $1 limit $2',
  insertTransaction:
    'insert into "clearing_transactions" ("account", "amount", "door", "memo", "ref", "terms", "txn_id") values ($1, $2, $3, DEFAULT, DEFAULT, $4, $5)',
  insertPostings:
    'insert into "clearing_postings" ("account", "delta", "kind", "txn_id") values ($1, $2, $3, $4), ($5, $6, $7, $8), ($9, $10, $11, $12)',
  resolveAccount: 'select "account" from "clearing_agent_links" where "agent_key" = $1 limit $2',
  readFigures: `select "kind", "balance", (SELECT coalesce(sum(amount - drawn), 0)::bigint FROM clearing_holds h
          WHERE h.account = clearing_accounts.id AND h.status = 'open' AND h.expires_at > clock_timestamp()) AS reserved from "clearing_accounts" where "id" = $1 limit $2`,
} as const;

/** The terms of one settlement (§6.8), amounts in micro-units. */
export interface SettleTerms {
  txnId: string;
  caller: string;
  owner: string;
  rate: number;
  retail: number;
}

/** The same SQL as the binding, over a pool of up to `connections` connections. */
export class DirectLedger {
  private readonly pool: pg.Pool;

  /** A pool on `url` (the binding's `DATABASE_URL`). */
  constructor(url: string, connections: number) {
    this.pool = new pg.Pool({ connectionString: url, max: connections });
  }

  /** settle as the binding runs it for a new transaction id: one transaction, six round trips. Returns whether it applied. */
  async settle(terms: SettleTerms): Promise<boolean> {
    const { txnId, caller, owner, rate, retail } = terms;
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN;');
      await client.query(SQL.lockAccounts, [caller, owner].sort());
      const existing = await client.query(SQL.findTransaction, [txnId, 1]);
      if (existing.rowCount === 0) {
        await client.query(SQL.insertTransaction, [caller, retail, 'settle', JSON.stringify({ caller, owner, rate, retail }), txnId]);
        await client.query(SQL.insertPostings, [caller, -retail, 'charge', txnId, owner, rate, 'earn', txnId, 'platform:fees', retail - rate, 'fee', txnId]);
      }
      await client.query('COMMIT;');
      return existing.rowCount === 0;
    } catch (error) {
      await client.query('ROLLBACK;').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** resolve-account then read-balance, as the binding runs them: two pooled queries, no transaction. Returns the balance. */
  async admission(agentKey: string): Promise<number> {
    const link = await this.pool.query(SQL.resolveAccount, [agentKey, 1]);
    const figures = await this.pool.query(SQL.readFigures, [link.rows[0].account, 1]);
    return Number(figures.rows[0].balance);
  }

  /** Closes the pool. */
  close(): Promise<void> {
    return this.pool.end();
  }
}
