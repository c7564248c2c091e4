/**
 * A response validator built from the bundled OpenAPI documents (`generated/<name>/openapi.json`,
 * issue 25 §3): given a request's method and path and the answer a server gave, it names every
 * way the answer is not what the document describes, as Stoplight Prism's proxy would:
 * - no operation of the document has this method and path template;
 * - the operation declares no response for the status (nor a `4XX`-style range, nor `default`);
 * - the answer has a body whose media type the response does not declare (ranges such as
 *   `*\/*` match), or a JSON body that does not match the declared schema;
 * - the answer carries a header of {@link WATCHED_HEADERS} (rate limits, timing, security,
 *   CORS, cookies, redirects) that the response does not declare in its `headers`.
 * A redirect's (3xx) body is Koa's courtesy text, not part of the API, and is not checked.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import clearingDocument from '../../generated/clearing/openapi.json' with { type: 'json' };
import gatewayDocument from '../../generated/gateway/openapi.json' with { type: 'json' };

type Json = Record<string, any>;

/** Response headers an answer may only carry when its document declares them (lower case). */
export const WATCHED_HEADERS: readonly (string | RegExp)[] = [
  'retry-after',
  'server-timing',
  'content-security-policy',
  'x-content-type-options',
  'referrer-policy',
  'content-disposition',
  'cache-control',
  'set-cookie',
  'location',
  'vary',
  /^access-control-/,
];

/** One answer as a server gave it. */
export interface ObservedResponse {
  method: string;
  /** The request path as sent, with or without its query (the query is ignored). */
  path: string;
  status: number;
  /** Response headers, names in any case. */
  headers: Record<string, string | string[] | undefined>;
  /** The body as text ('' when none). */
  text: string;
}

/** One operation of a document, with the pattern its path template matches. */
interface DocumentedOperation {
  operationId: string;
  method: string;
  template: string;
  pattern: RegExp;
  /** Literal characters of the template: the more, the more specific (`/v0/agents/draft` before `/v0/agents/{ns}/{name}`). */
  literal: number;
  responses: Json;
}

const methods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const SCHEMA_ID = 'document';

function pointer(document: Json, ref: string): Json {
  const target = ref
    .replace(/^#\//, '')
    .split('/')
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((at: Json | undefined, key) => at?.[key], document);
  if (!target) throw new Error(`unresolved $ref ${ref}`);
  return target;
}

/** `node` with its `$ref` (to a response, header or media object) followed. */
function followed(document: Json, node: Json): Json {
  let at = node;
  for (let hops = 0; typeof at.$ref === 'string' && hops < 10; hops++) at = pointer(document, at.$ref);
  return at;
}

/** The media type of a `Content-Type` value, lower case, without parameters. */
const mediaType = (value: string): string => value.split(';')[0].trim().toLowerCase();

/** The declared media type key of `content` that `type` falls under: exact, then `type/*`, then `*\/*`. */
function declaredMedia(content: Json, type: string): string | null {
  const keys = Object.keys(content);
  const exact = keys.find((key) => mediaType(key) === type);
  if (exact) return exact;
  const range = keys.find((key) => mediaType(key) === `${type.split('/')[0]}/*`);
  return range ?? keys.find((key) => mediaType(key) === '*/*') ?? null;
}

/** Validates answers against one bundled OpenAPI document. */
export class ResponseValidator {
  private readonly operations: DocumentedOperation[] = [];
  private readonly ajv: Ajv2020;
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(private readonly document: Json) {
    for (const [template, item] of Object.entries<Json>(document.paths ?? {})) {
      for (const method of methods) {
        const op = item[method];
        if (!op) continue;
        const source = template.split(/\{[^}]+\}/).map((part) => part.replace(/[.*+?^$()|[\]\\]/g, '\\$&')).join('[^/]+');
        this.operations.push({
          operationId: op.operationId,
          method,
          template,
          pattern: new RegExp(`^${source}$`),
          literal: template.replace(/\{[^}]+\}/g, '').length,
          responses: op.responses ?? {},
        });
      }
    }
    this.operations.sort((a, b) => b.literal - a.literal);
    this.ajv = new Ajv2020({ strict: false, allErrors: false });
    (addFormats as unknown as { default: (a: Ajv2020) => void }).default(this.ajv);
    // The components only: every `$ref` of a response points into them.
    this.ajv.addSchema({ $id: SCHEMA_ID, components: document.components });
  }

  /** The operation `method path` is an answer of, or null (a path that is no operation). */
  operationOf(method: string, path: string): DocumentedOperation | null {
    const bare = path.split('?')[0];
    return this.operations.find((op) => op.method === method.toLowerCase() && op.pattern.test(bare)) ?? null;
  }

  private schemaCheck(where: string, schema: Json): ValidateFunction {
    let validate = this.compiled.get(where);
    if (!validate) {
      const anchored = JSON.parse(JSON.stringify(schema).replaceAll('"#/', `"${SCHEMA_ID}#/`));
      validate = this.ajv.compile(anchored);
      this.compiled.set(where, validate);
    }
    return validate;
  }

  /** Every way `observed` is not described by the document; empty when it is. */
  violations(observed: ObservedResponse): string[] {
    const op = this.operationOf(observed.method, observed.path);
    const at = `${observed.method.toUpperCase()} ${observed.path.split('?')[0]} ${observed.status}`;
    if (!op) return [`${at}: no operation of the document has this method and path`];
    const named = `${at} (${op.operationId})`;
    const status = String(observed.status);
    const key = [status, `${status[0]}XX`, `${status[0]}xx`, 'default'].find((candidate) => op.responses[candidate] !== undefined);
    if (key === undefined) return [`${named}: the status is not declared`];
    const response = followed(this.document, op.responses[key]);
    const found: string[] = [];

    const declaredHeaders = new Set(Object.keys(response.headers ?? {}).map((name) => name.toLowerCase()));
    for (const name of Object.keys(observed.headers).map((header) => header.toLowerCase())) {
      const watched = WATCHED_HEADERS.some((rule) => (typeof rule === 'string' ? rule === name : rule.test(name)));
      if (watched && !declaredHeaders.has(name)) found.push(`${named}: the header ${name} is not declared`);
    }

    if (observed.text === '' || observed.status === 204 || (observed.status >= 300 && observed.status < 400)) return found;
    const header = observed.headers['content-type'] ?? Object.entries(observed.headers).find(([name]) => name.toLowerCase() === 'content-type')?.[1];
    const type = mediaType(String(header ?? 'application/octet-stream'));
    const media = declaredMedia(response.content ?? {}, type);
    if (media === null) return [...found, `${named}: a body of type ${type} is not declared (declared: ${Object.keys(response.content ?? {}).join(', ') || 'none'})`];
    const schema = followed(this.document, response.content[media]).schema;
    if (!schema || !type.endsWith('json')) return found;
    let body: unknown;
    try {
      body = JSON.parse(observed.text);
    } catch {
      return [...found, `${named}: the body is not JSON`];
    }
    const validate = this.schemaCheck(`${op.operationId} ${key} ${media}`, schema);
    if (!validate(body)) {
      const error = validate.errors![0];
      found.push(`${named}: the body does not match its schema at ${error.instancePath || '/'} (${error.keyword}: ${error.message}): ${observed.text.slice(0, 200)}`);
    }
    return found;
  }
}

/** The validator of `openapi/gateway.yaml` (the dev and the hosted gateway). */
export const gatewayResponses = new ResponseValidator(gatewayDocument as Json);

/** The validator of `openapi/clearing.yaml` (the reference binding). */
export const clearingResponses = new ResponseValidator(clearingDocument as Json);
