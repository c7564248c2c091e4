/**
 * The one error type the contract layer raises.
 *
 * Every refusal of a manifest, a mandate, an amount or an agent's report is a `ContractError`
 * with a machine `code` and a human sentence that names the field and the value that caused it
 * (STYLE: "a refusal names the numbers that caused it").
 */

/** Machine codes of {@link ContractError}, one per kind of refusal. */
export type ContractErrorCode =
  /** A decimal amount, rate or share is malformed, negative, too precise or too large. */
  | 'invalid_money'
  /** A manifest (`holon.yaml` or its JSON) breaks `openapi/manifest.schema.json` or a rule beside it. */
  | 'invalid_manifest'
  /** A mandate breaks `openapi/mandate.schema.json` or a rule beside it. */
  | 'invalid_mandate'
  /** An author's `interface.input` / `interface.output` is not a JSON Schema that runs on RE2. */
  | 'invalid_schema'
  /** An agent reference `ns/name[@range]` is malformed. */
  | 'invalid_ref'
  /** An agent reported units that are not non-negative safe integers (gateway §6 `holon/units`). */
  | 'invalid_units'
  /** An agent reported a quote that is not a non-negative decimal string (gateway §6 `holon/quote`). */
  | 'invalid_quote'
  /** A `lineage.fork_of` names no listed version, loops, or the chain is longer than allowed (gateway §7 Limits). */
  | 'invalid_lineage';

/**
 * A refusal from the contract layer.
 * `field` is the dotted path of the offending field (`price.amount`, `calls[0].max_cost`), or null
 * when the value is not part of a document.
 */
export class ContractError extends Error {
  readonly code: ContractErrorCode;
  readonly field: string | null;

  constructor(code: ContractErrorCode, message: string, field: string | null = null) {
    super(message);
    this.name = 'ContractError';
    this.code = code;
    this.field = field;
  }
}
