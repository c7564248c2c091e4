/**
 * The one reader of numbers from the environment (issue 25 §4): every numeric setting of every
 * Holon process (`HOLON_RATE_*`, `HOLON_OUTBOX_MAX_PENDING`, `HOLON_PROCESS_LEASE_S`, the clearing
 * timeouts and write path, the agents port, ...) is declared as a {@link NumberVariable} with a
 * default, a minimum and a maximum, and read here. A value outside its range never reaches the
 * code that uses it: the process refuses to start with one line naming the variable, the value
 * it was given, the allowed range and the default, so an operator can fix it without the docs.
 *
 * The bottom room `src/config/` imports nothing of `src/` (TigerStyle: every bound is explicit).
 */

/**
 * A numeric setting read from the environment. `D` is the default's type: a number, or null when
 * an unset variable means "decide at start-up" (then {@link NumberVariable.unset} says how).
 */
export interface NumberVariable<D extends number | null = number> {
  /** The variable's name, e.g. `HOLON_RATE_ACCOUNT`. */
  name: string;
  /** What the number counts, with its unit, e.g. `requests per account per minute`: the refusal says it. */
  what: string;
  /** The value when the variable is unset or empty. */
  default: D;
  /** What an unset variable means when {@link NumberVariable.default} is null, e.g. `4300 when free, else any free port`. */
  unset?: string;
  /** The smallest value accepted (inclusive). */
  min: number;
  /** The largest value accepted (inclusive): every setting has one. */
  max: number;
  /** Whole numbers only (`42`); else decimals too (`0.5`). Neither takes a sign, an exponent or hex. */
  integer: boolean;
}

/** A refusal to start over one setting: its message is the one line the operator reads. */
export class SettingRefused extends Error {
  override name = 'SettingRefused';
}

const WHOLE = /^\d{1,16}$/;
const DECIMAL = /^(\d{1,16}(\.\d{0,16})?|\.\d{1,16})$/;

/** The sentence that states `variable`'s range and default, as the refusal and the docs say it. */
export function describeRange(variable: NumberVariable<number | null>): string {
  const kind = variable.integer ? 'a whole number' : 'a number';
  const fallback = variable.default === null ? (variable.unset ?? 'none') : String(variable.default);
  return `${kind} from ${variable.min} to ${variable.max} (${variable.what}; default ${fallback})`;
}

/**
 * The value of `variable` in `env`: its default when unset or empty, else the number written
 * (surrounding spaces ignored), which must lie within [min, max]. Throws {@link SettingRefused}
 * otherwise, e.g. `HOLON_RATE_ACCOUNT must be a whole number from 1 to 1000000 (requests per
 * account per minute; default 3000); got "5000000"`.
 */
export function envNumber<D extends number | null>(env: NodeJS.ProcessEnv, variable: NumberVariable<D>): number | D {
  const text = env[variable.name];
  if (text === undefined || text.trim() === '') return variable.default;
  const trimmed = text.trim();
  const value = (variable.integer ? WHOLE : DECIMAL).test(trimmed) ? Number(trimmed) : NaN;
  if (!(value >= variable.min && value <= variable.max)) {
    throw new SettingRefused(`${variable.name} must be ${describeRange(variable)}; got ${JSON.stringify(text)}`);
  }
  return value;
}

/**
 * Reads every variable of `variables` from `env`, collecting refusals in `problems` instead of
 * throwing at the first (for a start-up that names every problem at once); a refused variable
 * reads as its default, which the caller never uses since it refuses to start.
 */
export function envNumbers<K extends string>(env: NodeJS.ProcessEnv, variables: Record<K, NumberVariable>, problems: string[]): Record<K, number> {
  const values = {} as Record<K, number>;
  for (const key of Object.keys(variables) as K[]) {
    try {
      values[key] = envNumber(env, variables[key]);
    } catch (error) {
      if (!(error instanceof SettingRefused)) throw error;
      problems.push(error.message);
      values[key] = variables[key].default;
    }
  }
  return values;
}
