/**
 * `holon audit` as one call (issue 23 §3): opens the source (a backup with `in`, else the live
 * database), verifies the kept checkpoint's signature when one is given, runs the audit, and
 * answers the line to print and whether the books passed. A refusal before the audit (a missing
 * file, a checkpoint that does not verify, `--checkpoint` without `--jwks`) is a failed line too.
 */
import { readFile } from 'node:fs/promises';
import { verifyCheckpoint } from '../../clients/src/verify.ts';
import type { ChainPoint } from '../signing/checkpoint.ts';
import { loadJwks } from '../signing/sources.ts';
import { audit, type AuditReport } from './audit.ts';
import { openBackupSource, openLiveSource } from './audit-source.ts';

/** The options of `holon audit`: `in` a backup file, else `db` (a PGlite data directory) or `DATABASE_URL`; a `checkpoint` file and the `jwks` (a URL or a file). */
export interface AuditOptions {
  in?: string;
  db: string;
  checkpoint?: string;
  jwks?: string;
}

/** Reads `file` as JSON; throws a sentence naming it. */
async function readJson(file: string, what: string): Promise<any> {
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new Error(`cannot read the ${what} ${file}: ${error.code ?? error.message}`);
  });
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`the ${what} ${file} is not JSON`);
  }
}

/**
 * The checkpoint of `options.checkpoint`, its signature verified with `options.jwks` (the
 * gateway's keys, fetched from its URL or read from a saved copy: a retired key still listed
 * verifies what it signed); null without one. Throws the client's `VerificationError` sentence
 * (a key not in the JWKS, an edited checkpoint) or the JWKS's refusal.
 */
async function keptCheckpoint(options: AuditOptions): Promise<ChainPoint | null> {
  if (!options.checkpoint) return null;
  if (!options.jwks) throw new Error('--checkpoint needs --jwks: a checkpoint counts only once its signature is checked');
  const kept = await readJson(options.checkpoint, 'checkpoint');
  if (typeof kept?.jws !== 'string') throw new Error(`the checkpoint ${options.checkpoint} has no jws: keep the whole answer of GET /v0/journal/checkpoint or GET /internal/ledger/checkpoint`);
  const { size, head } = await verifyCheckpoint(kept.jws, await loadJwks(options.jwks));
  return { size, head };
}

/** The line `holon audit` prints for `report`. */
export function reportLine(report: AuditReport): string {
  const { failure, chain } = report;
  if (failure === null) {
    return `audit passed: ${chain.size} entries chained (head ${chain.head ?? 'none'}), ${report.accounts} accounts equal to their postings, ${report.settled_receipts} billed receipts settled exactly once`;
  }
  const where = failure.entry === null ? '' : ` at entry ${failure.entry}${failure.position === null ? '' : ` (position ${failure.position})`}`;
  return `audit failed${where}: ${failure.reason}`;
}

/** Runs `holon audit` with `options`; answers the line to print and whether the books passed. */
export async function runAudit(options: AuditOptions): Promise<{ line: string; ok: boolean; report: AuditReport | null }> {
  let checkpoint: ChainPoint | null;
  let opened;
  try {
    checkpoint = await keptCheckpoint(options);
    opened = options.in ? await openBackupSource(options.in) : await openLiveSource(options.db);
  } catch (error) {
    return { line: `audit refused: ${(error as Error).message.split('\n')[0]}`, ok: false, report: null };
  }
  try {
    const report = await audit(opened.source, checkpoint);
    return { line: reportLine(report), ok: report.failure === null, report };
  } finally {
    await opened.close();
  }
}
