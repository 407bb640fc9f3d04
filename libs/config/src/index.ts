export { loadConfig, loadConfigOrExit, configDefaults, ConfigError } from './config';
export type { AppConfig, EdgeConfig } from './config';
export type { ConsoleConfig } from './console-config';
export { parseDuration } from './duration';
export { loadMcpServerConfig, McpConfigError, type McpServerConfig } from './mcp-config';
export { loadEventConsumerConfig, loadEventConsumerConfigOrExit, type EventConsumerConfig } from './event-consumer.config';
export { loadTelemetryConfig, type TelemetryConfig } from './telemetry-config';
export { ticketEventsOptions } from './ticket-events-options';
