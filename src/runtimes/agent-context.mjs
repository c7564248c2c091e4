/**
 * What an agent reports besides its output, and the rules for it: one module shared by the dev
 * runtime (`ctx` of `agent.mjs`), the MCP runtime (checking `_meta["holon/units"]` and
 * `_meta["holon/quote"]` of a result) and the reference host `agents/host.mjs` (`ctx` of each
 * `tool.mjs`), so an agent is held to the same rules whichever way it runs (gateway §6).
 *
 * Plain JavaScript because `agents/host.mjs` runs on plain Node; types in `agent-context.d.mts`.
 */

/** A declared error code: the manifest's `error_code` (a lowercase letter, then `a-z0-9_`, at most 64). */
export const ERROR_CODE_PATTERN = /^[a-z][a-z0-9_]{0,63}$/;

/** A quote: a non-negative decimal string, no sign, no exponent, at most 40 characters (gateway §2). */
const QUOTE_PATTERN = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;
const QUOTE_MAX_CHARS = 40;

/** A failure the agent declares with a code (`throw ctx.error('not_csv')`); billing follows `interface.errors`. */
export class AgentError extends Error {
  /**
   * @param {string} code a declared error code, {@link ERROR_CODE_PATTERN}
   * @param {string} message what went wrong, for the caller
   */
  constructor(code, message) {
    super(message);
    this.name = 'AgentError';
    this.code = code;
  }
}

/**
 * `ctx.error(code, message?)`: the error to throw for a declared failure. A code that is not a
 * valid error code throws a TypeError at once, which ends the run as `agent_error`.
 * @param {unknown} code
 * @param {unknown} [message]
 * @returns {AgentError}
 */
export function agentError(code, message) {
  if (typeof code !== 'string' || !ERROR_CODE_PATTERN.test(code)) {
    throw new TypeError(`ctx.error: ${JSON.stringify(code)} is not an error code (a lowercase letter, then a-z, 0-9 or _; at most 64)`);
  }
  return new AgentError(code, typeof message === 'string' ? message : code);
}

/**
 * Checks a units report: a non-negative safe integer (gateway §6 `_meta["holon/units"]`).
 * @param {unknown} value
 * @returns {number}
 * @throws {TypeError} naming the value otherwise
 */
export function toUnits(value) {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new TypeError(`units must be a non-negative integer, got ${JSON.stringify(value) ?? String(value)}`);
  }
  return value;
}

/**
 * Checks a quote and answers it as a decimal string (gateway §6 `_meta["holon/quote"]`). A string
 * must already be a plain decimal (`"0.25"`); a finite non-negative number is written out in
 * decimal (`2.5e-7` → `"0.00000025"`). The gateway rounds a quote finer than one micro-unit up.
 * @param {unknown} value
 * @returns {string}
 * @throws {TypeError} naming the value otherwise
 */
export function toQuote(value) {
  const text = typeof value === 'number' && Number.isFinite(value) && value >= 0 ? plainDecimal(value) : value;
  if (typeof text !== 'string' || text.length > QUOTE_MAX_CHARS || !QUOTE_PATTERN.test(text)) {
    throw new TypeError(`a quote must be a non-negative decimal string like "0.25", got ${JSON.stringify(value) ?? String(value)}`);
  }
  return text;
}

/** `x` in positional notation: `String(x)` with any exponent expanded. */
function plainDecimal(x) {
  const [mantissa, exponentText] = String(x).split('e');
  if (exponentText === undefined) return mantissa;
  const exponent = Number(exponentText);
  const [whole, fraction = ''] = mantissa.split('.');
  const digits = whole + fraction;
  const point = whole.length + exponent;
  if (point <= 0) return `0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return digits + '0'.repeat(point - digits.length);
  return `${digits.slice(0, point)}.${digits.slice(point)}`;
}

/**
 * The reporting half of an agent's `ctx`: `units(n)` adds up (several calls sum: DESIGN open
 * point 3), `quote(x)` keeps the last value. `totals()` answers what was reported, `null` for
 * what never was.
 * @returns {{ units(n: unknown): void, quote(x: unknown): void, totals(): { units: number | null, quote: string | null } }}
 */
export function createReport() {
  let units = null;
  let quote = null;
  return {
    units(n) {
      const sum = (units ?? 0) + toUnits(n);
      if (!Number.isSafeInteger(sum)) throw new TypeError(`units add up to ${sum}, beyond a safe integer`);
      units = sum;
    },
    quote(x) {
      quote = toQuote(x);
    },
    totals() {
      return { units, quote };
    },
  };
}
