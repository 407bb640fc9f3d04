import { loadTelemetryConfig } from '@tickets/config';
import type { startSdk } from './sdk';

let started: ReturnType<typeof startSdk> | undefined;

/**
 * Starts tracing for this process when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `…_TRACES_ENDPOINT`) is set;
 * without it nothing is loaded or patched (the SDK is required only then). Must run before the process
 * requires `http`, `pg`, `kafkajs` or `fastify`: each app's `main.ts` imports its `instrument.ts` first.
 * `processName` is the resource's `service.name` unless `OTEL_SERVICE_NAME` says otherwise.
 */
export function startTelemetry(processName: string): void {
  if (started) return;
  const config = loadTelemetryConfig();
  if (!config.tracesUrl) return;
  // Required here, not imported at the top: with tracing off the SDK is never loaded.
  const sdk = require('./sdk') as typeof import('./sdk');
  started = sdk.startSdk({ ...config, tracesUrl: config.tracesUrl }, config.serviceName ?? processName);
  // Spans still waiting for their batch go out when the event loop empties; a process ended by
  // process.exit() (a signal handler) flushes them through flushTelemetry() first.
  process.once('beforeExit', () => void flushTelemetry());
}

/** Sends the spans still queued (call before process.exit); resolves at once when tracing is off. */
export async function flushTelemetry(): Promise<void> {
  await started?.shutdown().catch(() => undefined);
}
