/**
 * Mounts a generated operation table (`generated/<name>/server.ts`) on a Koa app: one route per
 * operation, each request's text checked (`wellformed.ts`, `body.ts`) and then validated with ajv
 * against the document's own schemas before the handler runs. The three 404s of clearing-contract §7.1 are kept apart: a path that is no
 * operation answers `no_such_route`; an operation without a handler answers `not_offered`
 * (§5.2); `no_such_object` is the handlers' own answer.
 */
import type Koa from 'koa';
import Router from '@koa/router';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { OperationRow } from '../codegen/server-stub.ts';
import { MAX_BODY_BYTES, readJsonBody } from './body.ts';
import { HttpError, invalidRequest, type ErrorCode } from './errors.ts';
import { urlFault } from './wellformed.ts';
import { isDatabaseUnavailable } from '../db/unavailable.ts';

/** One row of a generated operation table (any document's table fits). */
export type MountableOperation = OperationRow;

/** A handler as mounted: the validated request in, the 200 body out; refusals thrown as `HttpError`. */
export type MountedHandler = (request: { params: any; query: any; body: any }, ctx: Koa.Context) => Promise<unknown>;

const SCHEMA_ID = 'openapi-document';

function newAjv(coerce: boolean, document: object): Ajv2020 {
  // verbose: an error carries its schema, so a `not` refusal can say which value is excluded.
  // validateSchema off: the document is our own, checked by `npm run lint:openapi`; checking it
  // against the 2020-12 meta-schema again compiled that meta-schema per instance, at each start.
  const ajv = new Ajv2020({ strict: false, allErrors: false, coerceTypes: coerce, verbose: true, validateSchema: false });
  (addFormats as unknown as { default: (a: Ajv2020) => void }).default(ajv);
  ajv.addSchema({ $id: SCHEMA_ID, ...document });
  return ajv;
}

/** Rewrites the document-local `$ref`s of a table schema so they resolve inside the registered document. */
function anchored(schema: Record<string, unknown>): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', `"${SCHEMA_ID}#/components/`));
}

/** "body.lines[0].amount must be >= 0": the field an ajv error is about, then what is wrong with it. */
export function describeAjvError(where: string, error: ErrorObject): string {
  const field = [where, ...error.instancePath.split('/').filter(Boolean)]
    .map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : i === 0 ? part : `.${part}`))
    .join('');
  if (error.keyword === 'required') return `${field}.${(error.params as { missingProperty: string }).missingProperty} is required`;
  if (error.keyword === 'additionalProperties') {
    return `${field}.${(error.params as { additionalProperty: string }).additionalProperty} is not a field of this operation`;
  }
  // With `verbose`, a `not` error carries the excluded schema: "body.delta must not be 0".
  const excluded = error.schema as { const?: unknown } | undefined;
  if (error.keyword === 'not' && excluded && typeof excluded === 'object' && 'const' in excluded) {
    return `${field} must not be ${JSON.stringify(excluded.const)}`;
  }
  return `${field} ${error.message ?? 'is invalid'}`;
}

function validator(validate: ValidateFunction | null, where: string) {
  return (value: unknown) => {
    if (validate && !validate(value)) throw invalidRequest(`invalid request: ${describeAjvError(where, validate.errors![0])}`);
  };
}

/** The request checks of one operation: each throws 422 `invalid_request` naming the field and the bound. */
export interface OperationChecks {
  params(value: unknown): void;
  query(value: unknown): void;
  body(value: unknown): void;
}

/** Checks already made, per operation table (shared by each app mounting it and the in-process clearing port). */
const compiledChecks = new WeakMap<readonly MountableOperation[], Map<string, OperationChecks>>();

/**
 * The checks of every operation of `table` by operation id: path and query against the
 * document's schemas with type coercion (they arrive as text), the body strictly. Each check
 * compiles its schema on its first use, not at start-up (issue 21 §4: compiling every schema of
 * both documents cost about 0.3 s of CPU at each start, for operations a process may never
 * serve); the document is ours, checked by `npm run lint:openapi`, and every operation is
 * exercised by the tests. Made on the first use of a table and shared by every later one.
 */
export function operationChecks(table: readonly MountableOperation[], schemaDocument: object): Map<string, OperationChecks> {
  const known = compiledChecks.get(table);
  if (known) return known;
  let ajvs: { strict: Ajv2020; coercing: Ajv2020 } | null = null;
  const lazily = (coerce: boolean, schema: Record<string, unknown> | null, where: string) => {
    let check: ((value: unknown) => void) | null = null;
    return (value: unknown) => {
      if (!check) {
        ajvs ??= { strict: newAjv(false, schemaDocument), coercing: newAjv(true, schemaDocument) };
        check = validator(schema ? (coerce ? ajvs.coercing : ajvs.strict).compile(anchored(schema)) : null, where);
      }
      check(value);
    };
  };
  const checks = new Map<string, OperationChecks>();
  for (const op of table) {
    checks.set(op.operationId, { params: lazily(true, op.params, 'path'), query: lazily(true, op.query, 'query'), body: lazily(false, op.body, 'body') });
  }
  compiledChecks.set(table, checks);
  return checks;
}

/** Options of `mountOperations`. */
export interface MountOptions {
  /** What the server is, as its 404 `not_offered` sentence names it: `binding`, `dev gateway`. */
  server: string;
  table: readonly MountableOperation[];
  /** The generated `schemaDocument` the table's `$ref`s point into. */
  schemaDocument: object;
  /** Handlers by operation id; an operation of the table without one answers 404 `not_offered`. */
  handlers: Partial<Record<string, MountedHandler>>;
  /** Largest accepted JSON body in bytes (default {@link MAX_BODY_BYTES}). */
  body_limit_bytes?: number;
}

/**
 * Adds the request-target check, the table's routes and the `no_such_route` fallback to `app`.
 * A path or query that is not NUL-free UTF-8 answers 422 `invalid_request` before any route; an
 * operation's body is read by `readJsonBody` (415 for another media type or charset; 422 for a
 * body that is too large, not UTF-8, not JSON, too deep, not a JSON object, or carries a NUL, a
 * lone surrogate or a number beyond the exact integer range); then path, query and body are
 * validated against the document's schemas (422 naming the field and the bound, {@link operationChecks}).
 */
export function mountOperations(app: Koa, options: MountOptions): void {
  const checks = operationChecks(options.table, options.schemaDocument);
  const router = new Router();

  for (const op of options.table) {
    const handler = options.handlers[op.operationId];
    const check = checks.get(op.operationId)!;
    router[op.method](op.koaPath, async (ctx) => {
      if (!handler) throw new HttpError(404, 'not_offered', `this ${options.server} does not offer ${op.operationId}`);
      const params = { ...ctx.params };
      const query = { ...ctx.query };
      check.params(params);
      check.query(query);
      let body: unknown;
      if (op.body) {
        body = await readJsonBody(ctx, options.body_limit_bytes ?? MAX_BODY_BYTES);
        if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalidRequest('invalid request: the body must be a JSON object');
        check.body(body);
      }
      ctx.body = await handler({ params, query, body }, ctx);
    });
  }

  app.use(async (ctx, next) => {
    const fault = urlFault(ctx.originalUrl);
    if (fault) throw invalidRequest(`invalid request: ${fault}`);
    await next();
  });
  app.use(router.routes());
  app.use(async (ctx) => {
    throw new HttpError(404, 'no_such_route', `${ctx.method} ${ctx.path} is not an operation of this contract`);
  });
}

/**
 * Koa middleware answering every thrown `HttpError` with its status and `{error, code}` body, a
 * client error raised by Koa or a library (a 4xx `status`) with that status and
 * `invalid_request`, a database that takes no writes now (`isDatabaseUnavailable`: a failover)
 * with 503 `database_unavailable`, and anything else with 500 `internal_error` (reported through
 * `onUnexpected`) with the sentence `unexpected`, which names the server that failed.
 */
export function errorBodies(unexpected: string, onUnexpected: (error: unknown, ctx: Koa.Context) => void): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      if (error instanceof HttpError) {
        ctx.status = error.status;
        ctx.body = error.body();
        return;
      }
      // A failover or a lost database is no bug: 503, retried by the caller; nothing was committed.
      if (isDatabaseUnavailable(error)) {
        ctx.status = 503;
        ctx.body = { error: `the database takes no writes right now (${(error as Error).message}); nothing was changed: retry shortly with the same Idempotency-Key`, code: 'database_unavailable' satisfies ErrorCode };
        return;
      }
      const status = (error as { status?: number }).status;
      if (typeof status === 'number' && status >= 400 && status < 500) {
        ctx.status = status;
        ctx.body = { error: `invalid request: ${(error as Error).message}`, code: 'invalid_request' satisfies ErrorCode };
        return;
      }
      onUnexpected(error, ctx);
      ctx.status = 500;
      ctx.body = { error: unexpected, code: 'internal_error' satisfies ErrorCode };
    }
  };
}
