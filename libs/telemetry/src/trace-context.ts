import { randomFillSync } from 'node:crypto';
import {
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { suppressTracing, W3CTraceContextPropagator } from '@opentelemetry/core';

const TRACER_NAME = '@tickets/telemetry';
/** Reads and writes `traceparent` whether or not the SDK (and its global propagator) is running. */
const w3c = new W3CTraceContextPropagator();

/** The SDK's tracer when tracing is on, else undefined (then the helpers below only pass `traceparent` along). */
export function sdkTracer(): Tracer | undefined {
  const provider = trace.getTracerProvider();
  return provider instanceof ProxyTracerProvider
    ? provider.getDelegateTracer(TRACER_NAME)
    : provider.getTracer(TRACER_NAME);
}

/** The context a stored or received `traceparent` stands for (ROOT_CONTEXT when it is missing or invalid). */
export function contextOf(traceparent: string | null | undefined): Context {
  return traceparent ? w3c.extract(ROOT_CONTEXT, { traceparent }, defaultTextMapGetter) : ROOT_CONTEXT;
}

/** The `traceparent` of a context's span, or undefined when it has none. */
export function traceparentOf(ctx: Context): string | undefined {
  const carrier: Record<string, string> = {};
  w3c.inject(ctx, carrier, defaultTextMapSetter);
  return carrier.traceparent;
}

/**
 * A received `traceparent` as the W3C propagator writes it, or undefined when it is not one (a
 * producer other than the relay may send anything: NUL or CR/LF would break the statement that stores
 * it or the webhook request that carries it).
 */
export function wellFormedTraceparent(v: string | null | undefined): string | undefined {
  return v ? traceparentOf(contextOf(v)) : undefined;
}

/** Random bytes for the ids of 256 requests, read at once; each byte is handed out once. */
const ID_BYTES = 24;
const idPool = Buffer.allocUnsafe(ID_BYTES * 256);
let idPoolOffset = idPool.length;

/**
 * 48 hex digits from the CSPRNG: a trace id (16 bytes) and a span id (8). From a pool filled for 256
 * requests at a time, as crypto.randomUUID() buffers its bytes: a randomBytes(24) per request cost the
 * API 5 µs of each create (its V8 profile at 1,000 creates/s, 2026-12-04), the pool about 0.1 µs.
 */
function randomIds(): string {
  if (idPoolOffset === idPool.length) {
    randomFillSync(idPool);
    idPoolOffset = 0;
  }
  const ids = idPool.toString('hex', idPoolOffset, idPoolOffset + ID_BYTES);
  idPoolOffset += ID_BYTES;
  return ids;
}

/**
 * The W3C trace context to store with the work a request causes (its outbox event). Tracing on: the
 * active span's (the SDK continued the caller's trace or began one). Tracing off: the caller's trace
 * id from its `traceparent` with a new span id, or a new trace, so that receivers can still correlate
 * the webhook with the request.
 */
export function traceparentForRequest(headers: Record<string, string | string[] | undefined>): string {
  const active = sdkTracer() ? traceparentOf(context.active()) : undefined;
  if (active) return active;
  const caller = trace.getSpanContext(w3c.extract(ROOT_CONTEXT, headers, defaultTextMapGetter));
  const ids = randomIds();
  const spanContext = {
    traceId: caller?.traceId ?? ids.slice(16),
    spanId: ids.slice(0, 16),
    traceFlags: caller?.traceFlags ?? TraceFlags.SAMPLED,
  };
  return traceparentOf(trace.setSpanContext(ROOT_CONTEXT, spanContext))!;
}

/** How to read one item of a batch: its stored `traceparent`, and its span's attributes (asked only with tracing on). */
export interface TracedItems<T> {
  traceparent(item: T): string | null | undefined;
  attributes(item: T): Attributes;
}

/** The per-message spans of a batch, each in its message's trace. */
export interface ItemSpans {
  /** The `traceparent` to hand on for each item (its span's; tracing off: the item's own, unchanged). */
  readonly traceparents: (string | null)[];
  /** Runs `fn` inside item i's span (tracing off: as is). */
  within<T>(i: number, fn: () => T): T;
  /** Ends every span; with `err`, marked as failed. */
  end(err?: unknown): void;
}

/**
 * Starts one span per item as a child of the item's stored context, so each message of a batch stays
 * in the trace of the request that caused it (what the messaging conventions allow for a message
 * handled on its own; the batch's kafkajs spans link to the same contexts). The batch's active span
 * (a kafkajs `poll`), when there is one, is linked. Tracing off: no span, the stored contexts pass through.
 */
export function startItemSpans<T>(name: string, kind: SpanKind, items: readonly T[], read: TracedItems<T>): ItemSpans {
  const tracer = sdkTracer();
  if (!tracer) {
    return {
      traceparents: items.map((i) => read.traceparent(i) ?? null),
      within: (_i, fn) => fn(),
      end: () => undefined,
    };
  }
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

/**
 * Runs `send` (one produce of messages that already carry their creation context in `traceparent`)
 * with one PRODUCER span per message in that message's trace. The kafkajs instrumentation is kept
 * out of this send: it would start each message's span under the relay's loop and overwrite the
 * message's `traceparent` with it, cutting the message off the trace of the request that created it.
 */
export async function tracedSend<T>(
  topic: string,
  messages: readonly { key?: unknown; headers?: Record<string, unknown> }[],
  send: () => Promise<T>,
): Promise<T> {
  if (!sdkTracer()) return send();
  const spans = startItemSpans(`send ${topic}`, SpanKind.PRODUCER, messages, {
    traceparent: (m) => (typeof m.headers?.traceparent === 'string' ? m.headers.traceparent : null),
    attributes: (m) => ({
      'messaging.system': 'kafka',
      'messaging.operation.type': 'send',
      'messaging.operation.name': 'send',
      'messaging.destination.name': topic,
      'messaging.kafka.message.key': typeof m.key === 'string' ? m.key : undefined,
      'messaging.message.id': typeof m.headers?.['event-id'] === 'string' ? m.headers['event-id'] : undefined,
    }),
  });
  try {
    const r = await context.with(suppressTracing(context.active()), send);
    spans.end();
    return r;
  } catch (err) {
    spans.end(err);
    throw err;
  }
}

/**
 * Runs `fn` (an outgoing request) in the trace a stored `traceparent` names. Tracing on: the http
 * instrumentation's client span is a child of it and puts its own `traceparent` on the request.
 * Tracing off: `headers.traceparent` is set to the stored one, so the receiver still gets the trace id.
 */
export function inTraceOf<T>(traceparent: string | null | undefined, headers: Record<string, string>, fn: () => T): T {
  if (!traceparent) return fn();
  if (!sdkTracer()) {
    const valid = wellFormedTraceparent(traceparent);
    if (valid) headers.traceparent = valid;
    return fn();
  }
  return context.with(contextOf(traceparent), fn);
}

/** `trace_id`/`span_id` of the active span for a log line ({} outside a span, and always with tracing off). */
export function logTraceFields(): { trace_id?: string; span_id?: string; trace_flags?: string } {
  const sc = trace.getSpanContext(context.active());
  if (!sc) return {};
  return { trace_id: sc.traceId, span_id: sc.spanId, trace_flags: `0${sc.traceFlags.toString(16)}` };
}

export { SpanKind };
