/**
 * What the gateway signs (issue 23 §1, §2), with the signer of `src/signing/`: a mandate, over
 * its document, with `exp` its `expires_at` when it has one; and a receipt tree, each receipt
 * over its JSON (gateway §4: never inputs or outputs) and the SHA-256 of each child's JWS, so the
 * root's signature covers the whole tree. Documents are signed when they are read (Ed25519 is
 * deterministic, so nothing needs storing): a receipt's children may settle after it was
 * written (gateway §3), and the tree a caller reads is the one its signature covers. The claim
 * shapes and the checks are `clients/src/verify.ts`, which `holon verify` and `verifyReceipt` run.
 */
import type { Knex } from 'knex';
import { jwsDigest, MANDATE_TYP, RECEIPT_TYP, signedReceiptFields, type MandateClaims, type ReceiptClaims } from '../../clients/src/verify.ts';
import type { Signer } from '../signing/signer.ts';
import type { ReceiptTree } from './receipts.ts';

/** A receipt tree with its signatures: each receipt's `jws`, and `sub_mandate_jws` for one that derived a sub-mandate. */
export type SignedReceiptTree = ReceiptTree & { jws: string; sub_mandate_jws?: string; calls: SignedReceiptTree[] };

/** Signs a mandate document (`expires_at`, an ISO date-time, becomes `exp` in seconds); answers the compact JWS. */
export async function signMandate(signer: Signer, document: Record<string, any>): Promise<string> {
  const claims: Omit<MandateClaims, 'iss' | 'iat'> = { sub: document.id, mandate: document };
  if (typeof document.expires_at === 'string') claims.exp = Math.floor(Date.parse(document.expires_at) / 1000);
  return signer.sign({ ...claims }, MANDATE_TYP);
}

/** The stored document of a mandate (a derived sub-mandate included), or null. */
async function mandateDocumentOf(db: Knex, id: string): Promise<Record<string, any> | null> {
  const row = await db('gateway_mandates').where({ id }).first('document');
  if (!row) return null;
  return typeof row.document === 'string' ? JSON.parse(row.document) : row.document;
}

/**
 * Signs a receipt tree bottom up: each child first, then the receipt over its fields and its
 * children's digests in call order. A receipt with a `sub_mandate` also gets that sub-mandate signed.
 */
export async function signReceiptTree(db: Knex, signer: Signer, tree: ReceiptTree): Promise<SignedReceiptTree> {
  const calls: SignedReceiptTree[] = [];
  for (const child of tree.calls) calls.push(await signReceiptTree(db, signer, child));
  const children = await Promise.all(calls.map(async (call) => ({ id: call.id, sha256: await jwsDigest(call.jws) })));
  const claims: Omit<ReceiptClaims, 'iss' | 'iat'> = { sub: tree.id, receipt: signedReceiptFields(tree), children };
  const signed: SignedReceiptTree = { ...tree, calls, jws: await signer.sign({ ...claims }, RECEIPT_TYP) };
  const sub = tree.sub_mandate ? await mandateDocumentOf(db, tree.sub_mandate) : null;
  if (sub) signed.sub_mandate_jws = await signMandate(signer, sub);
  return signed;
}
