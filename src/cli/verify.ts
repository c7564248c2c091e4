/**
 * `holon verify mandate FILE [--parent FILE] --jwks URL|FILE` and `holon verify receipt FILE
 * --jwks URL|FILE` (issue 23 §1, §2): checks what a gateway signed, offline but for fetching the
 * JWKS when it is a URL. A FILE is a compact JWS, or the JSON a gateway answered
 * (`GET /v0/mandates/{issuer}/{name}`: `{mandate, jws}`; `GET /v0/receipts/{id}`: the tree), whose
 * JSON must then equal what was signed. With `--parent`, the child mandate must also be no wider
 * than its parent: the attenuation check of gateway §3 (`checkAttenuation`) on the two signed
 * documents. Every refusal is one line naming the document and the reason; exit 1.
 */
import { loadJwks, parseJson, readBounded, VerifyRefused } from '../signing/sources.ts';
import { verifyMandate, verifyReceipt, type MandateClaims, type SignedReceiptTree } from '../../clients/src/verify.ts';
import { checkAttenuation } from '../contracts/attenuation.ts';
import { validateMandate } from '../contracts/mandate.ts';

const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** A mandate file: a compact JWS alone, or `{mandate, jws}` as `GET /v0/mandates/{issuer}/{name}` answers (or a receipt's `sub_mandate_jws`). */
async function mandateFile(file: string): Promise<{ jws: string; json?: unknown }> {
  const text = await readBounded(file, 'the mandate');
  if (COMPACT_JWS.test(text)) return { jws: text };
  const body = parseJson(text, `the mandate ${file}`);
  const jws = body?.jws ?? body?.sub_mandate_jws;
  if (typeof jws !== 'string') throw new VerifyRefused(`the mandate ${file} carries no "jws": save the answer of GET /v0/mandates/{issuer}/{name}`);
  return body?.mandate === undefined ? { jws } : { jws, json: body.mandate };
}

/** Verifies a mandate file, with `parent` also its attenuation; answers the line to print. Throws {@link VerifyRefused} or the client's VerificationError. */
export async function verifyMandateFiles(file: string, options: { jwks: string; parent?: string; now?: Date }): Promise<string> {
  const jwks = await loadJwks(options.jwks);
  const child = await mandateFile(file);
  const claims = await verifyMandate(child.jws, jwks, { json: child.json, now: options.now });
  const signed = `mandate ${claims.sub}: signed by ${claims.iss} at ${new Date(claims.iat * 1000).toISOString()}${claims.exp ? `, valid until ${new Date(claims.exp * 1000).toISOString()}` : ''}`;
  if (!options.parent) return signed;
  const parentFile = await mandateFile(options.parent);
  const parent: MandateClaims = await verifyMandate(parentFile.jws, jwks, { json: parentFile.json, now: options.now });
  if (claims.iss !== parent.iss) throw new VerifyRefused(`mandate ${claims.sub} was issued by ${claims.iss}, its parent ${parent.sub} by ${parent.iss}`);
  let widening;
  try {
    widening = checkAttenuation(validateMandate(parent.mandate), validateMandate(claims.mandate));
  } catch (error) {
    throw new VerifyRefused(`mandate ${claims.sub} or ${parent.sub} is not a valid mandate: ${(error as Error).message}`);
  }
  if (widening) throw new VerifyRefused(`mandate ${claims.sub} widens its parent ${parent.sub} at ${widening.field}: ${widening.reason}`);
  return `${signed}; no wider than its parent ${parent.sub}`;
}

/** Verifies a receipt tree file (`GET /v0/receipts/{id}` saved); answers the line to print. */
export async function verifyReceiptFile(file: string, options: { jwks: string; now?: Date }): Promise<string> {
  const jwks = await loadJwks(options.jwks);
  const tree = parseJson(await readBounded(file, 'the receipt'), `the receipt ${file}`) as SignedReceiptTree;
  if (!tree || typeof tree.id !== 'string') throw new VerifyRefused(`the receipt ${file} is not a receipt tree: save the answer of GET /v0/receipts/{id}`);
  const { receipts } = await verifyReceipt(tree, jwks, { now: options.now });
  return `receipt ${tree.id}: ${receipts} receipt${receipts === 1 ? '' : 's'} signed and whole`;
}
