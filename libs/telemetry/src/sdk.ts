import type { IncomingMessage } from 'node:http';
import { FastifyOtelInstrumentation } from '@fastify/otel';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { KafkaJsInstrumentation } from '@opentelemetry/instrumentation-kafkajs';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace';
import type { TelemetryConfig } from '@tickets/config';

/** Probes and scrapes: a span each would bury the requests that matter. */
const UNTRACED_PATHS = /^\/(health|metrics)(\/|\?|$)/;

/**
 * The OpenTelemetry Node SDK with the instrumentations of what the processes use: `http` (the
 * API's server spans, the webhook requests, which carry `traceparent` to the receiver), Fastify
 * (request and handler spans; one per lifecycle hook would be noise, so off; registered through Fastify's `fastify.initialization` diagnostics
 * channel, so no plugin is added to the app), `pg` (only inside a trace: the relay's and the
 * dispatcher's polls would otherwise make a root trace each) and kafkajs. Spans leave in batches over
 * OTLP/HTTP (JSON); no metrics or logs go through the SDK (Prometheus and pino do those).
 */
export function startSdk(config: TelemetryConfig & { tracesUrl: string }, serviceName: string): NodeSDK {
  const sdk = new NodeSDK({
    serviceName,
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter({ url: config.tracesUrl }),
        scheduledDelayMillis: config.exportDelayMs,
      }),
    ],
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req: IncomingMessage) => UNTRACED_PATHS.test(req.url ?? ''),
      }),
      new FastifyOtelInstrumentation({
        registerOnInitialization: true,
        instrumentHooks: false,
        ignorePaths: (opts) => UNTRACED_PATHS.test(opts.url),
      }),
      new PgInstrumentation({ requireParentSpan: true }),
      new KafkaJsInstrumentation(),
    ],
  });
  sdk.start();
  return sdk;
}
