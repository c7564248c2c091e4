/**
 * The manifest (`holon.yaml`): parse, validate against `openapi/manifest.schema.json` and the rules
 * beside it, and normalize into {@link Manifest} with money in integer micro-units
 * (gateway §1-§3, §6; DESIGN "Manifest").
 */
import semver from 'semver';
import { ContractError } from './errors.ts';
import { parseMoney, parseShare, type Micros } from './money.ts';
import { parseAgentRef } from './resolve.ts';
import { assertValidDocument, compileAuthorSchema, createValidator, validationProblems } from './schema-check.ts';
import { manifestSchema } from './schemas.ts';
import { parseYamlDocument } from './yaml-document.ts';

/** `runtime.kind` (gateway §6). */
export type RuntimeKind = 'dev' | 'mcp' | 'webhook' | 'container' | 'a2a';

/** A JSON Schema written by the author (an object or a boolean). */
export type AuthorSchema = Record<string, unknown> | boolean;

/** `price`, with amounts in integer micro-units of `currency` (gateway §2). */
export type Price =
  | { model: 'free'; currency: string }
  | { model: 'per_run'; currency: string; amount_micros: Micros }
  | { model: 'per_unit'; currency: string; amount_micros: Micros; unit: string; max_micros: Micros }
  | { model: 'quote'; currency: string; max_micros: Micros };

/** One entry of `calls`: exactly one of `capability` and `agent` is set; `max_cost_micros` is in `price.currency`. */
export interface DeclaredCall {
  capability: string | null;
  agent: string | null;
  max_cost_micros: Micros;
}

/** A validated, normalized manifest. Every default of the schema is filled in. */
export interface Manifest {
  id: string;
  version: string;
  summary: string;
  capabilities: string[];
  interface: {
    input: AuthorSchema;
    output: AuthorSchema;
    errors: Record<string, { billed: boolean; description: string | null }>;
    charge_on: 'success' | 'attempt';
  };
  price: Price;
  runtime: { kind: RuntimeKind; endpoint: string | null; tool: string | null; timeout_s: number };
  calls: DeclaredCall[];
  /** Null exactly when `calls` is empty. `cap_micros` is in `price.currency`. */
  downstream: { mode: 'passthrough'; cap_micros: Micros } | { mode: 'included' } | null;
  license: string;
  source: { repository: string } | null;
  /** `royalty_ppm`: the share of this agent's revenue paid upstream, in parts per million (0.15 → 150000). */
  lineage: { fork_of: string; royalty_ppm: number } | null;
  examples: Array<{ input: unknown; output: unknown }>;
}

/**
 * Validators of the agent's interface: each returns null when `data` is valid, else sentences
 * naming the field (`input.rows[0]: must be object`). Patterns run on RE2 (gateway §7 "Limits").
 */
export interface InterfaceCheck {
  input(data: unknown): string[] | null;
  output(data: unknown): string[] | null;
}

/** A manifest with its compiled interface validators: what the gateway keeps per listed version. */
export interface LoadedManifest {
  manifest: Manifest;
  check: InterfaceCheck;
}

/** Codes the gateway emits itself; an agent may not declare them (manifest `interface.errors`). */
export const GATEWAY_ERROR_CODES: ReadonlySet<string> = new Set([
  'rejected_input', 'invalid_output', 'agent_error', 'timeout', 'runtime_unavailable',
  'gateway_error', 'gateway_restarted', 'file_not_found', 'denied', 'pending_approval',
]);

const validateDocument = createValidator({ strict: true, allErrors: true, useDefaults: true }).compile(manifestSchema);

/**
 * Parses `holon.yaml` text (YAML 1.2 core schema, duplicate keys refused) and validates it as
 * {@link validateManifest} does. Throws ContractError `invalid_manifest` on a YAML syntax error
 * (with line and column) and whatever {@link validateManifest} throws.
 */
export function parseManifest(yamlText: string): LoadedManifest {
  return validateManifest(parseYamlDocument(yamlText, 'invalid_manifest', 'holon.yaml'));
}

/**
 * Validates a manifest document (the JSON of `POST /v0/agents`, or parsed `holon.yaml`) and
 * normalizes it. The input is not modified.
 * Throws ContractError `invalid_manifest` naming every schema problem (up to 10) or the first
 * broken rule (e.g. `calls[0].agent` with a range that is not semver), and `invalid_schema`
 * when an author schema is not JSON Schema 2020-12 on RE2.
 */
export function validateManifest(document: unknown): LoadedManifest {
  const doc = structuredClone(document);
  assertValidDocument(validateDocument, doc, 'invalid_manifest');
  const manifest = normalize(doc as Record<string, any>);
  checkRules(manifest);
  const input = compileAuthorSchema(manifest.interface.input, 'interface.input');
  const output = compileAuthorSchema(manifest.interface.output, 'interface.output');
  const check: InterfaceCheck = {
    input: (data) => validationProblems(input, data, 'input'),
    output: (data) => validationProblems(output, data, 'output'),
  };
  manifest.examples.forEach((example, index) => {
    const wrong = check.input(example.input) ?? check.output(example.output);
    if (wrong !== null) {
      throw new ContractError('invalid_manifest', `examples[${index}]: ${wrong.join('; ')}`, `examples[${index}]`);
    }
  });
  return { manifest, check };
}

/** The schema-valid document (defaults filled) as a {@link Manifest}. */
function normalize(doc: Record<string, any>): Manifest {
  const price = doc.price;
  const errors: Manifest['interface']['errors'] = {};
  for (const [code, declared] of Object.entries<Record<string, any>>(doc.interface.errors ?? {})) {
    errors[code] = { billed: declared.billed, description: declared.description ?? null };
  }
  return {
    id: doc.id,
    version: doc.version,
    summary: doc.summary,
    capabilities: doc.capabilities,
    interface: { input: doc.interface.input, output: doc.interface.output, errors, charge_on: doc.interface.charge_on },
    price: normalizePrice(price),
    runtime: {
      kind: doc.runtime.kind,
      endpoint: doc.runtime.endpoint ?? null,
      tool: doc.runtime.tool ?? null,
      timeout_s: doc.runtime.limits.timeout_s,
    },
    calls: (doc.calls ?? []).map((call: Record<string, string>, index: number) => ({
      capability: call.capability ?? null,
      agent: call.agent ?? null,
      max_cost_micros: parseMoney(call.max_cost, `calls[${index}].max_cost`),
    })),
    downstream:
      doc.downstream === undefined
        ? null
        : doc.downstream.mode === 'passthrough'
          ? { mode: 'passthrough', cap_micros: parseMoney(doc.downstream.cap, 'downstream.cap') }
          : { mode: 'included' },
    license: doc.license,
    source: doc.source ?? null,
    lineage:
      doc.lineage === undefined
        ? null
        : { fork_of: doc.lineage.fork_of, royalty_ppm: parseShare(doc.lineage.royalty, 'lineage.royalty') },
    examples: doc.examples ?? [],
  };
}

function normalizePrice(price: Record<string, string>): Price {
  const currency = price.currency;
  switch (price.model) {
    case 'per_run':
      return { model: 'per_run', currency, amount_micros: parseMoney(price.amount, 'price.amount') };
    case 'per_unit':
      return {
        model: 'per_unit',
        currency,
        amount_micros: parseMoney(price.amount, 'price.amount'),
        unit: price.unit,
        max_micros: parseMoney(price.max, 'price.max'),
      };
    case 'quote':
      return { model: 'quote', currency, max_micros: parseMoney(price.max, 'price.max') };
    default:
      return { model: 'free', currency };
  }
}

/** The rules of the manifest schema's top description that JSON Schema cannot say. First broken rule wins. */
function checkRules(manifest: Manifest): void {
  const refuse = (field: string, sentence: string): never => {
    throw new ContractError('invalid_manifest', `${field}: ${sentence}`, field);
  };
  if (semver.valid(manifest.version) !== manifest.version) refuse('version', `"${manifest.version}" is not a strict semver version`);
  const { kind } = manifest.runtime;
  const { model } = manifest.price;
  if (kind === 'webhook' && model !== 'free' && model !== 'per_run') {
    refuse('price.model', `a webhook runtime is priced free or per_run, not ${model}: its answer has no channel for units or a quote (gateway §6)`);
  }
  if (manifest.calls.length > 0 && manifest.downstream === null) {
    refuse('downstream', 'is required when calls is non-empty: say who pays the downstream calls (passthrough or included)');
  }
  if (manifest.calls.length === 0 && manifest.downstream !== null) {
    refuse('downstream', 'is only allowed with a non-empty calls: there are no downstream calls to pay for');
  }
  manifest.calls.forEach((call, index) => {
    if (call.agent === null) return;
    try {
      parseAgentRef(call.agent);
    } catch (error) {
      refuse(`calls[${index}].agent`, (error as Error).message);
    }
  });
  for (const [code, declared] of Object.entries(manifest.interface.errors)) {
    const field = `interface.errors.${code}`;
    if (GATEWAY_ERROR_CODES.has(code)) refuse(field, `"${code}" is a code the gateway emits itself; choose another code`);
    if (code === 'over_budget' && declared.billed) {
      refuse(`${field}.billed`, 'over_budget refuses a caller\'s max_cost up front and is never billed (gateway §2 "Caller cap")');
    }
    if (declared.billed && manifest.interface.charge_on !== 'attempt') {
      refuse(`${field}.billed`, 'billed: true only applies under interface.charge_on: attempt; set it, or set billed: false');
    }
  }
}
