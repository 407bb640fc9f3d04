import type { AppConfig } from '@tickets/config';
import type { Logger } from '@tickets/logger';
import type { OutboxRelayOptions } from './outbox-relay';

/** The relay options of a process from its AppConfig, identical for the API and `npm run start:relay`. */
export function relayOptionsFromConfig(
  config: AppConfig,
  logger: Logger,
  extra: Partial<Omit<OutboxRelayOptions, 'databaseUrl' | 'kafka' | 'logger'>> = {},
): OutboxRelayOptions {
  return {
    databaseUrl: config.database.url,
    kafka: { ...config.kafka },
    logger,
    batchSize: config.relay.batchSize,
    pollIntervalMs: config.relay.pollIntervalMs,
    leaderRetryMs: config.relay.pollIntervalMs,
    retryMaxMs: config.relay.retryMaxDelayMs,
    maxAttempts: config.relay.maxAttempts,
    retentionMs: config.relay.retentionMs,
    cleanupIntervalMs: config.relay.cleanupIntervalMs,
    ...extra,
  };
}
