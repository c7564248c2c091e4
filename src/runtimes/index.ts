/**
 * The runtime for a manifest's `runtime.kind` (gateway §6). `container` and `a2a` are reserved
 * kinds with no runtime in v0: they answer `failure runtime_unavailable`, never billed.
 */
import { createDevRuntime } from './dev.ts';
import type { Fetch } from './http.ts';
import { createMcpRuntime } from './mcp.ts';
import { failure } from './outcome.ts';
import type { Runtime, RuntimeTarget } from './types.ts';
import { createWebhookRuntime } from './webhook.ts';

/** A runtime kind, as in the manifest. */
export type RuntimeKind = RuntimeTarget['runtime']['kind'];

/** Options of {@link runtimeFor}. */
export interface RuntimeOptions {
  /**
   * The fetch of the remote runtimes (`mcp`, `webhook`): the hosted gateway passes its guarded
   * client, which checks every address it connects to (gateway §7 "Network safety").
   */
  fetch?: Fetch;
}

/** The runtime that runs agents of `kind`. */
export function runtimeFor(kind: RuntimeKind, options: RuntimeOptions = {}): Runtime {
  switch (kind) {
    case 'dev':
      return createDevRuntime();
    case 'mcp':
      return createMcpRuntime(options);
    case 'webhook':
      return createWebhookRuntime(options);
    case 'container':
    case 'a2a':
      return unsupported(kind);
  }
}

/** One runtime per kind, made once, so the `mcp` runtime's sessions are shared by every call; `close()` ends them. */
export interface Runtimes {
  runtimeFor(kind: RuntimeKind): Runtime;
  close(): Promise<void>;
}

/** The runtimes of one gateway (issue 12 §2: MCP sessions are kept across calls). */
export function createRuntimes(options: RuntimeOptions = {}): Runtimes {
  const mcp = createMcpRuntime(options);
  const others = new Map<RuntimeKind, Runtime>();
  return {
    runtimeFor(kind) {
      if (kind === 'mcp') return mcp;
      let runtime = others.get(kind);
      if (!runtime) others.set(kind, (runtime = runtimeFor(kind, options)));
      return runtime;
    },
    close: () => mcp.close(),
  };
}

/** A runtime for a reserved kind: every run is `runtime_unavailable`. */
function unsupported(kind: RuntimeKind): Runtime {
  const outcome = failure('runtime_unavailable', `runtime kind "${kind}" is not supported in v0: run the agent as mcp or webhook`);
  return { run: async () => outcome };
}
