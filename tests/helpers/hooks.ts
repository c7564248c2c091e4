/**
 * The one shape of every `use…()` set-up helper: a value opened in the file's (or describe
 * block's) `before` hook and closed in its `after` hook, handed back at once as a stand-in that
 * forwards to the value once it is open. A test file then reads
 * `const gw = useTestGateway();` instead of a `let`, a `before` and an `after`.
 */
import assert from 'node:assert/strict';
import { after, before } from 'node:test';

/**
 * A stand-in for the object `read()` answers: every member read, written or listed goes to it.
 * Reading a member before it exists fails naming `what` (a test file must read it inside a test
 * or a hook, not while it loads).
 */
export function standIn<T extends object>(read: () => T | undefined, what: string): T {
  const target = (): T => {
    const value = read();
    assert.ok(value, `${what} opens in before(): read it inside a test or a hook`);
    return value;
  };
  return new Proxy({} as T, {
    get: (_, member) => Reflect.get(target(), member),
    set: (_, member, value) => Reflect.set(target(), member, value),
    has: (_, member) => Reflect.has(target(), member),
  });
}

/** The set-up steps begun so far, in the order their hooks began: each waits for the one before it. */
let setUps: Promise<unknown> = Promise.resolve();

/**
 * A `before` hook that runs once every set-up step begun before it has finished. Node 20 starts
 * a file's top-level `before` hooks all at once, not one after another; a hook that reads what a
 * `use…()` helper opened must therefore be a `setUp`, as the helpers' own hooks are.
 */
export function setUp(step: () => unknown): void {
  before(() => {
    setUps = setUps.then(step);
    return setUps;
  });
}

/**
 * Registers `setUp(open)` and `after(close)` in the current scope (the file, or the `describe`
 * the call stands in) and answers a {@link standIn} for what `open` opened. `close` runs only
 * when `open` succeeded, after the tests of that scope, whatever they did.
 */
export function useOpened<T extends object>(what: string, open: () => Promise<T>, close: (value: T) => Promise<unknown>): T {
  let opened: T | undefined;
  setUp(async () => {
    opened = await open();
  });
  after(async () => {
    if (opened) await close(opened);
  });
  return standIn(() => opened, what);
}

/**
 * Runs `start` with the environment variables `vars` set (a setting read once at start-up, such
 * as `HOLON_ALLOWED_HOSTS`), then puts each back as it was, set or unset, whatever `start` did.
 */
export async function withEnv<T>(vars: Readonly<Record<string, string>>, start: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((name) => [name, process.env[name]]));
  Object.assign(process.env, vars);
  try {
    return await start();
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}
