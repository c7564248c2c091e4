/**
 * Request generation for the fuzz suite (issue 8 §2): fast-check arbitraries built from the
 * operation tables of `generated/*\/server.ts` (so from `openapi/*.yaml`), biased towards values
 * that reach the rules (known accounts, holds, mandates, small amounts), and the hostile values
 * that once answered 500 (NUL, lone surrogates, deep nesting, long ids, huge numbers, other
 * charsets, bytes that are not UTF-8).
 *
 * A generated request is a plan: values that depend on the run so far (an id some earlier request
 * created) are `PoolPick`s, resolved when the request is sent; numbers JSON.parse cannot hold and
 * malformed fragments are `RawJson`, written as they are by `toJsonText`.
 */
import fc from 'fast-check';

type Schema = Record<string, any>;

/** A value to take from a pool of ids known at send time: `pool[pick % pool.length]`, or a fresh id. */
export class PoolPick {
  constructor(
    readonly pool: string,
    readonly pick: number,
    readonly fresh: boolean,
  ) {}
}

/** JSON text written into the body as it is (a number beyond 2^53, a nesting 10,000 deep, `1e300`). */
export class RawJson {
  constructor(readonly text: string) {}
}

/** A JSON value of a plan: JSON, with `PoolPick` and `RawJson` leaves. */
export type Planned = null | boolean | number | string | PoolPick | RawJson | Planned[] | { [key: string]: Planned };

/** The body of a planned request: JSON (with leaves to resolve), or bytes sent as they are. */
export type PlannedBody = { kind: 'json'; value: Planned } | { kind: 'bytes'; bytes: Buffer; contentType: string } | null;

/**
 * Who a request to the hosted gateway presents itself as: no key, a key of one of the principal
 * kinds of gateway §7 (the `pick`-th of the run's keys of that kind), or a key that is no live key.
 */
export interface PlannedPrincipal {
  kind: 'none' | 'human' | 'agent' | 'admin' | 'invalid';
  pick: number;
}

/** One planned request. */
export interface PlannedRequest {
  /** `gateway`: the dev gateway; `hosted`: the hosted gateway (gateway §7); `binding`: the clearing binding. */
  server: 'gateway' | 'hosted' | 'binding';
  /** Hosted only: the key sent as `Authorization: Bearer`. */
  principal?: PlannedPrincipal;
  operationId: string;
  method: string;
  /** Path segments by parameter name: a planned value, or an already percent-encoded hostile segment. */
  params: Record<string, Planned | { encoded: string }>;
  /** The query: planned values by name, or a hostile raw query string. */
  query: Record<string, Planned> | { raw: string };
  body: PlannedBody;
}

/** An operation as the generated tables describe it. */
export interface FuzzOperation {
  operationId: string;
  method: string;
  path: string;
  params: Schema | null;
  query: Schema | null;
  body: Schema | null;
}

/**
 * How a document's field names map to pools of known ids (`account` → `accounts`), each with the
 * weight of a fresh id against 12 for a known one (high for ids a request creates, like `txnId`).
 */
export type PoolsByField = Record<string, { pool: string; fresh: number }>;

const NESTING = (levels: number) => new RawJson(`${'{"n":'.repeat(levels)}0${'}'.repeat(levels)}`);

/** Strings that once answered 500 or could be stored as another string. */
export const hostileStrings: readonly string[] = [
  '\u0000',
  'a\u0000b',
  '\ud800',
  'pay-\udbff',
  '\udc00tail',
  'x'.repeat(513),
  'y'.repeat(5000),
  '\u{1F600}'.repeat(512),
  '',
  ' ',
  '../..',
  '%00',
  'external:funding',
  'platform:fees',
  '__proto__',
];

/** JSON fragments in place of a number: bounds, beyond-exact integers, floats, other types. */
export const hostileNumbers: readonly RawJson[] = [
  '-1', '0', '1', '1000000000000000', '9007199254740991', '9007199254740993', '-9007199254740993',
  '1e300', '-1e300', '1.5', '"5"', 'true', 'null', '[]', '{}',
].map((text) => new RawJson(text));

/** Whole bodies that are not what an operation takes. */
export const hostileBodies: readonly PlannedBody[] = [
  { kind: 'bytes', bytes: Buffer.from('[]'), contentType: 'application/json' },
  { kind: 'bytes', bytes: Buffer.from('"text"'), contentType: 'application/json' },
  { kind: 'bytes', bytes: Buffer.from('null'), contentType: 'application/json' },
  { kind: 'bytes', bytes: Buffer.from('{"a":'), contentType: 'application/json' },
  { kind: 'bytes', bytes: Buffer.from('{"a":1,}'), contentType: 'application/json' },
  { kind: 'bytes', bytes: Buffer.from('{"__proto__":{"x":1}}'), contentType: 'application/json' },
  { kind: 'bytes', bytes: Buffer.from('{"a":1}', 'utf16le'), contentType: 'application/json; charset=utf-16' },
  { kind: 'bytes', bytes: Buffer.from('{"a":1}', 'latin1'), contentType: 'application/json; charset=iso-8859-1' },
  { kind: 'bytes', bytes: Buffer.from('{"a":1}'), contentType: 'text/plain' },
  { kind: 'bytes', bytes: Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]), contentType: 'application/json' },
  { kind: 'bytes', bytes: Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]), contentType: 'application/json' },
  { kind: 'bytes', bytes: Buffer.from(`{"a":"${'z'.repeat(1_100_000)}"}`), contentType: 'application/json' },
  { kind: 'json', value: NESTING(10_000) },
];

/** Percent-encoded path segments that once answered 500 or decode to something else. */
export const hostileSegments: readonly string[] = ['%00', 'a%00b', '%ED%A0%80', '%ED%B0%80', '%FF', '%C0%AF', '%', '%zz', 'x'.repeat(600), '%2F', '..', '%F0%9F%98%80'];

/** Query strings with the same faults. */
export const hostileQueries: readonly string[] = [
  'limit=%00', 'limit=-1', 'limit=0', 'limit=1e400', 'limit=9007199254740993', 'limit=ten', 'limit=1&limit=2',
  'status=nope', 'mandate=%ED%A0%80', 'q=%00', 'x=%FF', 'mandate=' + 'm'.repeat(600), 'q=%', 'capability=a%00',
];

function resolveRef(document: Schema, schema: Schema): Schema {
  let at = schema;
  for (let hops = 0; typeof at.$ref === 'string' && hops < 10; hops++) {
    const name: string = at.$ref.split('/').pop() ?? '';
    const target = document.components?.schemas?.[name];
    if (!target) return { ...at, $ref: undefined };
    const { $ref: _ignored, ...siblings } = at;
    at = { ...target, ...siblings };
  }
  return at;
}

/**
 * Small amounts reach the rules (funds, caps); one beyond each bound tests the edge. Large valid
 * amounts are left to the bound's own tests: accepted settlements (never refused for funds)
 * would pile them up to the balance bound within one run.
 */
function integerArbitrary(schema: Schema): fc.Arbitrary<Planned> {
  const min = schema.minimum ?? -1_000_000;
  const max = Math.min(schema.maximum ?? Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  return fc.oneof(
    { arbitrary: fc.integer({ min: Math.max(min, -10_000), max: Math.min(max, Math.max(min, -10_000) + 20_000) }), weight: 20 },
    // Large valid amounts pile balances up against the balance bound, which must refuse, never answer 500.
    { arbitrary: fc.integer({ min: Math.max(min, 0), max }), weight: 2 },
    { arbitrary: fc.constantFrom<Planned>(min - 1, max === Number.MAX_SAFE_INTEGER ? new RawJson('9007199254740992') : max + 1), weight: 1 },
  );
}

function stringArbitrary(schema: Schema): fc.Arbitrary<Planned> {
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.format === 'date-time') {
    // Mostly an open window (from a minute to a day ahead, so some close during the run); sometimes a closed or malformed one.
    return fc.oneof(
      { arbitrary: fc.integer({ min: 60_000, max: 86_400_000 }).map((offset) => new PoolPick('instant', offset, false)), weight: 6 },
      { arbitrary: fc.constantFrom('2099-01-01T00:00:00Z', '2000-01-01T00:00:00Z', 'next tuesday', '2026-02-30T00:00:00Z'), weight: 1 },
    );
  }
  if (typeof schema.pattern === 'string') return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length <= (schema.maxLength ?? 64));
  return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 24, 24), unit: 'grapheme' });
}

/**
 * An arbitrary of planned values for `schema` (resolved in `document`). A property named in
 * `pools` takes a known id most of the time. `depth` bounds nesting of free-form values.
 */
export function plannedValue(document: Schema, schema: Schema | undefined, pools: PoolsByField, field: string | null, depth = 0): fc.Arbitrary<Planned> {
  if (field !== null && pools[field] !== undefined) {
    const { pool, fresh } = pools[field];
    return fc.oneof(
      { arbitrary: fc.nat().map((pick) => new PoolPick(pool, pick, false)), weight: 12 },
      { arbitrary: fc.nat().map((pick) => new PoolPick(pool, pick, true)), weight: fresh },
      { arbitrary: fc.string({ maxLength: 12 }), weight: 1 },
    );
  }
  if (schema === undefined || depth > 4) return fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Planned>;
  const resolved = resolveRef(document, schema);
  if (Array.isArray(resolved.allOf)) {
    return plannedValue(document, Object.assign({}, ...resolved.allOf.map((s: Schema) => resolveRef(document, s))), pools, field, depth);
  }
  if (Array.isArray(resolved.oneOf)) return fc.oneof(...resolved.oneOf.map((s: Schema) => plannedValue(document, s, pools, field, depth + 1)));
  const type = Array.isArray(resolved.type) ? resolved.type[0] : resolved.type;
  switch (type) {
    case 'integer':
      return integerArbitrary(resolved);
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'string':
      return stringArbitrary(resolved);
    case 'array':
      return fc.array(plannedValue(document, resolved.items, pools, null, depth + 1), {
        minLength: resolved.minItems ?? 0,
        maxLength: Math.min(resolved.maxItems ?? 4, 4),
      });
    case 'object': {
      const properties: Record<string, Schema> = resolved.properties ?? {};
      const required = new Set<string>(resolved.required ?? []);
      const record: Record<string, fc.Arbitrary<Planned>> = {};
      for (const [name, child] of Object.entries(properties)) record[name] = plannedValue(document, child, pools, name, depth + 1);
      const requiredKeys = Object.keys(properties).filter((name) => required.has(name));
      return fc.record(record, { requiredKeys }) as fc.Arbitrary<Planned>;
    }
    default:
      return fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Planned>;
  }
}

/** Replaces one leaf (or member) of a planned object with a hostile value; the path is chosen by `pick`. */
function mutate(value: Planned, replacement: Planned, pick: number): Planned {
  if (value === null || typeof value !== 'object' || value instanceof PoolPick || value instanceof RawJson) return replacement;
  const keys = Object.keys(value);
  if (keys.length === 0) return Array.isArray(value) ? [replacement] : { ...value, extra: replacement };
  const key = keys[pick % keys.length];
  const copy: any = Array.isArray(value) ? [...value] : { ...value };
  copy[key] = pick % 3 === 0 ? replacement : mutate(copy[key], replacement, Math.floor(pick / 3));
  return copy;
}

const hostileLeaf: fc.Arbitrary<Planned> = fc.oneof(
  fc.constantFrom(...hostileStrings),
  fc.constantFrom(...hostileNumbers),
  fc.constantFrom(NESTING(70), NESTING(10_000)),
  fc.constantFrom(...hostileStrings).map((key) => ({ [key]: 1 })),
);

/** Every planned request for one operation of a table: mostly valid, often hostile in one place. */
export function plannedRequest(server: PlannedRequest['server'], document: Schema, op: FuzzOperation, pools: PoolsByField): fc.Arbitrary<PlannedRequest> {
  const params = op.params ? plannedValue(document, op.params, pools, null) : fc.constant({});
  const query = op.query ? plannedValue(document, op.query, pools, null) : fc.constant({});
  const body = op.body ? plannedValue(document, op.body, pools, null) : fc.constant(null);
  const base = fc.record({ params, query, body }).map(
    ({ params, query, body }): PlannedRequest => ({
      server,
      operationId: op.operationId,
      method: op.method,
      params: params as Record<string, Planned>,
      query: query as Record<string, Planned>,
      body: body === null ? null : { kind: 'json', value: body },
    }),
  );
  const paramNames = Object.keys(op.params?.properties ?? {});
  return fc.oneof(
    { arbitrary: base, weight: 6 },
    {
      arbitrary: fc.tuple(base, hostileLeaf, fc.nat()).map(([request, leaf, pick]) =>
        request.body?.kind === 'json' ? { ...request, body: { kind: 'json' as const, value: mutate(request.body.value, leaf, pick) } } : request,
      ),
      weight: op.body ? 4 : 0,
    },
    { arbitrary: fc.tuple(base, fc.constantFrom(...hostileBodies)).map(([request, body]) => ({ ...request, body })), weight: op.body ? 1 : 0 },
    {
      arbitrary: fc.tuple(base, fc.constantFrom(...hostileSegments), fc.nat()).map(([request, encoded, pick]) =>
        paramNames.length === 0 ? request : { ...request, params: { ...request.params, [paramNames[pick % paramNames.length]]: { encoded } } },
      ),
      weight: paramNames.length > 0 ? 2 : 0,
    },
    { arbitrary: fc.tuple(base, fc.constantFrom(...hostileQueries)).map(([request, raw]) => ({ ...request, query: { raw } })), weight: 1 },
  );
}

/** JSON text of a resolved plan: `RawJson` leaves written as they are. */
export function toJsonText(value: Planned): string {
  if (value instanceof RawJson) return value.text;
  if (value instanceof PoolPick) throw new Error('resolve pool picks before writing the body');
  if (Array.isArray(value)) return `[${value.map(toJsonText).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value).map(([key, item]) => `${JSON.stringify(key)}:${toJsonText(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The plan with every `PoolPick` replaced by `resolve(pick)`. */
export function resolvePicks(value: Planned, resolve: (pick: PoolPick) => Planned): Planned {
  if (value instanceof PoolPick) return resolve(value);
  if (value instanceof RawJson || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => resolvePicks(item, resolve));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, resolvePicks(item, resolve)]));
}

/**
 * The principal of a hosted request to an operation open to `allowed` (the operation's row of the
 * §7 principals table): mostly one of those kinds, sometimes another kind or a key that is no live
 * key, so the refusals (401, 403) are fuzzed too.
 */
export function principalArbitrary(allowed: readonly PlannedPrincipal['kind'][]): fc.Arbitrary<PlannedPrincipal> {
  const others = (['none', 'human', 'agent', 'admin'] as const).filter((kind) => !allowed.includes(kind));
  return fc.oneof(
    { arbitrary: fc.record({ kind: fc.constantFrom(...allowed), pick: fc.nat() }), weight: 10 },
    { arbitrary: fc.record({ kind: fc.constantFrom<PlannedPrincipal['kind']>('invalid', ...others), pick: fc.nat() }), weight: 1 },
  );
}
