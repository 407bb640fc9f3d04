import type { TicketEventsOptions } from '@tickets/event-consumer';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from './env';

/** Kit options for tests: the test database and broker, small retry delays, /metrics on a free port. */
export function kitOptions(
  topic: string,
  groupId: string,
  over: Partial<TicketEventsOptions> = {},
): TicketEventsOptions {
  return {
    groupId,
    topic,
    brokers: TEST_KAFKA_BROKERS,
    databaseUrl: TEST_DATABASE_URL,
    kafka: { clientId: 'kit-test' },
    chunkSize: 100,
    partitionsConcurrency: 2,
    maxAttempts: 3,
    retryBaseMs: 20,
    retryMaxDelayMs: 100,
    metrics: { port: 0 },
    ...over,
  };
}
