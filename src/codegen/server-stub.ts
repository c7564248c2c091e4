/**
 * Renders `generated/<name>/server.ts`: the typed operation table of one OpenAPI document.
 * Each row carries what a router needs to mount and validate the operation (method, path,
 * JSON Schemas of path parameters, query and body); the `Handlers` type says what a handler
 * for each operation takes and returns. `src/http/mount.ts` mounts the table on @koa/router.
 */

type Json = Record<string, any>;

/** One row of the generated table. */
export interface OperationRow {
  operationId: string;
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  koaPath: string;
  params: Json | null;
  query: Json | null;
  body: Json | null;
}

const methods = ['get', 'post', 'put', 'patch', 'delete'] as const;

function resolve(document: Json, node: Json): Json {
  if (typeof node.$ref !== 'string') return node;
  const target = node.$ref.replace(/^#\//, '').split('/').reduce((at: Json, key: string) => at?.[key], document);
  if (!target) throw new Error(`unresolved $ref ${node.$ref}`);
  return target;
}

function parameterSchema(document: Json, parameters: Json[], where: 'path' | 'query'): Json | null {
  const own = parameters.map((p) => resolve(document, p)).filter((p) => p.in === where);
  if (own.length === 0) return null;
  return {
    type: 'object',
    properties: Object.fromEntries(own.map((p) => [p.name, p.schema ?? {}])),
    required: own.filter((p) => p.required).map((p) => p.name),
    additionalProperties: where === 'path' ? false : true,
  };
}

/** Reads every operation of a parsed OpenAPI 3.1 document into table rows, in document order. */
export function operationRows(document: Json): OperationRow[] {
  const rows: OperationRow[] = [];
  for (const [route, item] of Object.entries<Json>(document.paths ?? {})) {
    for (const method of methods) {
      const op = item[method];
      if (!op) continue;
      if (!op.operationId) throw new Error(`${method.toUpperCase()} ${route} has no operationId`);
      const parameters = [...(item.parameters ?? []), ...(op.parameters ?? [])];
      const body = op.requestBody ? resolve(document, op.requestBody).content?.['application/json']?.schema ?? null : null;
      rows.push({
        operationId: op.operationId,
        method,
        path: route,
        koaPath: route.replace(/\{([^}]+)\}/g, ':$1'),
        params: parameterSchema(document, parameters, 'path'),
        query: parameterSchema(document, parameters, 'query'),
        body,
      });
    }
  }
  return rows;
}

/** The TypeScript source of `server.ts` for a parsed document. */
export function renderServerStub(document: Json): string {
  const rows = operationRows(document);
  const ids = rows.map((r) => JSON.stringify(r.operationId)).join(' | ');
  return `import type { Context } from 'koa';
import type { operations } from './types.ts';

/** Every operation id of the document. */
export type OperationId = ${ids};

/** One operation: how to mount it and the JSON Schemas its request is validated against. */
export interface Operation {
  operationId: OperationId;
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** The OpenAPI path, e.g. \`/internal/ledger/balance/{account}\`. */
  path: string;
  /** The same path in @koa/router syntax. */
  koaPath: string;
  params: Record<string, unknown> | null;
  query: Record<string, unknown> | null;
  body: Record<string, unknown> | null;
}

/** The operation table, in document order. Schemas' \`$ref\`s point into \`schemaDocument\`. */
export const operationTable: readonly Operation[] = ${JSON.stringify(rows, null, 2)};

/** The document's components, the target of every \`$ref\` in the table. */
export const schemaDocument = ${JSON.stringify({ components: { schemas: document.components?.schemas ?? {} } }, null, 2)};

type Nothing = Record<string, never>;
type Or<T> = [T] extends [never] ? Nothing : [T] extends [undefined] ? Nothing : NonNullable<T>;

/** The validated request an operation's handler receives. */
export interface OperationRequest<K extends OperationId> {
  params: Or<operations[K]['parameters']['path']>;
  query: Or<operations[K]['parameters']['query']>;
  body: operations[K] extends { requestBody: { content: { 'application/json': infer B } } } ? B : undefined;
}

/** The body of an operation's 200 answer. */
export type OperationResult<K extends OperationId> = operations[K]['responses'] extends {
  200: { content: { 'application/json': infer R } };
}
  ? R
  : never;

/** A handler: refusals are thrown, the 200 body is returned. */
export type Handler<K extends OperationId> = (request: OperationRequest<K>, ctx: Context) => Promise<OperationResult<K>>;

/** Handlers for the operations a server offers; an absent one answers 404 \`not_offered\`. */
export type Handlers = { [K in OperationId]?: Handler<K> };
`;
}
