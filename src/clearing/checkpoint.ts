/**
 * The reference binding's checkpoint of its journal's hash chain (issue 23 §3, the binding's own
 * door `GET /internal/ledger/checkpoint`): the chain's current point, read here, signed by the
 * ledger's signer (`src/signing/checkpoint.ts`): the gateway's when the binding runs in the
 * gateway's process, else the binding's own keys in its own database.
 */
import type { Knex } from 'knex';
import { int } from '../db/index.ts';
import { signCheckpoint, type ChainPoint, type SignedCheckpoint } from '../signing/checkpoint.ts';
import type { Signer } from '../signing/signer.ts';

/** The chain's current point, read on `db` (a knex or a transaction): its last batch link (migration 026), else its last one-entry link (migration 020). */
export async function readChainPoint(db: Knex | Knex.Transaction): Promise<ChainPoint> {
  const row =
    (await db('clearing_journal_batches').orderBy('position', 'desc').first('position', 'hash')) ??
    (await db('clearing_journal_chain').orderBy('position', 'desc').first('position', 'hash'));
  return row ? { size: int(row.position), head: row.hash } : { size: 0, head: null };
}

/** Reads the chain's point on `db` and signs it now with `signer`. */
export async function signedCheckpoint(db: Knex, signer: Signer): Promise<SignedCheckpoint> {
  return signCheckpoint(signer, await readChainPoint(db));
}
