/**
 * Mounts a generated operation table (`generated/<name>/server.ts`) on a Koa app: one route per
 * operation, each request validated with ajv against the document's own schemas before the
 * handler runs. The three 404s of clearing-contract §7.1 are kept apart: a path that is no
 * operation answers `no_such_route`; an operation without a handler answers `not_offered`
 * (§5.2); `no_such_object` is the handlers' own answer.
 */
import type Koa from 'koa';
import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { OperationRow } from '../codegen/server-stub.ts';
import { HttpError, invalidRequest } from './errors.ts';

/** One row of a generated operation table (any document's table fits). */
export type MountableOperation = OperationRow;

/** A handler as mounted: the validated request in, the 200 body out; refusals thrown as `HttpError`. */
export type MountedHandler = (request: { params: any; query: any; body: any }, ctx: Koa.Context) => Promise<unknown>;

const SCHEMA_ID = 'openapi-document';

function newAjv(coerce: boolean, document: object): Ajv2020 {
  // verbose: an error carries its schema, so a `not` refusal can say which value is excluded.
  const ajv = new Ajv2020({ strict: false, allErrors: false, coerceTypes: coerce, verbose: true });
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

/**
 * The path of the first number in `value` that a JS number cannot hold exactly (beyond
 * ±(2^53 − 1): JSON.parse has already rounded it), e.g. "body.lines[0].amount"; null when none.
 * Runs after schema validation, so the schema bounds how deep it goes.
 */
export function inexactNumber(value: unknown, where: string): string | null {
  if (typeof value === 'number') return Math.abs(value) > Number.MAX_SAFE_INTEGER ? where : null;
  if (value === null || typeof value !== 'object') return null;
  for (const [key, item] of Object.entries(value)) {
    const found = inexactNumber(item, Array.isArray(value) ? `${where}[${key}]` : `${where}.${key}`);
    if (found !== null) return found;
  }
  return null;
}

function validator(validate: ValidateFunction | null, where: string) {
  return (value: unknown) => {
    if (validate && !validate(value)) throw invalidRequest(`invalid request: ${describeAjvError(where, validate.errors![0])}`);
  };
}

/** Options of `mountOperations`. */
export interface MountOptions {
  table: readonly MountableOperation[];
  /** The generated `schemaDocument` the table's `$ref`s point into. */
  schemaDocument: object;
  /** Handlers by operation id; an operation of the table without one answers 404 `not_offered`. */
  handlers: Partial<Record<string, MountedHandler>>;
  /** Largest accepted JSON body, e.g. "1mb". */
  bodyLimit?: string;
}

/**
 * Adds body parsing, the table's routes and the `no_such_route` fallback to `app`.
 * Bodies that are not a JSON object, or that carry a number beyond the exact integer range,
 * answer 422 `invalid_request`.
 */
export function mountOperations(app: Koa, options: MountOptions): void {
  const strict = newAjv(false, options.schemaDocument);
  const coercing = newAjv(true, options.schemaDocument);
  const router = new Router();
  const compile = (ajv: Ajv2020, schema: Record<string, unknown> | null) => (schema ? ajv.compile(anchored(schema)) : null);

  for (const op of options.table) {
    const handler = options.handlers[op.operationId];
    const checkParams = validator(compile(coercing, op.params), 'path');
    const checkQuery = validator(compile(coercing, op.query), 'query');
    const checkBody = validator(compile(strict, op.body), 'body');
    router[op.method](op.koaPath, async (ctx) => {
      if (!handler) throw new HttpError(404, 'not_offered', `this binding does not offer ${op.operationId}`);
      const params = { ...ctx.params };
      const query = { ...ctx.query };
      checkParams(params);
      checkQuery(query);
      let body: unknown;
      if (op.body) {
        body = (ctx.request as unknown as { body: unknown }).body;
        if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalidRequest('invalid request: the body must be a JSON object');
        checkBody(body);
        const inexact = inexactNumber(body, 'body');
        if (inexact !== null) throw invalidRequest(`invalid request: ${inexact} must be at most ${Number.MAX_SAFE_INTEGER} in magnitude, the largest integer carried exactly`);
      }
      ctx.body = await handler({ params, query, body }, ctx);
    });
  }

  const bodyLimit = options.bodyLimit ?? '1mb';
  app.use(
    bodyParser({
      enableTypes: ['json'],
      jsonLimit: bodyLimit,
      onError: (error) => {
        if ((error as { status?: number }).status === 413) throw invalidRequest(`invalid request: the body is larger than ${bodyLimit}`);
        throw invalidRequest('invalid request: the body is not valid JSON');
      },
    }),
  );
  app.use(router.routes());
  app.use(async (ctx) => {
    throw new HttpError(404, 'no_such_route', `${ctx.method} ${ctx.path} is not an operation of this contract`);
  });
}

/**
 * Koa middleware answering every thrown `HttpError` with its status and `{error, code}` body,
 * and anything else with 500 `internal_error` (reported through `onUnexpected`).
 */
export function errorBodies(onUnexpected: (error: unknown, ctx: Koa.Context) => void): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      if (error instanceof HttpError) {
        ctx.status = error.status;
        ctx.body = error.body();
        return;
      }
      const status = (error as { status?: number }).status;
      if (status === 413 || status === 415) {
        ctx.status = 422;
        ctx.body = { error: `invalid request: ${(error as Error).message}`, code: 'invalid_request' };
        return;
      }
      onUnexpected(error, ctx);
      ctx.status = 500;
      ctx.body = { error: 'an unexpected failure inside the binding; nothing was changed', code: 'internal_error' };
    }
  };
}
