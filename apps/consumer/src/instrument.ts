// Imported first by main.ts: tracing (when configured) must patch http, pg, kafkajs and Fastify before anything requires them.
import { startTelemetry } from '@tickets/telemetry';

startTelemetry('consumer');
