export { startTelemetry, flushTelemetry } from './start';
export { quietKafkajsTimeoutWarning, isKafkajsNegativeTimeout } from './kafkajs-warning';
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
