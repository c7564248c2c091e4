/**
 * `holon verify mandate FILE [--parent FILE] --jwks URL|FILE` and `holon verify receipt FILE
 * --jwks URL|FILE` (issue 23 §1, §2): checks what a gateway signed, offline but for fetching the
 * JWKS when it is a URL. A FILE is a compact JWS, or the JSON a gateway answered
 * (`GET /v0/mandates/{issuer}/{name}`: `{mandate, jws}`; `GET /v0/receipts/{id}`: the tree), whose
 * JSON must then equal what was signed. With `--parent`, the child mandate must also be no wider
 * than its parent: the attenuation check of gateway §3 (`checkAttenuation`) on the two signed
 * documents. Every refusal is one line naming the document and the reason; exit 1.
 */
import { readFile } from 'node:fs/promises';
import type { JSONWebKeySet } from 'jose';
import { verifyMandate, verifyReceipt, type MandateClaims, type SignedReceiptTree } from '../../clients/src/verify.ts';
import { checkAttenuation } from '../contracts/attenuation.ts';
import { validateMandate } from '../contracts/mandate.ts';

/** The most bytes read from a JWKS URL or a document file (1 MiB): a JWKS is a few hundred bytes, a receipt tree rarely more than a few kB. */
export const MAX_VERIFY_BYTES = 1_048_576;

/** How long fetching a JWKS URL may take, ms. */
export const JWKS_TIMEOUT_MS = 10_000;

/** A refusal of `holon verify`: one line for stderr. */
export class VerifyRefused extends Error {}

/** Reads a file (at most {@link MAX_VERIFY_BYTES}); a missing file is refused, naming it. */
async function readBounded(file: string, what: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new VerifyRefused(`cannot read ${what} ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  if (Buffer.byteLength(text) > MAX_VERIFY_BYTES) throw new VerifyRefused(`${what} ${file} is over ${MAX_VERIFY_BYTES} bytes`);
  return text.trim();
}

/** Parses JSON or refuses, naming the source. */
function parseJson(text: string, what: string): any {
  try {
    return JSON.parse(text);
  } catch {
    throw new VerifyRefused(`${what} is neither a compact JWS nor JSON`);
  }
}

/** The JWKS at `source`: an http(s) URL (fetched once, bounded in time and size) or a file. */
export async function loadJwks(source: string): Promise<JSONWebKeySet> {
  let text: string;
  if (/^https?:\/\//.test(source)) {
    const response = await fetch(source, { signal: AbortSignal.timeout(JWKS_TIMEOUT_MS) }).catch((error: Error) => {
      throw new VerifyRefused(`cannot fetch the JWKS ${source}: ${error.message}`);
    });
    if (!response.ok) throw new VerifyRefused(`the JWKS ${source} answered ${response.status}`);
    text = await response.text();
    if (Buffer.byteLength(text) > MAX_VERIFY_BYTES) throw new VerifyRefused(`the JWKS ${source} is over ${MAX_VERIFY_BYTES} bytes`);
  } else {
    text = await readBounded(source, 'the JWKS');
  }
  const jwks = parseJson(text, `the JWKS ${source}`);
  if (!jwks || !Array.isArray(jwks.keys)) throw new VerifyRefused(`the JWKS ${source} has no "keys" array`);
  return jwks;
}

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
