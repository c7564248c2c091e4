/**
 * Evaluation suites (gateway §7 "Evaluation at publish time"): `evals/<capability>/<case>.json`,
 * one case per file, each `{"input": …, "expect": {"output": …} | {"error": "<code>"}}`. A case
 * passes when the agent's output equals `expect.output` exactly (deep equality of JSON), or when
 * it fails with the declared error `expect.error`. The repository's `evals/` holds public samples;
 * `HOLON_PRIVATE_EVALS` names a directory laid out the same whose suites replace them all (the
 * holdout cases, reported as pass/fail only).
 *
 * Fixtures: a case's input may name a file of its suite's `files/` directory as the string
 * `holon://files/fixture/<name>`. The runner stores it as a platform file for the case's run only
 * and puts the file's real handle in its place (gateway §7 "Files": evaluation fixtures).
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { MAX_FILE_BYTES } from './files.ts';

/** The most cases a suite runs; the rest of a larger suite is refused at load, naming the bound. */
export const MAX_CASES_PER_SUITE = 200;

/** The largest case file read, in bytes (1 MiB, the same as a call's body). */
export const MAX_CASE_BYTES = 1_048_576;

/** How a case's input names a fixture of its suite's `files/` directory. */
export const FIXTURE_PREFIX = 'holon://files/fixture/';

/** A fixture's file name: no path separators (and not only dots, checked beside it). */
const FIXTURE_NAME = /^[A-Za-z0-9._-]{1,128}$/;

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
 * a suite over {@link MAX_CASES_PER_SUITE} cases, and for a fixture that is missing or over
 * `MAX_FILE_BYTES` (a suite's fault is never counted against the agent).
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
    const parsed = parseCase(file, value);
    await checkFixtures(source, capability, file, parsed.input);
    cases.push(parsed);
  }
  return cases.length > 0 ? cases : null;
}

/**
 * The fixture files a case's input names (`holon://files/fixture/<name>`), as paths inside the
 * suite's `files/` directory, keyed by the string that names them. Throws an Error for a name
 * that is not a plain file name (no path may leave `files/`).
 */
export function fixturesOf(source: SuiteSource, capability: string, input: unknown): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (value: unknown): void => {
    if (typeof value === 'string' && value.startsWith(FIXTURE_PREFIX)) {
      const name = value.slice(FIXTURE_PREFIX.length);
      if (!FIXTURE_NAME.test(name) || /^\.+$/.test(name)) throw new Error(`${value}: a fixture is named by a plain file name of ${capability}/files/`);
      found.set(value, path.join(source.dir, capability, 'files', name));
    } else if (Array.isArray(value)) value.forEach(walk);
    else if (value !== null && typeof value === 'object') Object.values(value).forEach(walk);
  };
  walk(input);
  return found;
}

/** `value` with every string that is a key of `replacements` replaced by its value (a JSON copy). */
export function replaceStrings(value: unknown, replacements: ReadonlyMap<string, string>): unknown {
  if (typeof value === 'string') return replacements.get(value) ?? value;
  if (Array.isArray(value)) return value.map((item) => replaceStrings(item, replacements));
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceStrings(v, replacements)]));
  return value;
}

/** Throws an Error naming the case file when a fixture its input names is not a file of at most `MAX_FILE_BYTES`. */
async function checkFixtures(source: SuiteSource, capability: string, file: string, input: unknown): Promise<void> {
  let fixtures: Map<string, string>;
  try {
    fixtures = fixturesOf(source, capability, input);
  } catch (error) {
    throw new Error(`${file}: ${(error as Error).message}`);
  }
  for (const fixture of fixtures.values()) {
    const size = await stat(fixture).then((s) => (s.isFile() ? s.size : -1), () => -1);
    if (size < 0) throw new Error(`${file}: the fixture ${fixture} is not a file`);
    if (size > MAX_FILE_BYTES) throw new Error(`${file}: the fixture ${fixture} weighs ${size} bytes; a fixture is at most ${MAX_FILE_BYTES}`);
  }
}

/** Whether what the agent answered is what the case expects. */
export function casePasses(expected: EvalCase['expect'], got: { output: unknown } | { error: string }): boolean {
  if ('error' in expected) return 'error' in got && got.error === expected.error;
  return 'output' in got && isDeepStrictEqual(got.output, expected.output);
}
