import { Writable } from 'node:stream';
import { context, propagation, trace, SpanKind } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { createLogger } from '@tickets/logger';
import {
  contextOf,
  inTraceOf,
  sdkTracer,
  startItemSpans,
  tracedSend,
  traceparentForRequest,
  traceparentOf,
} from './trace-context';

const CALLER = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const OTHER = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;
const items = [{ tp: CALLER }, { tp: OTHER }, { tp: null }];
const read = { traceparent: (i: { tp: string | null }) => i.tp, attributes: () => ({ 'x.test': 1 }) };

/** Log lines written while `fn` runs, parsed. */
function logLines(fn: (log: ReturnType<typeof createLogger>) => void): Record<string, unknown>[] {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write: (chunk: Buffer, _enc, done) => (lines.push(JSON.parse(chunk.toString())), done()),
  });
  fn(createLogger('info', 'spec', sink));
  return lines;
}

describe('tracing off (no SDK started): the trace context is only passed along', () => {
  it('there is no SDK tracer', () => {
    expect(sdkTracer()).toBeUndefined();
  });

  it("a request's events get the caller's trace id with a new span id, or a new trace", () => {
    const continued = TRACEPARENT.exec(traceparentForRequest({ traceparent: CALLER }))!;
    expect(continued[1]).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(continued[2]).not.toBe('b7ad6b7169203331');
    for (const headers of [
      {},
      { traceparent: 'garbage' },
      { traceparent: '00-00000000000000000000000000000000-b7ad6b7169203331-01' },
    ]) {
      const fresh = TRACEPARENT.exec(traceparentForRequest(headers))!;
      expect(fresh[1]).not.toMatch(/^0+$/);
    }
    expect(traceparentForRequest({})).not.toBe(traceparentForRequest({}));
  });

  it('new ids never repeat, across the refills of the pool of random bytes they are cut from', () => {
    // The pool holds the bytes of 256 requests: 1,000 requests refill it three times.
    const traceIds = new Set<string>();
    const spanIds = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const m = TRACEPARENT.exec(traceparentForRequest({}))!;
      traceIds.add(m[1]);
      spanIds.add(m[2]);
      expect(spanIds.has(m[1].slice(0, 16))).toBe(false);
    }
    expect(traceIds.size).toBe(1000);
    expect(spanIds.size).toBe(1000);
  });

  it('batch items keep their stored traceparent (null without one), and no span is made', () => {
    const spans = startItemSpans('process t', SpanKind.CONSUMER, items, read);
    expect(spans.traceparents).toEqual([CALLER, OTHER, null]);
    expect(spans.within(0, () => trace.getActiveSpan())).toBeUndefined();
  });

  it('an outgoing request gets the stored traceparent as a header', () => {
    const headers: Record<string, string> = {};
    expect(inTraceOf(CALLER, headers, () => 'sent')).toBe('sent');
    expect(headers).toEqual({ traceparent: CALLER });
    const none: Record<string, string> = {};
    inTraceOf(null, none, () => undefined);
    expect(none).toEqual({});
    const bad: Record<string, string> = {};
    inTraceOf(`${CALLER}\r\nx-evil: 1`, bad, () => undefined);
    expect(bad).toEqual({});
  });

  it('log lines carry no trace fields', () => {
    const [line] = logLines((log) => log.info('hello'));
    expect(line).not.toHaveProperty('trace_id');
  });
});

describe('tracing on (an SDK tracer provider registered)', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const tracer = () => trace.getTracer('spec');
  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(provider);
  });
  afterEach(() => exporter.reset());
  afterAll(async () => {
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });

  it("a request's events get the active span's context", () => {
    tracer().startActiveSpan('request', (span) => {
      expect(traceparentForRequest({ traceparent: OTHER })).toBe(
        `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`,
      );
      span.end();
    });
  });

  it("each batch item gets a span in its own trace, a child of its stored context, linked to the batch's span", () => {
    tracer().startActiveSpan('poll', (batch) => {
      const spans = startItemSpans('process t', SpanKind.CONSUMER, items, read);
      const inside = spans.within(1, () => trace.getActiveSpan()!.spanContext());
      spans.end();
      batch.end();
      const done = exporter.getFinishedSpans().filter((s) => s.name === 'process t');
      expect(done).toHaveLength(3);
      expect(done.map((s) => s.spanContext().traceId).slice(0, 2)).toEqual([
        '0af7651916cd43dd8448eb211c80319c',
        '4bf92f3577b34da6a3ce929d0e0e4736',
      ]);
      expect(done.map((s) => s.parentSpanContext?.spanId)).toEqual(['b7ad6b7169203331', '00f067aa0ba902b7', undefined]);
      expect(done[2].spanContext().traceId).not.toBe(batch.spanContext().traceId); // no stored context: a trace of its own
      for (const s of done) expect(s.links.map((l) => l.context.spanId)).toEqual([batch.spanContext().spanId]);
      expect(spans.traceparents).toEqual(done.map((s) => `00-${s.spanContext().traceId}-${s.spanContext().spanId}-01`));
      expect(inside.spanId).toBe(done[1].spanContext().spanId);
      expect(done[0].attributes).toMatchObject({ 'x.test': 1 });
    });
  });

  it('a failed batch marks every item span as failed', () => {
    const spans = startItemSpans('process t', SpanKind.CONSUMER, items.slice(0, 1), read);
    spans.end(new Error('statement failed'));
    expect(exporter.getFinishedSpans()[0].status).toMatchObject({ code: 2, message: 'statement failed' });
  });

  it("a send makes a PRODUCER span per message in its trace, keeps the message's creation context, and hides the send from other instrumentation", async () => {
    const messages = [{ key: 't-1', headers: { traceparent: CALLER, 'event-id': 'e-1' } }];
    const suppressed = await tracedSend('ticket-events', messages, async () => {
      const inner = tracer().startSpan('kafkajs send');
      inner.end();
      return !inner.isRecording();
    });
    expect(suppressed).toBe(true);
    const [send] = exporter.getFinishedSpans();
    expect(send).toMatchObject({
      name: 'send ticket-events',
      kind: SpanKind.PRODUCER,
      attributes: expect.objectContaining({ 'messaging.message.id': 'e-1', 'messaging.kafka.message.key': 't-1' }),
    });
    expect(send.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(messages[0].headers.traceparent).toBe(CALLER);
    expect(exporter.getFinishedSpans()).toHaveLength(1);
    await expect(tracedSend('ticket-events', messages, () => Promise.reject(new Error('broker down')))).rejects.toThrow(
      'broker down',
    );
    expect(exporter.getFinishedSpans()[1].status.code).toBe(2);
  });

  it('an outgoing request runs in the stored context (the http instrumentation sets the header then)', () => {
    const headers: Record<string, string> = {};
    const active = inTraceOf(CALLER, headers, () => trace.getSpanContext(context.active()));
    expect(active).toMatchObject({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' });
    expect(headers).toEqual({});
  });

  it('log lines inside a span carry its trace_id and span_id, lines outside do not', () => {
    const lines = logLines((log) => {
      tracer().startActiveSpan('work', (span) => {
        log.info('inside');
        log.child({ component: 'c' }).warn('inside, child logger');
        span.end();
      });
      log.info('outside');
    });
    const { traceId, spanId } = exporter.getFinishedSpans()[0].spanContext();
    expect(lines.map((l) => [l.msg, l.trace_id, l.span_id])).toEqual([
      ['inside', traceId, spanId],
      ['inside, child logger', traceId, spanId],
      ['outside', undefined, undefined],
    ]);
  });

  it('contextOf and traceparentOf are inverses for a valid traceparent', () => {
    expect(traceparentOf(contextOf(CALLER))).toBe(CALLER);
    expect(traceparentOf(contextOf('nonsense'))).toBeUndefined();
  });
});
