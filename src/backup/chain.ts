/**
 * The journal's hash chain as the reference binding computes it in SQL (issue 23 §3), recomputed
 * here for `holon audit` with the `canonicalize` library (RFC 8785) and node's SHA-256. Two link
 * formats, one chain: migration 020's links each hold one entry (`clearing_journal_chain`), and
 * since migration 026 a link holds the entries of one transaction (`clearing_journal_batches`,
 * a group-commit batch). Positions count entries in both, so a checkpoint's `size` is a number of
 * entries whichever format chained them.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/** SHA-256 (hex) of `parts`, in order. */
const sha256 = (...parts: Array<Buffer | string>) => parts.reduce((h, part) => h.update(part), createHash('sha256')).digest();

/** RFC 6962 §2.1's prefixes: a leaf is hashed after the byte 0x00, an inner node after 0x01. */
const LEAF = Buffer.from([0]);
const NODE = Buffer.from([1]);

/**
 * A one-entry link of migration 020 (`clearing_chain_append`, migrations 020 and 025): SHA-256
 * (hex) of the canonical JSON of `{entry, prev}`. `entry`: the journal entry as the audit reads it
 * (txn_id, door, account, amount as decimal text, terms, reverses, hold_id, reason, actor, ref,
 * memo, simulated, postings `[{account, delta, kind}]` with delta as decimal text); `prev`: the
 * hash of the link before, null for the first.
 */
export function chainHash(entry: unknown, prev: string | null): string {
  return sha256(canonicalize({ entry, prev })!).toString('hex');
}

/** An entry's leaf in a batch link (`clearing_chain_batch.sql`): SHA-256 (hex) of 0x00 and the entry's canonical JSON (the `entry` of {@link chainHash}). */
export function entryLeaf(entry: unknown): string {
  return sha256(LEAF, canonicalize(entry)!).toString('hex');
}

/**
 * The Merkle tree hash (RFC 6962 §2.1) of `leaves` (hex leaf hashes, at least one, in order), as
 * hex: the root of a tree whose left subtree holds the largest power of two of leaves below their
 * number. Computed with a stack of the complete subtrees so far, at most log2(n) + 1 hashes.
 */
export function merkleRoot(leaves: readonly string[]): string {
  if (leaves.length === 0) throw new Error('a batch link holds at least one entry');
  const stack: Array<{ hash: Buffer; leaves: number }> = [];
  for (const leaf of leaves) {
    let node = { hash: Buffer.from(leaf, 'hex'), leaves: 1 };
    while (stack.length > 0 && stack.at(-1)!.leaves === node.leaves) {
      const left = stack.pop()!;
      node = { hash: sha256(NODE, left.hash, node.hash), leaves: left.leaves * 2 };
    }
    stack.push(node);
  }
  let root = stack.pop()!.hash;
  while (stack.length > 0) root = sha256(NODE, stack.pop()!.hash, root);
  return root.toString('hex');
}

/** A batch link's hash (`clearing_chain_batch.sql`): SHA-256 (hex) of the canonical JSON of `{prev, root, size}`, size being the chain's entries up to and including the link's. */
export function batchHash(prev: string | null, root: string, size: number): string {
  return sha256(canonicalize({ prev, root, size })!).toString('hex');
}
