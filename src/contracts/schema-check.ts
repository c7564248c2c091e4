/**
 * JSON Schema validation on RE2, for author schemas and for our own manifest and mandate schemas
 * (gateway §7 "Limits": author schemas run on RE2, so an author's `pattern` cannot freeze the gateway).
 *
 * Author schemas are JSON Schema 2020-12. Every `pattern` and `patternProperties` key runs on RE2
 * (linear time, no backreferences or lookaround); a pattern RE2 cannot compile is refused when the
 * manifest is validated, with the path of the pattern in the message.
 */
import { Ajv2020, type ErrorObject, type Options, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsPlugin from 'ajv-formats';
import RE2 from 're2';
import { ContractError } from './errors.ts';

type RegExpEngine = NonNullable<NonNullable<Options['code']>['regExp']>;

/** ajv's regular-expression engine option backed by RE2 (ajv docs "Options: code.regExp"). */
const re2Engine: RegExpEngine = Object.assign((pattern: string, flags: string) => new RE2(pattern, flags), {
  code: 'new (require("re2"))',
});

/** Keywords whose values are data, not schemas: a `pattern` key inside them is not a pattern. */
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'examples']);

/** At most this many problems are listed in one refusal. */
const MAX_LISTED_ERRORS = 10;

/**
 * A JSON Schema 2020-12 validator whose `pattern`s run on RE2, with ajv-formats.
 * `strict` is for our own schemas (a typo in them is a bug); author schemas are compiled lenient
 * (unknown keywords and formats are annotations, as JSON Schema says).
 */
export function createValidator(options: { strict: boolean; allErrors: boolean; useDefaults: boolean }): Ajv2020 {
  const ajv = new Ajv2020({
    strict: options.strict,
    allowUnionTypes: true,
    strictRequired: false,
    allErrors: options.allErrors,
    useDefaults: options.useDefaults,
    logger: false,
    // An author's schema is checked against the 2020-12 meta-schema; ours (strict) are checked by
    // `npm run lint:openapi` and the tests, and `strict` still refuses an unknown keyword: not
    // compiling the meta-schema for each of them saves its cost at every start.
    validateSchema: !options.strict,
    code: { regExp: re2Engine },
  });
  addFormatsPlugin.default(ajv);
  return ajv;
}

/** One shared instance for author schemas: compiling the meta-schema once costs about 100 ms. */
const authorValidator = createValidator({ strict: false, allErrors: false, useDefaults: false });

/**
 * Compiles an author's schema (`interface.input`, `interface.output`) for validating call data.
 * `field` is where the schema sits in the manifest (`interface.input`), used in messages.
 * Throws ContractError `invalid_schema` when the schema is not valid JSON Schema 2020-12 or a
 * pattern does not compile on RE2, e.g. `interface.input.properties.code.pattern: "(a)\1" does
 * not run on RE2 (invalid escape sequence: \1)`.
 */
export function compileAuthorSchema(schema: unknown, field: string): ValidateFunction {
  if (typeof schema !== 'boolean' && (typeof schema !== 'object' || schema === null || Array.isArray(schema))) {
    throw new ContractError('invalid_schema', `${field}: must be a JSON Schema (an object or a boolean)`, field);
  }
  checkPatterns(schema, field);
  try {
    return authorValidator.compile(schema);
  } catch (error) {
    throw new ContractError('invalid_schema', `${field}: not a valid JSON Schema 2020-12 (${(error as Error).message})`, field);
  } finally {
    // Forget the schema once compiled: two authors' schemas may share an `$id` without clashing.
    if (typeof schema === 'object') authorValidator.removeSchema(schema);
  }
}

/** Walks a schema and refuses the first `pattern` or `patternProperties` key RE2 cannot compile. */
function checkPatterns(node: unknown, path: string): void {
  if (typeof node !== 'object' || node === null) return;
  if (Array.isArray(node)) {
    node.forEach((item, index) => checkPatterns(item, `${path}[${index}]`));
    return;
  }
  for (const [key, value] of Object.entries(node)) {
    const at = `${path}.${key}`;
    if (DATA_KEYWORDS.has(key)) continue;
    if (key === 'pattern' && typeof value === 'string') compileOnRe2(value, at);
    if (key === 'patternProperties' && typeof value === 'object' && value !== null) {
      for (const pattern of Object.keys(value)) compileOnRe2(pattern, `${at}["${pattern}"]`);
    }
    checkPatterns(value, at);
  }
}

function compileOnRe2(pattern: string, field: string): void {
  try {
    new RE2(pattern, 'u');
  } catch (error) {
    throw new ContractError('invalid_schema', `${field}: ${JSON.stringify(pattern)} does not run on RE2 (${(error as Error).message})`, field);
  }
}

/** One problem found by a validator: the field's dotted path and a sentence that starts with it. */
interface Problem {
  field: string;
  sentence: string;
}

/**
 * Validates `data` with a compiled validator. Returns null when valid, else one sentence per
 * problem (at most 10) naming the field from `root`: `input.items[2].name: must match pattern "^[a-z]+$"`.
 */
export function validationProblems(validate: ValidateFunction, data: unknown, root: string): string[] | null {
  const problems = findProblems(validate, data, root);
  return problems === null ? null : problems.map((problem) => problem.sentence);
}

/**
 * Validates one of our own documents (a manifest, a mandate) with its compiled schema.
 * Throws ContractError `code` listing every problem (at most 10), its `field` the first one's.
 */
export function assertValidDocument(validate: ValidateFunction, document: unknown, code: 'invalid_manifest' | 'invalid_mandate'): void {
  const problems = findProblems(validate, document, '');
  if (problems !== null) throw new ContractError(code, problems.map((problem) => problem.sentence).join('; '), problems[0].field);
}

function findProblems(validate: ValidateFunction, data: unknown, root: string): Problem[] | null {
  if (validate(data)) return null;
  // An `if`/`then` failure repeats the error found inside `then`: keep only the latter.
  const errors = (validate.errors ?? []).filter((error) => error.keyword !== 'if');
  return errors.slice(0, MAX_LISTED_ERRORS).map((error) => describeError(error, root));
}

/** One ajv error as a {@link Problem}. */
function describeError(error: ErrorObject, root: string): Problem {
  const path = fieldPath(root, error.instancePath);
  const params = error.params as Record<string, unknown>;
  const problem = (field: string, message: string): Problem => {
    const at = field === '' ? '(document)' : field;
    return { field: at, sentence: `${at}: ${message}` };
  };
  switch (error.keyword) {
    case 'required':
      return problem(join(path, String(params.missingProperty)), 'is required');
    case 'additionalProperties':
      return problem(join(path, String(params.additionalProperty)), 'is not a known field');
    case 'false schema':
      return problem(path, 'is not allowed here');
    case 'type':
      // Money is a quoted decimal: YAML reads `amount: 0.10` as a float, which we never accept.
      return problem(path, error.schemaPath.includes('/$defs/decimal') ? 'must be a decimal string; quote it, e.g. "0.10"' : String(error.message));
    default:
      return problem(path, String(error.message));
  }
}

/** `('input', '/items/2/name')` → `input.items[2].name`, decoding JSON Pointer escapes. */
function fieldPath(root: string, instancePath: string): string {
  if (instancePath === '') return root;
  return instancePath
    .split('/')
    .slice(1)
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((path, token) => (/^[0-9]+$/.test(token) ? `${path}[${token}]` : join(path, token)), root);
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}
