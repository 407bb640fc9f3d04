// The notifier's start warms the kit's connections with the statement every chunk runs (hotInboxStatements,
// passed as the kit's warmStatements): read from inside each backend of the kit's pool, whose
// pg_backend_memory_contexts hold an "index info" context for tenants_pkey, which only that statement reads
// (it looks up each event's tenant). Real PostgreSQL and broker.
import { Pool, type PoolClient } from 'pg';
import { loadConfig, loadEventConsumerConfig } from '@tickets/config';
import { createLogger } from '@tickets/logger';
import { createConsumerApp, type NotifierApp } from '../../apps/consumer/src/consumer.app';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from '../support/env';
import { kafkaFixture, uniqueName } from '../support/events-factory';

jest.setTimeout(60_000);

const topic = uniqueName('notifier-warm-up');
let fx: Awaited<ReturnType<typeof kafkaFixture>>;
let notifier: NotifierApp | undefined;

beforeAll(async () => {
  fx = await kafkaFixture(topic, 2);
});

afterAll(async () => {
  await notifier?.app.close();
  await fx?.close();
});

const hasTenantsIndex = async (c: PoolClient) =>
  (await c.query("SELECT 1 FROM pg_backend_memory_contexts WHERE name = 'index info' AND ident = 'tenants_pkey'"))
    .rowCount === 1;

it('has the chunk statement planned on CONSUMER_PARTITIONS_CONCURRENCY connections before the first fetch', async () => {
  const config = loadConfig({
    DATABASE_URL: TEST_DATABASE_URL,
    KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
    TICKET_EVENTS_TOPIC: topic,
    NOTIFIER_GROUP_ID: uniqueName('notifier-warm-up-group'),
    CONSUMER_PARTITIONS_CONCURRENCY: '2',
  });
  notifier = await createConsumerApp(
    config,
    loadEventConsumerConfig({ NOTIFIER_METRICS_PORT: '-1' }),
    createLogger('silent', 'notifier-warm-up'),
  );
  // Every connection the kit's pool may hold (partitionsConcurrency + 1), at once.
  const pool = (notifier.server as unknown as { pool: Pool }).pool;
  const clients = await Promise.all([1, 2, 3].map(() => pool.connect()));
  try {
    const warmed = (await Promise.all(clients.map(hasTenantsIndex))).filter(Boolean);
    expect(warmed).toHaveLength(2);
  } finally {
    clients.forEach((c) => c.release());
  }
});
