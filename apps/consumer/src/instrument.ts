// Imported first by main.ts: tracing (when configured) must patch http, pg, kafkajs and Fastify before anything requires them.
import { quietKafkajsTimeoutWarning, startTelemetry } from '@tickets/telemetry';

quietKafkajsTimeoutWarning();
startTelemetry('consumer');
