/**
 * The database work of the reference binding's settle (§6.8) and admission path (§6.1 + §6.2),
 * issued straight through a `pg.Pool`: no HTTP, no Koa, no batching. The SQL is the binding's
 * own statements (`APPLY_SQL` with the operation `settleOp` builds; `RESOLVE_SQL`,
 * `FIGURES_SQL`), prepared by name on each connection as the binding prepares them, one call per
 * request, so what this path reaches is the ceiling of one request at a time on the machine,
 * and the ratio over HTTP compares like with like.
 */
import pg from 'pg';
import { RESOLVE_SQL } from '../../src/clearing/accounts.ts';
import { FIGURES_SQL } from '../../src/clearing/ledger.ts';
import { settleOp } from '../../src/clearing/settlements.ts';
import { opsText } from '../../src/clearing/ledger-op.ts';
import { APPLY_SQL } from '../../src/clearing/write-path.ts';

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

  /** settle as the binding runs it with group commit off: one `clearing_apply` call. Returns whether it applied; throws on a refusal. */
  async settle(terms: SettleTerms): Promise<boolean> {
    const result = await this.pool.query({ ...APPLY_SQL, values: [opsText([settleOp(terms)])] });
    const [outcome] = result.rows[0].outcomes;
    if (outcome.error) throw new Error(`direct settle ${terms.txnId} was refused: ${JSON.stringify(outcome.error)}`);
    return outcome.applied === true;
  }

  /** resolve-account then read-balance, as the binding runs them: two pooled statements. Returns the balance. */
  async admission(agentKey: string): Promise<number> {
    const link = await this.pool.query({ ...RESOLVE_SQL, values: [agentKey] });
    const figures = await this.pool.query({ ...FIGURES_SQL, values: [link.rows[0].account] });
    return Number(figures.rows[0].balance);
  }

  /** Closes the pool. */
  close(): Promise<void> {
    return this.pool.end();
  }
}
