/**
 * The mandate: parse, validate against `openapi/mandate.schema.json` and the rules beside it, and
 * normalize into {@link Mandate} with money in integer micro-units (gateway §1 "Admit", §3;
 * DESIGN "Mandate").
 */
import { ContractError } from './errors.ts';
import type { RuntimeKind } from './manifest.ts';
import { parseMoney, parseRate, type Micros, type RateNanos } from './money.ts';
import { parseAgentRef } from './resolve.ts';
import { assertValidDocument, createValidator } from './schema-check.ts';
import { mandateSchema } from './schemas.ts';
import { parseYamlDocument } from './yaml-document.ts';

/** A validated, normalized mandate. Every default of the schema is filled in. */
export interface Mandate {
  id: string;
  issuer: string;
  grantee: string;
  allow: { agents: string[]; capabilities: string[]; published: boolean };
  deny: { agents: string[]; capabilities: string[] };
  /** `runtimes`: null means any runtime. */
  require: { open_source: boolean; runtimes: RuntimeKind[] | null };
  data: { remote: boolean };
  /** `above_micros`: in `budget.currency`; null means no amount threshold. */
  approval: { above_micros: Micros | null; agents: string[]; capabilities: string[] };
  /** `fx`: currency code → rate into `currency`, × 10^9 (see money.ts `RateNanos`). */
  budget: { total_micros: Micros; currency: string; fx: Readonly<Record<string, RateNanos>> };
  delegation: { max_depth: number };
  /** Milliseconds since the epoch, or null for no expiry. */
  expires_at_ms: number | null;
}

/**
 * What joins a derived sub-mandate's id to its parent's: `alice/q4.r4` is derived from `alice/q4`
 * for the run of receipt `r4` (gateway §3). A root mandate's id never holds it, so the root of any
 * id is the part before the first one.
 */
const DERIVED_JOIN = '.';

/**
 * The root mandate of a mandate id (gateway §3): a root id is its own root; a derived
 * sub-mandate's id is `<root>.<receipt>[.<receipt>…]`, one receipt per level of delegation, so
 * its root is what comes before the first dot. Exact because {@link validateRootMandate} refuses
 * a root id with a dot. The one place the gateway decides which root an id belongs to.
 */
export function rootMandateOf(id: string): string {
  const join = id.indexOf(DERIVED_JOIN);
  return join === -1 ? id : id.slice(0, join);
}

/** Whether `id` can name a root mandate: it has no dot (gateway §3; a dot only ever starts a derived sub-mandate's receipt part). */
export function isRootMandateId(id: string): boolean {
  return !id.includes(DERIVED_JOIN);
}

const validateDocument = createValidator({ strict: true, allErrors: true, useDefaults: true }).compile(mandateSchema);

/**
 * Parses a mandate written in YAML (or JSON, a subset) and validates it as {@link validateMandate}.
 * Throws ContractError `invalid_mandate` on a syntax error and whatever {@link validateMandate} throws.
 */
export function parseMandate(yamlText: string): Mandate {
  return validateMandate(parseYamlDocument(yamlText, 'invalid_mandate', 'mandate'));
}

/**
 * Validates a root mandate's document (one an issuer writes, not one derived for a run) as
 * {@link validateMandate}, and its id has no dot: `alice/v1.5` would read as a sub-mandate derived
 * from `alice/v1` (gateway §3), so its calls and receipts would be counted under another root.
 * Throws ContractError `invalid_mandate` (field `id`) naming the id and a name to use instead.
 */
export function validateRootMandate(document: unknown): Mandate {
  const mandate = validateMandate(document);
  if (!isRootMandateId(mandate.id)) {
    const suggestion = mandate.id.split(DERIVED_JOIN).join('-');
    throw new ContractError(
      'invalid_mandate',
      `id: "${mandate.id}" has a dot, and a root mandate's id has none: a dot joins a sub-mandate derived for a run to its parent, so "${mandate.id}" would read as derived from "${rootMandateOf(mandate.id)}". Name it without a dot, e.g. "${suggestion}"`,
      'id',
    );
  }
  return mandate;
}

/**
 * Validates a mandate document and normalizes it. The input is not modified.
 * Throws ContractError `invalid_mandate` naming every schema problem (up to 10) or the first broken
 * rule: a root mandate's id outside its issuer's namespace, an `@range` that is not semver, an fx
 * rate of 0 or an fx entry for the budget's own currency.
 */
export function validateMandate(document: unknown): Mandate {
  const doc = structuredClone(document) as Record<string, any>;
  assertValidDocument(validateDocument, doc, 'invalid_mandate');
  const refuse = (field: string, sentence: string): never => {
    throw new ContractError('invalid_mandate', `${field}: ${sentence}`, field);
  };
  if (!doc.issuer.includes('/') && !doc.id.startsWith(`${doc.issuer}/`)) {
    refuse('id', `"${doc.id}" must be in the issuer's namespace "${doc.issuer}/"`);
  }
  for (const list of ['allow', 'deny', 'approval'] as const) {
    doc[list].agents.forEach((pattern: string, index: number) => {
      if (pattern === '*' || pattern.endsWith('/*')) return;
      try {
        parseAgentRef(pattern);
      } catch (error) {
        refuse(`${list}.agents[${index}]`, (error as Error).message);
      }
    });
  }
  const fx: Record<string, RateNanos> = {};
  for (const [currency, rate] of Object.entries<string>(doc.budget.fx)) {
    if (currency === doc.budget.currency) refuse(`budget.fx.${currency}`, `is the budget's own currency: its rate is 1 by definition`);
    const field = `budget.fx.${currency}`;
    try {
      fx[currency] = parseRate(rate, field);
    } catch (error) {
      throw new ContractError('invalid_mandate', (error as Error).message, field);
    }
  }
  return {
    id: doc.id,
    issuer: doc.issuer,
    grantee: doc.grantee,
    allow: { agents: doc.allow.agents, capabilities: doc.allow.capabilities, published: doc.allow.published },
    deny: { agents: doc.deny.agents, capabilities: doc.deny.capabilities },
    require: { open_source: doc.require.open_source, runtimes: doc.require.runtimes ?? null },
    data: { remote: doc.data.remote },
    approval: {
      above_micros: doc.approval.above === undefined ? null : parseMoney(doc.approval.above, 'approval.above'),
      agents: doc.approval.agents,
      capabilities: doc.approval.capabilities,
    },
    budget: { total_micros: parseMoney(doc.budget.total, 'budget.total'), currency: doc.budget.currency, fx },
    delegation: { max_depth: doc.delegation.max_depth },
    expires_at_ms: doc.expires_at === undefined ? null : Date.parse(doc.expires_at),
  };
}
