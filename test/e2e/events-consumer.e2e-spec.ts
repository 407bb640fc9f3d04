// The consumer app as it runs in production (Nest application context, configuration from the
// environment), fed through Kafka, delivering to real webhook receivers: the default target
// (NOTIFY_WEBHOOK_URL) and a tenant override set with the CLI command.
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { loadConfig, loadEventConsumerConfig } from '@tickets/config';
import { createPrismaClient } from '@tickets/db';
import { createLogger } from '@tickets/logger';
import { setTenantWebhook } from '../support/webhooks-cli';
import { createConsumerApp, type NotifierApp } from '../../apps/consumer/src/consumer.app';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from '../support/env';
import {
  kafkaFixture,
  newWebhookSecret,
  ticketCancelled,
  ticketCreated,
  toMessage,
  uniqueName,
} from '../support/events-factory';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

jest.setTimeout(60_000);

const topic = uniqueName('events-e2e');
const groupId = uniqueName('notifier-e2e');
const defaultSecret = newWebhookSecret();
const tenantSecret = 'a plain shared secret, not whsec_';
const tenantId = randomUUID();
const slug = uniqueName('events-e2e');

let fx: Awaited<ReturnType<typeof kafkaFixture>>;
let db: Pool;
let defaultReceiver: WebhookReceiver;
let tenantReceiver: WebhookReceiver;
let notifier: NotifierApp | undefined;

beforeAll(async () => {
  fx = await kafkaFixture(topic, 2);
  db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  [defaultReceiver, tenantReceiver] = await Promise.all([
    startWebhookReceiver({ secret: defaultSecret }),
    startWebhookReceiver({ secret: tenantSecret }),
  ]);
  await db.query('INSERT INTO tenants (id, slug) VALUES ($1, $2)', [tenantId, slug]);
  const prisma = createPrismaClient(TEST_DATABASE_URL, 1, 'events-e2e-cli');
  try {
    expect(await setTenantWebhook(prisma, slug, tenantReceiver.url, tenantSecret)).toBe(0);
  } finally {
    await prisma.$disconnect();
  }
  const config = loadConfig({
    DATABASE_URL: TEST_DATABASE_URL,
    DB_POOL_MAX: '5',
    KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
    TICKET_EVENTS_TOPIC: topic,
    NOTIFIER_GROUP_ID: groupId,
    NOTIFY_WEBHOOK_URL: defaultReceiver.url,
    NOTIFY_WEBHOOK_SECRET: defaultSecret,
    NOTIFY_RETRY_BASE: '50ms',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
  });
  notifier = await createConsumerApp(
    config,
    loadEventConsumerConfig({ NOTIFIER_METRICS_PORT: '0' }),
    createLogger(config.logLevel, 'consumer-e2e'),
  );
});

afterAll(async () => {
  await notifier?.app.close();
  await db.query('DELETE FROM notifications WHERE group_id = $1', [groupId]);
  await db.query('DELETE FROM ticket_events.inbox_events WHERE group_id = $1', [groupId]);
  await db.query('DELETE FROM tenants WHERE id = $1', [tenantId]);
  await fx?.admin.deleteGroups([groupId]).catch(() => undefined);
  await Promise.allSettled([fx?.close(), db?.end(), defaultReceiver?.close(), tenantReceiver?.close()]);
});

const ofEvent = (r: WebhookReceiver, id: string) =>
  r.requests.filter((d) => (d.json as { data?: { id?: string } })?.data?.id === id);

it('routes each tenant to its own webhook, signed with its own secret, once per event', async () => {
  const created = ticketCreated(tenantId);
  const cancelled = ticketCancelled(created);
  const other = ticketCreated(randomUUID()); // a tenant with no override: NOTIFY_WEBHOOK_URL
  await fx.producer.send({ topic, acks: -1, messages: [toMessage(created), toMessage(cancelled), toMessage(other)] });

  await tenantReceiver.waitForDeliveries(2, 20_000);
  await defaultReceiver.waitForDeliveries(1, 20_000);
  await new Promise((r) => setTimeout(r, 500));
  expect(ofEvent(tenantReceiver, created.id)).toHaveLength(1);
  expect(ofEvent(tenantReceiver, cancelled.id)).toHaveLength(1);
  expect(ofEvent(defaultReceiver, other.id)).toHaveLength(1);
  expect([...tenantReceiver.requests, ...defaultReceiver.requests].every((r) => r.verified && r.status === 204)).toBe(
    true,
  );
  expect(tenantReceiver.requests.map((r) => (r.json as { type: string }).type).sort()).toEqual([
    'ticket.cancelled.v1',
    'ticket.created.v1',
  ]);
  const metrics = await (await fetch(`http://127.0.0.1:${notifier!.server.metricsPort}/metrics`)).text();
  expect(metrics).toMatch(new RegExp(`event_consumer_processed_total\\{group="${groupId}"\\} 3\\n`));
  expect(metrics).not.toMatch(/event_consumer_duplicates_skipped_total\{/);
  expect(metrics).not.toMatch(/event_consumer_dead_lettered_total\{/);
});

it('says it is ready on /health/ready while it is a member of its group', async () => {
  const res = await fetch(`http://127.0.0.1:${notifier!.server.metricsPort}/health/ready`);
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ status: 'ready', consumer: 'running' });
});

it('shuts down cleanly: the group is left and its offsets are committed', async () => {
  await notifier!.app.close();
  notifier = undefined;
  const [desc] = (await fx.admin.describeGroups([groupId])).groups;
  expect(desc.members).toHaveLength(0);
  const [offsets] = await fx.admin.fetchOffsets({ groupId, topics: [topic] });
  const committed = offsets.partitions.reduce((a, p) => a + Math.max(0, Number(p.offset)), 0);
  expect(committed).toBe(3);
});
