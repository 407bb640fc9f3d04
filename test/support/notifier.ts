// The notifier (apps/consumer) as the tests start it: the real Nest microservice on the kit's transport,
// against the test database and broker, with the test's topic and group and fast dispatcher settings.
import { loadConfig, loadEventConsumerConfig, type AppConfig } from '@tickets/config';
import type { TicketEventsOptions } from '@tickets/event-consumer';
import { createLogger, type Logger } from '@tickets/logger';
import { createConsumerApp, type NotifierApp } from '../../apps/consumer/src/consumer.app';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from './env';
import { TEST_NOTIFIER } from './events-factory';

export interface NotifierCounts {
  processed: number;
  duplicates: number;
  deadLettered: number;
  unknown: number;
}

export interface TestNotifier extends NotifierApp {
  /** The kit's counters of this instance (its /metrics), summed over labels. */
  counts(): Promise<NotifierCounts>;
  /** Graceful stop (the SIGTERM path): idempotent. */
  stop(): Promise<void>;
}

export interface TestNotifierOptions {
  topic: string;
  groupId: string;
  notifier?: Partial<AppConfig['notifier']>;
  dispatch?: boolean;
  kit?: Partial<TicketEventsOptions>;
  logger?: Logger;
}

export async function startTestNotifier(o: TestNotifierOptions): Promise<TestNotifier> {
  const base = loadConfig({
    DATABASE_URL: TEST_DATABASE_URL,
    KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
    TICKET_EVENTS_TOPIC: o.topic,
    NOTIFIER_GROUP_ID: o.groupId,
  });
  const config: AppConfig = { ...base, notifier: { ...base.notifier, ...TEST_NOTIFIER, ...o.notifier } };
  const kit = loadEventConsumerConfig({ NOTIFIER_METRICS_PORT: '0' });
  const n = await createConsumerApp(config, kit, o.logger ?? createLogger('silent', 'notifier-test'), {
    dispatch: o.dispatch,
    ...o.kit,
  });
  let stopped: Promise<void> | undefined;
  const sum = async (c: { get(): Promise<{ values: { value: number }[] }> }) =>
    (await c.get()).values.reduce((s, v) => s + v.value, 0);
  return {
    ...n,
    counts: async () => ({
      processed: await sum(n.server.metrics.processed),
      duplicates: await sum(n.server.metrics.duplicates),
      deadLettered: await sum(n.server.metrics.deadLettered),
      unknown: await sum(n.server.metrics.unknown),
    }),
    stop: () => (stopped ??= n.app.close()),
  };
}
