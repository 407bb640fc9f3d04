import type { AppConfig, EventConsumerConfig } from '@tickets/config';
import type { Logger } from '@tickets/logger';

export interface TicketEventsOptions {
  /** The consumer group: Kafka's, and the scope of the inbox and the dead letters. */
  groupId: string;
  topic: string;
  /**
   * sessionTimeoutMs: how long a silent member keeps its partitions; with heartbeatIntervalMs,
   * rebalanceTimeoutMs and retry, how fast the group recovers from a lost coordinator or broker.
   * Unset: kafkajs' defaults. reconnectMaxDelayMs caps the backoff between rebuilds of a consumer
   * kafkajs gave up on (default 5 s).
   */
  kafka: {
    brokers: string[];
    clientId: string;
    sessionTimeoutMs?: number;
    heartbeatIntervalMs?: number;
    rebalanceTimeoutMs?: number;
    retry?: { initialRetryTime: number; maxRetryTime: number; retries: number };
    reconnectMaxDelayMs?: number;
  };
  /** The database of the handlers' writes and of the inbox (inbox_events, consumer_dead_letters). */
  databaseUrl: string;
  /** Messages per transaction. */
  chunkSize: number;
  /** kafkajs partitionsConsumedConcurrently (order is kept within each partition). */
  partitionsConcurrency: number;
  /** Attempts of a failing handler per event before it is dead-lettered; backoff between them. */
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxDelayMs: number;
  /** Must be at least the topic's retention.ms (checked at start): a replay must find every retained event here. */
  inbox: { retentionMs: number; purgeIntervalMs: number };
  /** GET /metrics and /health/ready on host:port (port 0: a free port, see `metricsPort`); absent: not served. */
  metrics?: { port: number; host: string };
  /** A group with no committed offset starts at the beginning of the topic (default true). */
  fromBeginning?: boolean;
  logger?: Logger;
  faults?: {
    /**
     * Test hook, after a chunk's transaction committed and before its offset is committed. 'die'
     * makes the instance stop committing from then on, as a killed process would.
     */
    afterTransactionBeforeCommit?: (at: { topic: string; partition: number; lastOffset: string }) => 'die' | void | Promise<'die' | void>;
  };
}

/** The options of a consumer group from the process configuration (loadConfig + loadEventConsumerConfig). */
export function ticketEventsOptions(app: AppConfig, kit: EventConsumerConfig, groupId: string, logger?: Logger): TicketEventsOptions {
  return {
    groupId,
    topic: app.kafka.topic,
    kafka: { brokers: app.kafka.brokers, clientId: `${app.kafka.clientId}-${groupId}`, ...kit.kafka },
    databaseUrl: app.database.url,
    chunkSize: kit.chunkSize,
    partitionsConcurrency: kit.partitionsConcurrency,
    maxAttempts: kit.maxAttempts,
    retryBaseMs: kit.retryBaseMs,
    retryMaxDelayMs: kit.retryMaxDelayMs,
    inbox: kit.inbox,
    metrics: kit.metrics,
    logger,
  };
}
