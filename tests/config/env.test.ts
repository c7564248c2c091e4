/**
 * The one reader of numbers from the environment (`src/config/env.ts`, issue 25 §4): a value in
 * range is read exactly, anything else is refused with one line naming the variable, the value,
 * the range and the default; and a refusal stops `holon serve` at start-up in one line, exit 1.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { describeRange, envNumber, envNumbers, SettingRefused, type NumberVariable } from '../../src/config/env.ts';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { holon, closedPort } from '../helpers/cli.ts';

/** A variable with arbitrary bounds: min ≤ default ≤ max, whole numbers or not. */
const variableArb = fc
  .record({ a: fc.integer({ min: 0, max: 1_000_000 }), b: fc.integer({ min: 0, max: 1_000_000 }), c: fc.integer({ min: 0, max: 1_000_000 }), integer: fc.boolean() })
  .map(({ a, b, c, integer }): NumberVariable => {
    const [min, fallback, max] = [a, b, c].sort((x, y) => x - y);
    return { name: 'HOLON_TEST_VALUE', what: 'test units', default: fallback, min, max, integer };
  });

/** The refusal's exact line for `variable` given `text`. */
const refusal = (variable: NumberVariable, text: string) =>
  `${variable.name} must be ${variable.integer ? 'a whole number' : 'a number'} from ${variable.min} to ${variable.max} (${variable.what}; default ${variable.default}); got ${JSON.stringify(text)}`;

test('an unset or empty variable reads as its default', () => {
  fc.assert(
    fc.property(variableArb, fc.constantFrom(undefined, '', '  '), (variable, text) => {
      assert.equal(envNumber({ [variable.name]: text }, variable), variable.default);
    }),
  );
});

test('every whole number within [min, max] is read exactly, spaces around it ignored', () => {
  fc.assert(
    fc.property(
      variableArb.chain((variable) => fc.tuple(fc.constant(variable), fc.integer({ min: variable.min, max: variable.max }))),
      fc.constantFrom('', ' '),
      ([variable, value], pad) => {
        assert.equal(envNumber({ [variable.name]: `${pad}${value}${pad}` }, variable), value);
      },
    ),
  );
});

test('a decimal within range is read exactly when decimals are allowed, and refused when they are not', () => {
  const seconds: NumberVariable = { name: 'HOLON_TEST_S', what: 'seconds', default: 15, min: 0.001, max: 300, integer: false };
  assert.equal(envNumber({ HOLON_TEST_S: '0.5' }, seconds), 0.5);
  assert.equal(envNumber({ HOLON_TEST_S: '.25' }, seconds), 0.25);
  assert.equal(envNumber({ HOLON_TEST_S: '300' }, seconds), 300);
  assert.equal(envNumber({ HOLON_TEST_S: '0.001' }, seconds), 0.001);
  assert.throws(() => envNumber({ HOLON_TEST_S: '0' }, seconds), { message: 'HOLON_TEST_S must be a number from 0.001 to 300 (seconds; default 15); got "0"' });
  assert.throws(() => envNumber({ HOLON_TEST_S: '300.5' }, seconds), { message: 'HOLON_TEST_S must be a number from 0.001 to 300 (seconds; default 15); got "300.5"' });
  const whole = { ...seconds, integer: true };
  assert.throws(() => envNumber({ HOLON_TEST_S: '1.5' }, whole), { message: 'HOLON_TEST_S must be a whole number from 0.001 to 300 (seconds; default 15); got "1.5"' });
});

test('every whole number outside [min, max] is refused with one line naming the variable, the value, the range and the default', () => {
  fc.assert(
    fc.property(
      variableArb.chain((variable) =>
        fc.tuple(fc.constant(variable), fc.oneof(fc.integer({ min: variable.max + 1, max: variable.max + 10_000_000 }), ...(variable.min > 0 ? [fc.integer({ min: 0, max: variable.min - 1 })] : [fc.constant(variable.max + 1)]))),
      ),
      ([variable, value]) => {
        const text = String(value);
        assert.throws(() => envNumber({ [variable.name]: text }, variable), (error: unknown) => error instanceof SettingRefused && error.message === refusal(variable, text));
      },
    ),
  );
});

test('text that is not a plain number is refused, whatever it would convert to', () => {
  const variable: NumberVariable = { name: 'HOLON_TEST_VALUE', what: 'test units', default: 5, min: 0, max: 1_000_000, integer: false };
  fc.assert(
    fc.property(fc.constantFrom('1e3', '-5', '+5', '0x10', 'Infinity', 'NaN', '1,000', '1_000', '5 5', 'five', '1.2.3', '.', '١٢'), (text) => {
      assert.throws(() => envNumber({ HOLON_TEST_VALUE: text }, variable), { message: refusal(variable, text) });
    }),
  );
});

test('a variable without a numeric default reads null when unset and names what unset means when refused', () => {
  const port: NumberVariable<null> = { name: 'HOLON_TEST_PORT', what: 'a port', default: null, unset: 'any free port', min: 0, max: 65_535, integer: true };
  assert.equal(envNumber({}, port), null);
  assert.equal(envNumber({ HOLON_TEST_PORT: '0' }, port), 0);
  assert.equal(describeRange(port), 'a whole number from 0 to 65535 (a port; default any free port)');
  assert.throws(() => envNumber({ HOLON_TEST_PORT: '65536' }, port), { message: 'HOLON_TEST_PORT must be a whole number from 0 to 65535 (a port; default any free port); got "65536"' });
});

test('envNumbers collects every refusal instead of stopping at the first', () => {
  const problems: string[] = [];
  const a: NumberVariable = { name: 'HOLON_A', what: 'a', default: 1, min: 1, max: 9, integer: true };
  const b: NumberVariable = { name: 'HOLON_B', what: 'b', default: 2, min: 1, max: 9, integer: true };
  const c: NumberVariable = { name: 'HOLON_C', what: 'c', default: 3, min: 1, max: 9, integer: true };
  assert.deepEqual(envNumbers({ HOLON_A: '10', HOLON_B: '4', HOLON_C: 'x' }, { a, b, c }, problems), { a: 1, b: 4, c: 3 });
  assert.deepEqual(problems, [
    'HOLON_A must be a whole number from 1 to 9 (a; default 1); got "10"',
    'HOLON_C must be a whole number from 1 to 9 (c; default 3); got "x"',
  ]);
});

test('holon serve refuses an out-of-range HOLON_PROCESS_LEASE_S at start-up in one line, exit 1', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'holon-env-'));
  const result = await holon(['serve', '--port', String(await closedPort()), '--db', path.join(dir, 'data')], {
    env: { HOLON_PROCESS_LEASE_S: '601', HOLON_LOG_LEVEL: 'silent', DATABASE_URL: undefined, HOLON_AGENTS_PORT: undefined },
    cwd: dir,
  });
  assert.equal(result.code, 1);
  assert.equal(
    result.stderr,
    'holon: could not start the gateway: HOLON_PROCESS_LEASE_S must be a whole number from 3 to 600 (seconds a process lease lasts without a heartbeat; default 30); got "601"\n',
  );
});

test('holon serve --hosted refuses an out-of-range PORT at start-up in one line, exit 1', async () => {
  const result = await holon(['serve', '--hosted', '--db', '/dev/null/never-opened'], { env: { PORT: '70000', HOST: undefined, DATABASE_URL: undefined } });
  assert.equal(result.code, 1);
  assert.equal(result.stderr, 'holon: could not start the gateway: PORT must be a whole number from 0 to 65535 (the port the hosted gateway listens on; default 4000); got "70000"\n');
});
