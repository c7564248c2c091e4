/**
 * Renders `generated/<name>/server.ts`: the typed operation table of one OpenAPI document.
 * Each row carries what a router needs to mount and validate the operation (method, path,
 * JSON Schemas of path parameters, query and body); the `Handlers` type says what a handler
 * for each operation takes and may answer (every body its responses declare). When the
 * document has an `ErrorCode` schema, the module also exports the code type and the table of
 * each code's meaning and HTTP statuses (`<Name>ErrorCode`, `<name>ErrorCodes`).
 * `src/http/mount.ts` mounts the table on @koa/router.
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

/** One code of a document's `ErrorCode` enum: what it means and the HTTP statuses it is answered with. */
export interface ErrorCodeEntry {
  description: string;
  /** Empty: the code is only ever written in a receipt, never answered as a status of its own. */
  status: number[];
}

/**
 * The document's error codes (`components.schemas.ErrorCode`, in enum order) with their
 * `x-enumDescriptions` and `x-holon-status`, or null when the document has no `ErrorCode`.
 * Throws when a code lacks a description or a status list, or either map names a code the enum
 * lacks: every code is documented, or nothing is generated.
 */
export function errorCodeEntries(document: Json): Record<string, ErrorCodeEntry> | null {
  const schema = document.components?.schemas?.ErrorCode;
  if (!schema) return null;
  const codes: string[] = schema.enum ?? [];
  const descriptions: Json = schema['x-enumDescriptions'] ?? {};
  const statuses: Json = schema['x-holon-status'] ?? {};
  for (const key of [...Object.keys(descriptions), ...Object.keys(statuses)]) {
    if (!codes.includes(key)) throw new Error(`ErrorCode: ${key} is described but not in the enum`);
  }
  const entries: Record<string, ErrorCodeEntry> = {};
  for (const code of codes) {
    const description = descriptions[code];
    const status = statuses[code];
    if (typeof description !== 'string' || description === '') throw new Error(`ErrorCode: ${code} has no x-enumDescriptions entry`);
    if (!Array.isArray(status) || !status.every((s) => Number.isInteger(s) && s >= 400 && s <= 599)) {
      throw new Error(`ErrorCode: ${code} has no x-holon-status list of 4xx/5xx statuses`);
    }
    entries[code] = { description, status };
  }
  return entries;
}

function renderErrorCodes(document: Json, name: string): string {
  const entries = errorCodeEntries(document);
  if (!entries) return '';
  const Name = name.charAt(0).toUpperCase() + name.slice(1);
  const lines = Object.entries(entries).map(([code, entry]) => `  ${code}: { status: [${entry.status.join(', ')}], description: ${JSON.stringify(entry.description)} },`);
  return `
/** A machine code of this document's error bodies (\`components.schemas.ErrorCode\`). */
export type ${Name}ErrorCode = components['schemas']['ErrorCode'];

/** Each error code's meaning and the HTTP statuses it is answered with (empty: only written in a receipt), from \`x-enumDescriptions\` and \`x-holon-status\`. */
export const ${name}ErrorCodes: { readonly [C in ${Name}ErrorCode]: { readonly description: string; readonly status: readonly number[] } } = {\n${lines.join('\n')}\n};
`;
}

/** The TypeScript source of `server.ts` for a parsed document; `name` prefixes the error-code exports (\`gateway\` → \`GatewayErrorCode\`). */
export function renderServerStub(document: Json, name: string): string {
  const rows = operationRows(document);
  const ids = rows.map((r) => JSON.stringify(r.operationId)).join(' | ');
  return `import type { Context } from 'koa';
import type { components, operations } from './types.ts';
import type { Answered, Or, UndeclaredFields } from '../answers.ts';

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

/** \`T\` without the bare error body: a refusal is thrown (an \`HttpError\`), not returned. */
type Thrown<T> = T extends components['schemas']['ErrorBody'] ? (components['schemas']['ErrorBody'] extends T ? never : T) : T;

/**
 * The bodies an operation's handler may answer (with \`ctx.status\` set for any but 200): every
 * response the document declares for it, except the bare error body. A field the document does
 * not declare does not compile.
 */
export type OperationAnswer<K extends OperationId> = Thrown<{ [S in keyof operations[K]['responses']]: Answered<operations[K]['responses'][S]> }[keyof operations[K]['responses']]>;

/** \`H\` when each of its handlers answers only fields its operation declares; otherwise the offending handler's type names the fields. */
export type DeclaredOnly<H> = {
  [K in keyof H]: K extends OperationId
    ? H[K] extends (...args: never[]) => Promise<infer R>
      ? [UndeclaredFields<R, OperationAnswer<K>>] extends [never]
        ? H[K]
        : { 'answers fields the document does not declare': UndeclaredFields<R, OperationAnswer<K>> }
      : H[K]
    : H[K];
};

/**
 * Returns \`handlers\` as given; at compile time, refuses a table in which a handler answers a
 * field its operation's responses do not declare (TypeScript does not check a returned object
 * literal for excess fields, so the check is made on the inferred answers).
 */
export function declaredOnly<H>(handlers: H & DeclaredOnly<H>): H {
  return handlers;
}

/** A handler: refusals are thrown, an answer the document declares is returned. */
export type Handler<K extends OperationId> = (request: OperationRequest<K>, ctx: Context) => Promise<OperationAnswer<K>>;

/** Handlers for the operations a server offers; an absent one answers 404 \`not_offered\`. */
export type Handlers = { [K in OperationId]?: Handler<K> };
${renderErrorCodes(document, name)}`;
}

/**
 * The TypeScript source of `generated/answers.ts`: the type helpers every generated `server.ts`
 * shares (they depend on no document): a request part that may be absent, what one declared
 * response lets a handler answer, and the fields an answer has that a document does not declare.
 */
export function renderSharedAnswers(): string {
  return `type Nothing = Record<string, never>;
/** A request part (path parameters, query) as a handler receives it: an empty object when the operation has none. */
export type Or<T> = [T] extends [never] ? Nothing : [T] extends [undefined] ? Nothing : NonNullable<T>;

/** What one declared response lets a handler answer: its JSON body; bytes or text for another media type; a text for a response without content (a redirect's). */
export type Answered<R> = R extends { content: infer C } ? { [M in keyof C]: M extends 'application/json' ? C[M] : string | Uint8Array }[keyof C] : string;

type AllKeys<S> = S extends unknown ? keyof S : never;
type At<S, K extends PropertyKey> = S extends unknown ? (K extends keyof S ? S[K] : never) : never;
type Elements<S> = S extends readonly (infer E)[] ? E : never;
type Deeper = [never, 0, 1, 2, 3, 4, 5, 6];

/**
 * The fields \`T\` has and the document's \`S\` does not declare, as paths (\`.foo\`, \`.items[].bar\`);
 * never when there are none. A field of \`T\` known only by an index signature counts as
 * undeclared unless \`S\` is open there too. Looks 7 levels deep.
 */
export type UndeclaredFields<T, S, P extends string = '', D extends number = 7> = [D] extends [never]
  ? never
  : 0 extends 1 & T
    ? never
    : unknown extends S
      ? never
      : T extends string | number | boolean | bigint | null | undefined | Uint8Array
        ? never
        : T extends readonly (infer E)[]
          ? UndeclaredFields<E, Elements<S>, \`\${P}[]\`, Deeper[D]>
          : T extends object
            ? { [K in keyof T & string]-?: K extends AllKeys<S> ? UndeclaredFields<T[K], At<S, K>, \`\${P}.\${K}\`, Deeper[D]> : \`\${P}.\${K}\` }[keyof T & string]
            : never;
`;
}
