export { startTelemetry, flushTelemetry } from './start';
export {
  contextOf,
  inTraceOf,
  logTraceFields,
  sdkTracer,
  startItemSpans,
  SpanKind,
  traceparentForRequest,
  traceparentOf,
  tracedSend,
  wellFormedTraceparent,
  type ItemSpans,
  type TracedItems,
} from './trace-context';
