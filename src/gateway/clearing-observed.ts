/**
 * The clearing seam, observed (issue 22 §1, §2): every request a gateway makes of its binding
 * runs in a client span named after its clearing-contract operation and is counted in
 * `holon_clearing_request_duration_seconds` by operation and result, a refusal also in
 * `holon_clearing_refusals_total` by its §7 code. Wraps either port (`HttpClearingPort`, whose
 * requests carry the span's `traceparent` so the binding continues the trace, or
 * `InProcessClearingPort`, whose work runs inside the span); what the port answers or throws is
 * passed on unchanged.
 */
import { countClearing } from '../observe/metrics.ts';
import { inSpan, SpanKind } from '../observe/trace.ts';
import { ClearingRefused, type ClearingPort } from './clearing.ts';

/** The clearing-contract operation of each method of {@link ClearingPort}. */
const OPERATIONS: Record<keyof ClearingPort, string> = {
  readBalance: 'read-balance',
  openHold: 'open-hold',
  releaseHold: 'release-hold',
  settle: 'settle',
  credit: 'credit',
  createAccount: 'create-account',
  readCheckpoint: 'read-checkpoint',
};

/** Runs one request of `operation` in its span and counts it. */
async function observed<T>(operation: string, request: () => Promise<T>): Promise<T> {
  const started_ns = process.hrtime.bigint();
  const seconds = () => Number(process.hrtime.bigint() - started_ns) / 1e9;
  try {
    const answer = await inSpan(`clearing ${operation}`, { kind: SpanKind.CLIENT, attributes: { 'holon.clearing.operation': operation } }, request);
    countClearing(operation, seconds(), 'ok');
    return answer;
  } catch (error) {
    if (error instanceof ClearingRefused) countClearing(operation, seconds(), 'refused', error.code);
    else countClearing(operation, seconds(), 'unreachable');
    throw error;
  }
}

/** `port` with every request observed. */
export function observedClearing(port: ClearingPort): ClearingPort {
  const wrapped = {} as Record<keyof ClearingPort, (...args: never[]) => Promise<unknown>>;
  for (const method of Object.keys(OPERATIONS) as Array<keyof ClearingPort>) {
    const original = port[method].bind(port) as (...args: never[]) => Promise<unknown>;
    wrapped[method] = (...args) => observed(OPERATIONS[method], () => original(...args));
  }
  return wrapped as unknown as ClearingPort;
}
