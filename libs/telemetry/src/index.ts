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
  type ItemSpans,
  type TracedItems,
} from './trace-context';
