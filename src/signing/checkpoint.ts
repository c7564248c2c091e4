/**
 * Signed checkpoints of the journal's hash chain (issue 23 §3), by the gateway's {@link Signer}
 * (one signing mechanism: the same keys, the same JWKS as mandates and receipts). A checkpoint is
 * `{size, head, signed_at}`: `size` entries chained, `head` the hash at that position
 * (`src/clearing/sql/clearing_chain_append.sql`), and a compact JWS of type
 * `holon-checkpoint+jwt` over the canonical JSON of those claims with `sub` `journal`, `iss` and
 * `iat`. `verifyCheckpoint` of `clients/src/verify.ts` checks one with nothing but the JWKS;
 * `holon audit --checkpoint` then checks that the journal still extends it.
 */
import { CHECKPOINT_SUB, CHECKPOINT_TYP, type CheckpointClaims } from '../../clients/src/verify.ts';
import type { Signer } from './signer.ts';

/** A point of the journal's chain: how many entries it holds and the hash of the last (null when empty). */
export interface ChainPoint {
  /** Entries chained, 0 or more. */
  size: number;
  /** SHA-256 (lower-case hex) at position `size`; null when `size` is 0. */
  head: string | null;
}

/** A checkpoint as served: the point, when it was signed (ISO 8601), and the JWS whose claims carry the same three. */
export interface SignedCheckpoint extends ChainPoint {
  signed_at: string;
  jws: string;
}

/** Signs `point` with `signer`, as of `signed_at` (ISO 8601, default now). */
export async function signCheckpoint(signer: Signer, point: ChainPoint, signed_at: string = new Date().toISOString()): Promise<SignedCheckpoint> {
  const claims: Omit<CheckpointClaims, 'iss' | 'iat'> = { sub: CHECKPOINT_SUB, size: point.size, head: point.head, signed_at };
  return { size: point.size, head: point.head, signed_at, jws: await signer.sign({ ...claims }, CHECKPOINT_TYP) };
}
