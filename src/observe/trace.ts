/**
 * OpenTelemetry traces (issue 22 §2), on the ecosystem's SDK: a `NodeTracerProvider` exporting
 * over OTLP/HTTP when the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, with W3C trace-context propagation
 * (`traceparent`/`tracestate`). Unset, no provider is registered: {@link inSpan} runs its work
 * directly and {@link traceHeaders} answers nothing, so tracing off costs one boolean test.
 * Span attributes never carry a call's input or output (gateway §4): ids, agent, mandate,
 * outcome, cost.
 */
import { createRequire } from 'node:module';
import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

/**
 * Loads the SDK's provider, exporter and resources only when tracing is on: they cost about 0.1 s
 * of CPU at every start otherwise (issue 21 §4). Through `require`, since {@link startTracing} is
 * synchronous; the API they register with is one per process whichever copy loads it (it lives
 * on a global symbol).
 */
const require = createRequire(import.meta.url);

export { SpanKind };

let provider: NodeTracerProvider | null = null;

/** Whether spans are recorded and exported (a provider is registered). */
export function tracingOn(): boolean {
  return provider !== null;
}

/**
 * Registers the tracer provider once per process when the environment names an OTLP endpoint
 * (`OTEL_SERVICE_NAME` names the service, default `holon`); does nothing otherwise or when
 * already registered. The exporter reads the OTEL_EXPORTER_OTLP_* settings itself.
 */
export function startTracing(env: NodeJS.ProcessEnv = process.env): void {
  if (provider || !(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)) return;
  const { BatchSpanProcessor, NodeTracerProvider } = require('@opentelemetry/sdk-trace-node') as typeof import('@opentelemetry/sdk-trace-node');
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: env.OTEL_SERVICE_NAME || 'holon' }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register({ propagator: new W3CTraceContextPropagator() });
}

/** Exports the spans ended so far (tests, and a gateway closing); resolves at once when tracing is off. */
export async function flushTraces(): Promise<void> {
  await provider?.forceFlush();
}

const tracer = () => trace.getTracer('holon');

/** Options of one span: its kind (default internal), attributes, and a parent context other than the active one. */
export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  parent?: Context;
}

/**
 * Runs `work` inside a new active span named `name` (ended when `work` settles; a throw marks it
 * an error and is rethrown). Tracing off: `work()` with no span and nothing else done.
 */
export function inSpan<T>(name: string, options: SpanOptions, work: (span: Span | null) => Promise<T> | T): Promise<T> {
  if (!provider) {
    // Off: the work itself, with no extra turn of the event loop.
    try {
      return Promise.resolve(work(null));
    } catch (error) {
      return Promise.reject(error);
    }
  }
  const parent = options.parent ?? context.active();
  return tracer().startActiveSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes }, parent, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** Adds attributes to the active span, if any. */
export function annotate(attributes: Attributes): void {
  if (provider) trace.getActiveSpan()?.setAttributes(attributes);
}

/** The W3C trace-context entries (`traceparent`, `tracestate`) of the active span, for a header set or an MCP `_meta`; empty when tracing is off. */
export function traceHeaders(): Record<string, string> {
  const carrier: Record<string, string> = {};
  if (provider) propagation.inject(context.active(), carrier);
  return carrier;
}

/** The context an incoming request's headers continue (its `traceparent`), or the active one when it has none or tracing is off. */
export function incomingContext(headers: Record<string, string | string[] | undefined>): Context {
  return provider ? propagation.extract(context.active(), headers) : context.active();
}

/** The trace id of the active span, or null (tracing off, or outside any span). */
export function activeTraceId(): string | null {
  const id = trace.getActiveSpan()?.spanContext().traceId;
  return id && id !== '00000000000000000000000000000000' ? id : null;
}
