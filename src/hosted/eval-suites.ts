/**
 * Evaluation suites (gateway §7 "Evaluation at publish time"): `evals/<capability>/<case>.json`,
 * one case per file, each `{"input": …, "expect": {"output": …} | {"error": "<code>"}}`. A case
 * passes when the agent's output equals `expect.output` exactly (deep equality of JSON), or when
 * it fails with the declared error `expect.error`. The repository's `evals/` holds public samples;
 * `HOLON_PRIVATE_EVALS` names a directory laid out the same whose suites replace them all (the
 * holdout cases, reported as pass/fail only).
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';

/** The most cases a suite runs; the rest of a larger suite is refused at load, naming the bound. */
export const MAX_CASES_PER_SUITE = 200;

/** The largest case file read, in bytes (1 MiB, the same as a call's body). */
export const MAX_CASE_BYTES = 1_048_576;

/** A capability name as a suite directory (`extraction.table`): no path separators, no dot-only names. */
const CAPABILITY = /^[a-z0-9][a-z0-9._-]{0,127}$/;

/** One case of a suite. */
export interface EvalCase {
  /** The file name without `.json`. */
  name: string;
  input: unknown;
  expect: { output: unknown } | { error: string };
}

/** Where suites come from: the directory and whether its cases are public (shown in detail) or private (pass/fail only). */
export interface SuiteSource {
  dir: string;
  suite: 'public' | 'private';
}

/** The suites' source: `HOLON_PRIVATE_EVALS` when set (private), else `evals` (public). */
export function suiteSourceFromEnv(env: NodeJS.ProcessEnv = process.env): SuiteSource {
  const dir = env.HOLON_PRIVATE_EVALS;
  return dir ? { dir, suite: 'private' } : { dir: 'evals', suite: 'public' };
}

/** Checks one parsed case file; answers the case or throws an Error naming the file and what is wrong. */
function parseCase(file: string, value: unknown): EvalCase {
  const refuse = (why: string) => new Error(`${file}: ${why}`);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw refuse('a case is a JSON object {input, expect}');
  const { input, expect, ...rest } = value as Record<string, unknown>;
  if (Object.keys(rest).length > 0) throw refuse(`unknown field ${Object.keys(rest)[0]}: a case has only input and expect`);
  if (input === undefined) throw refuse('input is required');
  const e = expect as Record<string, unknown> | undefined;
  const hasOutput = e !== null && typeof e === 'object' && 'output' in e;
  const hasError = e !== null && typeof e === 'object' && typeof e.error === 'string';
  if (hasOutput === hasError || Object.keys(e!).length !== 1) throw refuse('expect is {"output": …} or {"error": "<code>"}');
  return { name: path.basename(file, '.json'), input, expect: hasOutput ? { output: e!.output } : { error: e!.error as string } };
}

/**
 * The suite of `capability` in `source.dir`, cases in name order; null when there is none.
 * Throws an Error naming the file for a case that is unreadable, too large or malformed, and for
 * a suite over {@link MAX_CASES_PER_SUITE} cases.
 */
export async function loadSuite(source: SuiteSource, capability: string): Promise<EvalCase[] | null> {
  if (!CAPABILITY.test(capability) || /^\.+$/.test(capability)) return null;
  const dir = path.join(source.dir, capability);
  let names: string[];
  try {
    names = (await readdir(dir)).filter((name) => name.endsWith('.json')).sort();
  } catch {
    return null;
  }
  if (names.length > MAX_CASES_PER_SUITE) throw new Error(`${dir} holds ${names.length} cases; a suite runs at most ${MAX_CASES_PER_SUITE}`);
  const cases: EvalCase[] = [];
  for (const name of names) {
    const file = path.join(dir, name);
    const { size } = await stat(file);
    if (size > MAX_CASE_BYTES) throw new Error(`${file} weighs ${size} bytes; a case is at most ${MAX_CASE_BYTES}`);
    let value: unknown;
    try {
      value = JSON.parse(await readFile(file, 'utf8'));
    } catch (error) {
      throw new Error(`${file}: not JSON (${(error as Error).message})`);
    }
    cases.push(parseCase(file, value));
  }
  return cases.length > 0 ? cases : null;
}

/** Whether what the agent answered is what the case expects. */
export function casePasses(expected: EvalCase['expect'], got: { output: unknown } | { error: string }): boolean {
  if ('error' in expected) return 'error' in got && got.error === expected.error;
  return 'output' in got && isDeepStrictEqual(got.output, expected.output);
}
