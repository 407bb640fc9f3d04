export { loadConfig, loadConfigOrExit, ConfigError } from './config';
export type { AppConfig } from './config';
export { parseDuration } from './duration';
export { loadEventConsumerConfig, loadEventConsumerConfigOrExit, type EventConsumerConfig } from './event-consumer.config';
