import {
  context,
  isSpanContextValid,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';

/**
 * The kit's tracing, over @opentelemetry/api only: with an SDK registered by the service, each event
 * gets a span in the trace of the request that caused it; without one, the `traceparent` header
 * passes through unchanged.
 */
const TRACER_NAME = '@tickets/event-consumer';
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

function sdkTracer(): Tracer | undefined {
  const provider = trace.getTracerProvider();
  return provider instanceof ProxyTracerProvider
    ? provider.getDelegateTracer(TRACER_NAME)
    : provider.getTracer(TRACER_NAME);
}

/** The context a W3C `traceparent` stands for (ROOT_CONTEXT when it is missing or invalid). */
function contextOf(traceparent: string | null | undefined): Context {
  const m = traceparent ? TRACEPARENT.exec(traceparent.trim()) : null;
  if (!m || m[1] === 'ff' || (m[1] === '00' && m[5])) return ROOT_CONTEXT;
  const sc = { traceId: m[2], spanId: m[3], traceFlags: parseInt(m[4], 16), isRemote: true };
  return isSpanContextValid(sc) ? trace.setSpanContext(ROOT_CONTEXT, sc) : ROOT_CONTEXT;
}

function traceparentOf(ctx: Context): string | undefined {
  const sc = trace.getSpanContext(ctx);
  if (!sc || !isSpanContextValid(sc)) return undefined;
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/**
 * A received `traceparent` rewritten as version 00, or undefined when it is not a valid one (a
 * producer may send anything: NUL or CR/LF would break a statement or a request that carries it).
 */
export function wellFormedTraceparent(v: string | null | undefined): string | undefined {
  return v ? traceparentOf(contextOf(v)) : undefined;
}

export interface TracedItems<T> {
  traceparent(item: T): string | null | undefined;
  attributes(item: T): Attributes;
}

/** The per-message spans of a chunk, each in its message's trace. */
export interface ItemSpans {
  readonly traceparents: (string | null)[];
  within<T>(i: number, fn: () => T): T;
  end(err?: unknown): void;
}

/**
 * One span per item as a child of the item's stored context (the batch's active span, when there is
 * one, is linked). Tracing off: no span, the stored contexts pass through.
 */
export function startItemSpans<T>(name: string, kind: SpanKind, items: readonly T[], read: TracedItems<T>): ItemSpans {
  const tracer = sdkTracer();
  if (!tracer)
    return {
      traceparents: items.map((i) => read.traceparent(i) ?? null),
      within: (_i, fn) => fn(),
      end: () => undefined,
    };
  const active = context.active();
  const batch = trace.getSpanContext(active);
  const links = batch ? [{ context: batch }] : [];
  const spans: Span[] = items.map((item) =>
    tracer.startSpan(name, { kind, attributes: read.attributes(item), links }, contextOf(read.traceparent(item))),
  );
  const contexts = spans.map((s) => trace.setSpan(active, s));
  return {
    traceparents: contexts.map((c) => traceparentOf(c) ?? null),
    within: (i, fn) => context.with(contexts[i], fn),
    end(err) {
      for (const s of spans) {
        if (err !== undefined) {
          s.recordException(err instanceof Error ? err : String(err));
          s.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
        }
        s.end();
      }
    },
  };
}

export { SpanKind };
