/**
 * The reference binding as a Koa app: the §7 error body around everything, `/healthz` outside
 * the §3 loopback gate, the contract's document at `/openapi.json`, then the generated operation
 * table with this binding's handlers (its own doors among them: the checkpoint of its journal and
 * the JWKS that verifies it, issue 23 §3).
 */
import Koa from 'koa';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { operationTable, schemaDocument, type OperationId, type OperationRequest } from '../../generated/clearing/server.ts';
import clearingDocument from '../../generated/clearing/openapi.json' with { type: 'json' };
import { MAX_AMOUNT_MICROS } from '../contracts/money.ts';
import { servedDocuments } from '../http/docs.ts';
import { loopbackGate } from '../http/access.ts';
import { HttpError, invalidRequest } from '../http/errors.ts';
import { errorBodies, mountOperations, type MountedHandler } from '../http/mount.ts';
import { METRICS_PATH, metricsRoute } from '../observe/endpoint.ts';
import { observeRequests } from '../observe/requests.ts';
import { createAccount, linkAgent, newLinkCache, readBalance, readSummary, resolveAccount } from './accounts.ts';
import { ALL_OPERATIONS, capabilityDocument, type OperationName } from './capabilities.ts';
import { adjust, credit, readSettlement, reverse, settle } from './settlements.ts';
import { draw, listReservations, openHold, readReservation, releaseHold, resizeHold } from './reservations.ts';
import type { Ledger } from './ledger.ts';
import { mutualTlsGate } from './tls.ts';
import { signedCheckpoint } from './checkpoint.ts';
import { processSigner, type Signer } from '../signing/signer.ts';
import { WritePath, writePathOptionsFromEnv, type WritePathOptions } from './write-path.ts';

/** Options of `createClearingApp`. */
export interface ClearingAppOptions {
  /** The ledger's database (already migrated). */
  db: Knex;
  /** The operations to offer (default: all of §6); the others answer 404 `not_offered` (§5.2). */
  operations?: readonly OperationName[];
  /** The write path's group commit and bounds (default: from the environment, `writePathOptionsFromEnv`). */
  writes?: WritePathOptions;
  /** The ledger to serve (its `db` is then this one's); absent: a new one on `db` with `writes` and `signer`. */
  ledger?: Ledger;
  /** Signs the checkpoints of a new ledger (issue 23 §3); absent: a key of this process ({@link BINDING_ISSUER}). Ignored with `ledger`. */
  signer?: Signer;
  /** Where unexpected failures are reported. */
  logger?: Logger;
  /** Who may call: `loopback` (default; the §3 gate) or `mutual-tls` (a client certificate the binding's CA signed, issue 23 §4; the app must be served over TLS). */
  gate?: 'loopback' | 'mutual-tls';
  /** Why the binding cannot write now, or null when it can: `/healthz` answers 503 `database_unavailable` with it (issue 27 §2). Absent: always ready. */
  unready?: () => Promise<string | null>;
}

type Implementation = (ledger: Ledger, request: any) => Promise<unknown>;

/**
 * A draw asks for the sum of its lines, which is one amount: at most {@link MAX_AMOUNT_MICROS}
 * (each line is bounded by the schema, their sum only here). Throws 422 `invalid_request`.
 */
const boundedDraw: Implementation = (db, request: OperationRequest<'draw'>) => {
  const asked = request.body.lines.reduce((sum, line) => sum + line.amount, 0);
  if (asked > MAX_AMOUNT_MICROS) {
    throw invalidRequest(`invalid request: body.lines ask for ${asked} in total; a draw asks for at most ${MAX_AMOUNT_MICROS}, the largest amount`);
  }
  return draw(db, request);
};

const implementations: Record<OperationName, Implementation> = {
  'resolve-account': resolveAccount,
  'read-balance': readBalance,
  'read-summary': readSummary,
  'read-settlement': readSettlement,
  'list-reservations': listReservations,
  'read-reservation': readReservation,
  credit,
  settle,
  reverse,
  adjust,
  'open-hold': openHold,
  'resize-hold': resizeHold,
  draw: boundedDraw,
  'release-hold': releaseHold,
};

/** The binding's handlers by operation id: every operation of `offered` (the others are absent: 404 `not_offered`), over one ledger. */
export type ClearingHandlers = Partial<Record<OperationId, MountedHandler>>;

/** The `iss` of checkpoints signed by a key of this process, when the binding was given no signer (tests, an embedded app). */
export const BINDING_ISSUER = 'urn:holon:reference-binding';

/**
 * The ledger of one binding: its database, its write path (group commit), the agent links it
 * has resolved and the signer of its checkpoints (default: a key of this process), shared by
 * every door onto it (the HTTP app and the gateway's in-process port), so their writes batch
 * together, a link read by one is remembered for both, and both sign with the same key.
 */
export function openLedger(db: Knex, writes: WritePathOptions = writePathOptionsFromEnv(), signer: Signer = processSigner(BINDING_ISSUER)): Ledger {
  return { db, writes: new WritePath(db, writes), links: newLinkCache(), signer };
}

/**
 * The handlers of clearing-contract §6 (and the binding's own doors, §14) over `ledger`, for the
 * operations `offered`; checkpoints and the JWKS are the ledger's signer's; `/healthz` (§3) also
 * answers readiness through `unready`.
 */
export function clearingHandlers(ledger: Ledger, offered: readonly OperationName[] = ALL_OPERATIONS, unready?: () => Promise<string | null>): ClearingHandlers {
  const document = capabilityDocument(offered);
  const bind = (implementation: Implementation): MountedHandler => (request) => implementation(ledger, request);
  const handlers: ClearingHandlers = {
    health: async () => {
      const reason = await unready?.();
      if (reason) throw new HttpError(503, 'database_unavailable', `the binding cannot write now: ${reason}; retry shortly`);
      return { ok: true };
    },
    capabilities: async () => document,
    'create-account': bind(createAccount),
    'link-agent': bind(linkAgent),
    'read-checkpoint': async () => signedCheckpoint(ledger.db, ledger.signer),
    'read-jwks': async () => ledger.signer.jwks(),
  };
  for (const name of offered) handlers[name] = bind(implementations[name]);
  return handlers;
}

/** Builds the binding's Koa app (clearing-contract §3, §5, §6, §7) over `options.ledger`, else a new ledger on `options.db`. */
export function createClearingApp(options: ClearingAppOptions): Koa {
  const ledger = options.ledger ?? openLedger(options.db, options.writes, options.signer);
  const app = new Koa();
  // Outermost: each request's id, its span continuing the gateway's traceparent, its metrics (issue 22).
  app.use(observeRequests('clearing', [METRICS_PATH]));
  app.use(errorBodies('an unexpected failure inside the binding; nothing was changed', (error, ctx) => options.logger?.error({ err: error, path: ctx.path }, 'unexpected failure')));
  app.use(options.gate === 'mutual-tls' ? mutualTlsGate(['/healthz']) : loopbackGate(['/healthz']));
  app.use(metricsRoute({ key: null }));
  app.use(servedDocuments(clearingDocument));
  mountOperations(app, { server: 'binding', table: operationTable, schemaDocument, handlers: clearingHandlers(ledger, options.operations, options.unready) });
  return app;
}
