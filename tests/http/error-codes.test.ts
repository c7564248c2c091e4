/**
 * One error enum per document (issue 25 §3): every code the gateway answers is in
 * `components.schemas.ErrorCode` of `openapi/gateway.yaml` with its meaning
 * (`x-enumDescriptions`) and its HTTP statuses (`x-holon-status`), and the same holds for the
 * clearing contract's §7.2 vocabulary in `openapi/clearing.yaml`. The source is scanned for the
 * places a code is raised (an `HttpError`, a refused call's `Stop`, a denial, a runtime failure,
 * a body written by hand): each such code is in its document's enum and answered with a status
 * the document lists for it, and each code of an enum is raised somewhere.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import YAML from 'yaml';
import { gatewayErrorCodes } from '../../generated/gateway/server.ts';
import { clearingErrorCodes } from '../../generated/clearing/server.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The `ErrorCode` schema of `openapi/<name>.yaml`, as written. */
function errorCodeSchema(name: string): { enum: string[]; 'x-enumDescriptions': Record<string, string>; 'x-holon-status': Record<string, number[]> } {
  return YAML.parse(readFileSync(path.join(root, 'openapi', `${name}.yaml`), 'utf8')).components.schemas.ErrorCode;
}

/** Every `.ts` file under `src/<dir>`, as `[path, text]`. */
function sources(...dirs: string[]): Array<[string, string]> {
  return dirs.flatMap((dir) =>
    readdirSync(path.join(root, 'src', dir), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts') && !file.includes('node_modules') && !file.includes('browser'))
      .map((file): [string, string] => [`src/${dir}/${file}`, readFileSync(path.join(root, 'src', dir, file), 'utf8')]),
  );
}

/** One place a code is raised: the file, the code and, when the source states it, the HTTP status. */
interface Raised {
  file: string;
  code: string;
  status: number | null;
}

/**
 * The forms a code is raised in. With a status: `new HttpError(404, 'code'`, a refusal helper
 * `refuse(422, 'code'`, a refused call `new Stop('denied', 403, 'code'` (or a choice of two
 * codes). Without one: a denial `deny('code'`, a runtime `failure('code'`, a code field
 * `code: 'code'`, a literal checked `'code' satisfies …ErrorCode`, a held receipt closed with a
 * code, a scope refusal `requireScope(…, 'code'`, and the manifest refusals publishing answers.
 */
function raisedCodes(files: Array<[string, string]>): Raised[] {
  const found: Raised[] = [];
  const withStatus = [
    /new HttpError\(\s*(\d{3}),\s*'(\w+)'/g,
    /\brefuse\(\s*(\d{3}),\s*'(\w+)'/g,
    /new Stop\(\s*'\w+',\s*(\d{3}),\s*'(\w+)'/g,
  ];
  const choice = /new Stop\(\s*'\w+',\s*(\d{3}),[^?]*\?\s*'(\w+)'\s*:\s*'(\w+)'/g;
  const codeOnly = [
    /\bdeny\('(\w+)'/g,
    /\bfailure\('(\w+)'/g,
    // Lowercase: a Node error's `code: 'EEXIST'` or a unit's `code: 'EUR'` is no refusal.
    /\bcode: '([a-z][a-z0-9_]*)'/g,
    /'(\w+)' satisfies \w*ErrorCode\b/g,
    /closeHeldReceipt\([^;]*?'(?:rejected|failed)',\s*'(\w+)'/g,
    /requireScope\([^;]*?'(no_such_\w+)'/g,
  ];
  for (const [file, text] of files) {
    for (const pattern of withStatus) for (const m of text.matchAll(pattern)) found.push({ file, code: m[2], status: Number(m[1]) });
    for (const m of text.matchAll(choice)) for (const code of [m[2], m[3]]) found.push({ file, code, status: Number(m[1]) });
    for (const pattern of codeOnly) for (const m of text.matchAll(pattern)) found.push({ file, code: m[1], status: null });
    const refusals = /MANIFEST_REFUSALS = \[([^\]]*)\]/.exec(text);
    if (refusals) for (const m of refusals[1].matchAll(/'(\w+)'/g)) found.push({ file, code: m[1], status: 422 });
  }
  return found;
}

/** Codes written in `code: '…'` fields that are not error codes: admission's allow code. */
const NOT_ERRORS = new Set(['allowed']);

// `src/http` serves both: its answers belong to both vocabularies, except the helpers of
// `errors.ts`, which each side raises through (`noSuchObject` is the binding's alone).
const gatewaySide = raisedCodes(sources('gateway', 'hosted', 'mcp', 'runtimes', 'http', 'contracts').filter(([file]) => file !== 'src/http/errors.ts')).filter((r) => !NOT_ERRORS.has(r.code));
const clearingSide = raisedCodes(sources('clearing', 'http'));

/** The reference binding's own codes (clearing-contract §7.2 lets a binding add codes); `src/http/errors.ts` `BindingOwnCode`. */
const BINDING_OWN: Record<string, number[]> = { overloaded: [503], database_unavailable: [503] };

for (const [name, table, raised, extra] of [
  ['gateway', gatewayErrorCodes, gatewaySide, {}],
  ['clearing', clearingErrorCodes, clearingSide, BINDING_OWN],
] as const) {
  const statuses: Record<string, readonly number[]> = { ...Object.fromEntries(Object.entries(table).map(([code, entry]) => [code, entry.status])), ...extra };

  test(`${name}: every code of the ErrorCode enum has a meaning and its statuses in openapi/${name}.yaml, and the generated table is that enum`, () => {
    const schema = errorCodeSchema(name);
    assert.ok(schema.enum.length > 0);
    assert.deepEqual(Object.keys(table), schema.enum, `generated/${name}/server.ts is not the enum of openapi/${name}.yaml: run npm run generate`);
    assert.equal(new Set(schema.enum).size, schema.enum.length, 'a code is listed twice');
    for (const code of schema.enum) {
      assert.match(code, /^[a-z][a-z0-9_]*$/, `${code} is not a lowercase machine token`);
      assert.ok(typeof schema['x-enumDescriptions'][code] === 'string' && schema['x-enumDescriptions'][code].length > 10, `${code} has no description in x-enumDescriptions`);
      assert.ok(Array.isArray(schema['x-holon-status'][code]), `${code} has no x-holon-status list`);
      for (const status of schema['x-holon-status'][code]) assert.ok(Number.isInteger(status) && status >= 400 && status <= 599, `${code}: ${status} is no error status`);
    }
    assert.deepEqual(Object.keys(schema['x-enumDescriptions']).sort(), [...schema.enum].sort(), 'x-enumDescriptions names a code the enum lacks');
    assert.deepEqual(Object.keys(schema['x-holon-status']).sort(), [...schema.enum].sort(), 'x-holon-status names a code the enum lacks');
  });

  test(`${name}: every code raised in src/ is in the enum, with a status the document lists for it`, () => {
    assert.ok(raised.length > 10, 'the scan found the raise sites');
    const problems: string[] = [];
    for (const { file, code, status } of raised) {
      if (!(code in statuses)) problems.push(`${file}: ${code} is not in openapi/${name}.yaml ErrorCode`);
      else if (status !== null && !statuses[code].includes(status)) problems.push(`${file}: ${code} is answered ${status}, the document lists ${JSON.stringify(statuses[code])}`);
    }
    assert.deepEqual(problems, []);
  });

  test(`${name}: every code of the enum is raised somewhere in src/`, () => {
    const used = new Set(raised.map((r) => r.code));
    assert.deepEqual(Object.keys(table).filter((code) => !used.has(code)), []);
  });
}

test('the enum shows in the generated client: ErrorBody.code is ErrorCode, and a refused call may carry the agent\'s own code', () => {
  const types = readFileSync(path.join(root, 'generated/gateway/client/types.gen.ts'), 'utf8');
  assert.match(types, /export type ErrorCode = 'invalid_request' \| 'not_permitted' \| /);
  assert.match(types, /export type ErrorBody = \{\n\s+error: string;\n\s+code: ErrorCode;\n\};/);
  assert.match(types, /code: ErrorCode \| AgentErrorCode;/);
});

test('the statuses the gateway\'s everyday refusals travel with', () => {
  // What callers branch on: a change here is a change of the API.
  const expected: Record<string, number[]> = {
    invalid_request: [422, 415], not_permitted: [403], no_such_route: [404], not_offered: [404], internal_error: [500],
    key_required: [401], invalid_key: [401], wrong_principal: [403], rate_limited: [429],
    no_such_mandate: [404], no_such_agent: [404], over_budget: [403], rejected_input: [422], agent_error: [502],
    clearing_unavailable: [503], settlement_backlog: [503], approval_decided: [409], gateway_restarted: [],
  };
  for (const [code, status] of Object.entries(expected)) assert.deepEqual(gatewayErrorCodes[code as keyof typeof gatewayErrorCodes].status, status, code);
});
