import type { TicketEventsOptions } from '@tickets/event-consumer';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from './env';

/** Kit options for tests: the test database and broker, small retry delays, /metrics on a free port. */
export function kitOptions(topic: string, groupId: string, over: Partial<TicketEventsOptions> = {}): TicketEventsOptions {
  return {
    groupId,
    topic,
    kafka: { brokers: TEST_KAFKA_BROKERS, clientId: 'kit-test', sessionTimeoutMs: 10_000 },
    databaseUrl: TEST_DATABASE_URL,
    chunkSize: 100,
    partitionsConcurrency: 2,
    maxAttempts: 3,
    retryBaseMs: 20,
    retryMaxDelayMs: 100,
    inbox: { retentionMs: 30 * 86_400_000, purgeIntervalMs: 3_600_000 },
    metrics: { port: 0, host: '127.0.0.1' },
    ...over,
  };
}
