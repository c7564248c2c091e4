/**
 * Reading what `holon verify` and `holon audit` check (issue 23): a document file, at most
 * {@link MAX_VERIFY_BYTES}, and the JWKS that verifies it, from a file or fetched from a URL (one
 * request, bounded in time and size). Every refusal is a {@link VerifyRefused} naming the source.
 */
import { readFile } from 'node:fs/promises';
import type { JSONWebKeySet } from 'jose';

/** The most bytes read from a JWKS URL or a document file (1 MiB): a JWKS is a few hundred bytes, a receipt tree rarely more than a few kB. */
export const MAX_VERIFY_BYTES = 1_048_576;

/** How long fetching a JWKS URL may take, ms. */
export const JWKS_TIMEOUT_MS = 10_000;

/** A refusal of `holon verify` or of `holon audit`'s JWKS: one line for stderr. */
export class VerifyRefused extends Error {}

/** Reads a file (at most {@link MAX_VERIFY_BYTES}); a missing file is refused, naming it. */
export async function readBounded(file: string, what: string): Promise<string> {
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
export function parseJson(text: string, what: string): any {
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
