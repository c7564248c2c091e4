/**
 * The hop to a binding that is not co-located (issue 23 §4; clearing-contract §3 and its open
 * question 1): mutual TLS. The binding presents its certificate and asks every caller for one
 * signed by the CA it trusts; a caller without one is answered 403 `not_permitted`, the code the
 * §3 gate refuses with. With TLS set, the authenticated channel stands in for the loopback gate.
 * The settings name PEM files: `HOLON_CLEARING_TLS_CERT`, `HOLON_CLEARING_TLS_KEY` and
 * `HOLON_CLEARING_TLS_CA`, all three or none (the gateway's side reads its own three with the
 * same reader, `src/gateway/clearing.ts`).
 */
import { readFileSync } from 'node:fs';
import type { TLSSocket } from 'node:tls';
import type { Middleware } from 'koa';
import { HttpError } from '../http/errors.ts';

/** A party's side of mutual TLS: its certificate chain and private key, and the CA it trusts for the other side (PEM text). */
export interface MutualTls {
  cert: string;
  key: string;
  ca: string;
}

/** The environment variables that name a {@link MutualTls}'s PEM files, by field. */
export type TlsVariables = Readonly<Record<keyof MutualTls, string>>;

/** The binding's side: `HOLON_CLEARING_TLS_CERT`, `_KEY`, `_CA`. */
export const TLS_VARIABLES = { cert: 'HOLON_CLEARING_TLS_CERT', key: 'HOLON_CLEARING_TLS_KEY', ca: 'HOLON_CLEARING_TLS_CA' } as const satisfies TlsVariables;

/**
 * The mutual TLS the environment names (PEM file paths in the variables `names`, the binding's by
 * default; the gateway reads its own side with other names), or null when none of the three is
 * set. Throws naming a missing one or a file that cannot be read.
 */
export function mutualTlsFromEnv(env: NodeJS.ProcessEnv = process.env, names: TlsVariables = TLS_VARIABLES): MutualTls | null {
  const set = Object.values(names).filter((name) => env[name]);
  if (set.length === 0) return null;
  const missing = Object.values(names).filter((name) => !env[name]);
  if (missing.length > 0) throw new Error(`mutual TLS needs ${Object.values(names).join(', ')} together; ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not set`);
  const read = (name: string) => {
    try {
      return readFileSync(env[name]!, 'utf8');
    } catch (error) {
      throw new Error(`${name}=${env[name]} cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  };
  return { cert: read(names.cert), key: read(names.key), ca: read(names.ca) };
}

/**
 * The access gate of a binding behind mutual TLS: every path but `open` needs a client
 * certificate that the binding's CA signed (the TLS handshake checked it; the server asks for one
 * and lets the handshake finish without, so the refusal is a §7 body, not a dropped connection).
 */
export function mutualTlsGate(open: readonly string[]): Middleware {
  return async (ctx, next) => {
    const socket = ctx.req.socket as TLSSocket;
    if (!open.includes(ctx.path) && socket.authorized !== true) {
      const why = socket.authorizationError ? ` (${String(socket.authorizationError)})` : '';
      throw new HttpError(403, 'not_permitted', `this binding answers only callers with a client certificate its CA signed; none was presented or it was not accepted${why}`);
    }
    await next();
  };
}
