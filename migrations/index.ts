/**
 * The knex migration source: every migration of this folder, in name order. Used by
 * `openDatabase` on PGlite and on Postgres alike, so both always have the same schema.
 */
import type { Knex } from 'knex';
import * as clearingLedger from './001_clearing_ledger.ts';
import * as gateway from './002_gateway.ts';
import * as gatewayIdentity from './003_gateway_identity.ts';
import * as gatewayHardening from './004_gateway_hardening.ts';
import * as clearingWritePath from './005_clearing_write_path.ts';
import * as hosted from './006_hosted.ts';
import * as gatewayProcesses from './007_gateway_processes.ts';
import * as outboxClaims from './008_outbox_claims.ts';
import * as endpointCredentials from './010_endpoint_credentials.ts';
import * as publishing from './011_publishing.ts';
import * as filesEvaluations from './012_files_evaluations.ts';
import * as mandateBudgetFigures from './013_mandate_budget_figures.ts';
import * as clearingWritePathCost from './014_clearing_write_path_cost.ts';
import * as clearingBatchLocks from './015_clearing_batch_locks.ts';
import * as approvalInputHash from './016_approval_input_hash.ts';
import * as mcpSessions from './018_mcp_sessions.ts';
import * as sharedProcessState from './019_shared_process_state.ts';
import * as journalChain from './020_journal_chain.ts';
import * as signingKeys from './021_signing_keys.ts';
import * as journalChainCost from './025_journal_chain_cost.ts';
import * as journalChainBatches from './026_journal_chain_batches.ts';
import * as journalTermsText from './027_journal_terms_text.ts';
import * as journalChainLockLate from './028_journal_chain_lock_late.ts';

/** A migration module: `up` applies it, `down` undoes it. */
export interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

const migrations: Record<string, Migration> = {
  '001_clearing_ledger': clearingLedger,
  '002_gateway': gateway,
  '003_gateway_identity': gatewayIdentity,
  '004_gateway_hardening': gatewayHardening,
  '005_clearing_write_path': clearingWritePath,
  '006_hosted': hosted,
  '007_gateway_processes': gatewayProcesses,
  '008_outbox_claims': outboxClaims,
  '010_endpoint_credentials': endpointCredentials,
  '011_publishing': publishing,
  '012_files_evaluations': filesEvaluations,
  '013_mandate_budget_figures': mandateBudgetFigures,
  '014_clearing_write_path_cost': clearingWritePathCost,
  '015_clearing_batch_locks': clearingBatchLocks,
  '016_approval_input_hash': approvalInputHash,
  '018_mcp_sessions': mcpSessions,
  '019_shared_process_state': sharedProcessState,
  '020_journal_chain': journalChain,
  '021_signing_keys': signingKeys,
  '025_journal_chain_cost': journalChainCost,
  '026_journal_chain_batches': journalChainBatches,
  '027_journal_terms_text': journalTermsText,
  '028_journal_chain_lock_late': journalChainLockLate,
};

/** knex's `migrationSource` over the table above. */
export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name],
};
