import type { TicketEventsOptions } from '@tickets/event-consumer';
import type { Logger } from 'pino';
import type { AppConfig } from './config';
import type { EventConsumerConfig } from './event-consumer.config';

/**
 * The kit's options for one of the service's consumer groups, from the service's configuration
 * (loadConfig + loadEventConsumerConfig). The kit itself knows nothing of this configuration: a
 * downstream service passes its own options, or uses TicketEventsServer.fromEnv().
 */
export function ticketEventsOptions(
  app: AppConfig,
  kit: EventConsumerConfig,
  groupId: string,
  logger?: Logger,
): TicketEventsOptions {
  const { sessionTimeoutMs, heartbeatIntervalMs, rebalanceTimeoutMs, retry, reconnectMaxDelayMs } = kit.kafka;
  return {
    brokers: app.kafka.brokers,
    topic: app.kafka.topic,
    groupId,
    databaseUrl: app.database.url,
    kafka: { clientId: `${app.kafka.clientId}-${groupId}`, retry },
    consumer: {
      sessionTimeout: sessionTimeoutMs,
      heartbeatInterval: heartbeatIntervalMs,
      rebalanceTimeout: rebalanceTimeoutMs,
      retry,
    },
    reconnectMaxDelayMs,
    chunkSize: kit.chunkSize,
    partitionsConcurrency: kit.partitionsConcurrency,
    commitIntervalMs: kit.commitIntervalMs,
    maxAttempts: kit.maxAttempts,
    retryBaseMs: kit.retryBaseMs,
    retryMaxDelayMs: kit.retryMaxDelayMs,
    inbox: kit.inbox,
    metrics: kit.metrics ? { ...kit.metrics, setting: 'EVENT_CONSUMER_METRICS_PORT' } : false,
    logger,
  };
}
