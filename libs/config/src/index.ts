export { loadConfig, loadConfigOrExit, configDefaults, ConfigError } from './config';
export type { AppConfig, EdgeConfig } from './config';
export type { ConsoleConfig } from './console-config';
export { normaliseOrigin, type McpHttpConfig } from './mcp-http-config';
export { parseDuration } from './duration';
export {
  loadEventConsumerConfig,
  loadEventConsumerConfigOrExit,
  type EventConsumerConfig,
} from './event-consumer.config';
export { loadTelemetryConfig, type TelemetryConfig } from './telemetry-config';
export { ticketEventsOptions } from './ticket-events-options';
export { DEV_WEBHOOK_SECRET_KEY, type WebhookSecretKey, type WebhookSecretKeyring } from './webhook-secret-keys';
