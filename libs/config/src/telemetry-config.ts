import { z } from 'zod';

const TelemetryEnvSchema = z.object({
  /** OTLP/HTTP base URL of a collector (e.g. http://127.0.0.1:4318); traces go to <it>/v1/traces. Unset: no spans. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  /** The full traces URL, when it is not <endpoint>/v1/traces. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  /** Overrides the process's own name as the resource's service.name. */
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
  /** Milliseconds finished spans wait to be sent together (the batch span processor's delay, as in the OTel spec). */
  OTEL_BSP_SCHEDULE_DELAY: z.coerce.number().int().min(0).max(600_000).default(5_000),
  /** `true` starts no SDK even with an endpoint set (the standard OTel switch; case-insensitive, as the spec says). */
  OTEL_SDK_DISABLED: z.preprocess(
    (v) => (typeof v === 'string' ? v.toLowerCase() : v),
    z.enum(['true', 'false']).default('false'),
  ),
});

export interface TelemetryConfig {
  /** Where spans go; undefined: tracing is off. */
  tracesUrl?: string;
  serviceName?: string;
  exportDelayMs: number;
}

/**
 * The OpenTelemetry settings, read before anything else of the process loads. Invalid values throw
 * (the process must not run half-instrumented without saying so).
 */
export function loadTelemetryConfig(env: NodeJS.ProcessEnv = process.env): TelemetryConfig {
  const parsed = TelemetryEnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new Error(
      `invalid tracing configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  const e = parsed.data;
  const base = e.OTEL_EXPORTER_OTLP_ENDPOINT?.replace(/\/+$/, '');
  const tracesUrl =
    e.OTEL_SDK_DISABLED === 'true'
      ? undefined
      : (e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (base ? `${base}/v1/traces` : undefined));
  return { tracesUrl, serviceName: e.OTEL_SERVICE_NAME, exportDelayMs: e.OTEL_BSP_SCHEDULE_DELAY };
}
