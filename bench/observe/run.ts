/**
 * What observing costs per call (issue 22 §2): the same billed call (`gt/run`, a dev-runtime
 * agent, through `POST /v0/calls` on a test gateway) timed with tracing off, then on (spans
 * exported over OTLP/HTTP to a local sink that accepts and drops them), in one run. Tracing is
 * registered once per process, so off runs first. Also the cost of the span helper itself when
 * off, times the spans a call opens, which is what tracing off adds to a call.
 *
 *   node --import tsx bench/observe/run.ts          (PGlite; DATABASE_URL=postgres://... for Postgres)
 *
 * Environment: `BENCH_CALLS` (300) measured calls per cell after 30 unmeasured ones. The last
 * line is `trace_off_p50_ms=… trace_on_p50_ms=… trace_on_overhead_p50_ms=… trace_on_overhead_mean_ms=… trace_off_overhead_ms=… spans_per_call=…`.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inSpan } from '../../src/observe/trace.ts';
import { startTestGateway } from '../../tests/helpers/gateway.ts';

const CALLS = Number(process.env.BENCH_CALLS ?? 300);
const WARMUP = 30;

/** Per-call latencies in ms of `CALLS` sequential billed calls on a fresh test gateway. */
async function cell(): Promise<number[]> {
  const gw = await startTestGateway();
  try {
    const mandate = await gw.mandate({ budget: { total: '1000.00', currency: 'EUR' } }, 2_000_000_000);
    const times: number[] = [];
    for (let n = 0; n < WARMUP + CALLS; n++) {
      const started = process.hrtime.bigint();
      const response = await gw.call({ mandate: mandate.id, agent: 'gt/run', input: {} });
      if (response.status !== 200) throw new Error(`call ${n} answered ${response.status}: ${JSON.stringify(response.body)}`);
      if (n >= WARMUP) times.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
    return times;
  } finally {
    await gw.close();
  }
}

const quantile = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))];
const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;

/** The cost of one `inSpan` with tracing off, in ms (a million calls). */
async function offSpanCost(): Promise<number> {
  const N = 1_000_000;
  const started = process.hrtime.bigint();
  for (let n = 0; n < N; n++) await inSpan('bench', {}, () => n);
  return Number(process.hrtime.bigint() - started) / 1e6 / N;
}

const off = await cell();
const span_off_ms = await offSpanCost();

// A sink for the exporter: accepts every export and drops it.
let spans = 0;
const sink = createServer((req, res) => {
  let body = '';
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    spans += (body.match(/"spanId"/g) ?? []).length;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
process.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/json';
const on = await cell();
const { flushTraces } = await import('../../src/observe/trace.ts');
await flushTraces();
sink.close();

const spans_per_call = Math.round(spans / (WARMUP + CALLS));
const line = {
  trace_off_p50_ms: quantile(off, 0.5).toFixed(3),
  trace_off_p99_ms: quantile(off, 0.99).toFixed(3),
  trace_on_p50_ms: quantile(on, 0.5).toFixed(3),
  trace_on_p99_ms: quantile(on, 0.99).toFixed(3),
  trace_on_overhead_p50_ms: (quantile(on, 0.5) - quantile(off, 0.5)).toFixed(3),
  trace_on_overhead_mean_ms: (mean(on) - mean(off)).toFixed(3),
  trace_off_overhead_ms: (span_off_ms * spans_per_call).toFixed(4),
  spans_per_call: String(spans_per_call),
};
process.stdout.write(`${Object.entries(line).map(([key, value]) => `${key}=${value}`).join(' ')}\n`);
process.exit(0);
