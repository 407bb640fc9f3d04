// The notifier's /metrics (NOTIFIER_METRICS_PORT) after real deliveries: the kit's consumer lag and
// counters, and the dispatcher's delivery outcomes, latency and pending/dead notifications, scraped
// over HTTP as Prometheus would.
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import { setTenantWebhook } from '../support/webhooks-cli';
import { TEST_DATABASE_URL } from '../support/env';
import {
  eventually,
  kafkaFixture,
  newWebhookSecret,
  ticketCreated,
  toMessage,
  uniqueName,
} from '../support/events-factory';
import { startTestNotifier, type TestNotifier } from '../support/notifier';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

jest.setTimeout(60_000);

const topic = uniqueName('notifier-metrics-it');
const groupId = uniqueName('notifier-metrics-it');
const secret = newWebhookSecret();
const tenantId = randomUUID();
const slug = uniqueName('notifier-metrics');

let fx: Awaited<ReturnType<typeof kafkaFixture>>;
let prisma: PrismaClient;
let db: Pool;
let receiver: WebhookReceiver;
let consumer: TestNotifier;

beforeAll(async () => {
  fx = await kafkaFixture(topic, 2);
  prisma = createPrismaClient(TEST_DATABASE_URL, 2, 'notifier-metrics-it');
  db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  receiver = await startWebhookReceiver({ secret });
  await db.query('INSERT INTO tenants (id, slug) VALUES ($1, $2)', [tenantId, slug]);
  expect(await setTenantWebhook(prisma, slug, receiver.url, secret)).toBe(0);
  consumer = await startTestNotifier({ topic, groupId });
});

afterAll(async () => {
  await consumer?.stop();
  await db?.query('DELETE FROM notifications WHERE group_id = $1', [groupId]);
  await db?.query('DELETE FROM ticket_events.inbox_events WHERE group_id = $1', [groupId]);
  await db?.query('DELETE FROM tenants WHERE id = $1', [tenantId]);
  await fx?.admin.deleteGroups([groupId]).catch(() => undefined);
  await Promise.allSettled([fx?.close(), prisma?.$disconnect(), db?.end(), receiver?.close()]);
});

/** One sample of the exposition text: `name{labels} value`, labels in the order they are written. */
const sample = (text: string, name: string, labels: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
};

it('serves lag per partition, events processed, and webhook deliveries by outcome with their latency', async () => {
  receiver.failNext(1, 503); // the first delivery is retried once
  const events = [ticketCreated(tenantId), ticketCreated(tenantId), ticketCreated(tenantId)];
  await fx.producer.send({ topic, acks: -1, messages: events.map((e, i) => toMessage(e, i % 2)) });

  const url = `http://127.0.0.1:${consumer.server.metricsPort}/metrics`;
  const scrape = async () => {
    const res = await fetch(url);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return res.text();
  };
  const g = `group="${groupId}"`;
  const text = await eventually(
    scrape,
    (t) => sample(t, 'webhook_deliveries_total', `${g},outcome="delivered"`) === 3,
    30_000,
    'three deliveries counted',
  );

  expect(sample(text, 'webhook_deliveries_total', `${g},outcome="retry"`)).toBe(1);
  expect(sample(text, 'webhook_deliveries_total', `${g},outcome="dead"`)).toBeUndefined();
  expect(sample(text, 'webhook_delivery_duration_seconds_count', `${g},outcome="delivered"`)).toBe(3);
  expect(sample(text, 'webhook_delivery_duration_seconds_bucket', `le="+Inf",${g},outcome="delivered"`)).toBe(3);
  expect(sample(text, 'event_consumer_processed_total', g)).toBe(3);
  for (const partition of [0, 1])
    expect(sample(text, 'event_consumer_lag', `${g},topic="${topic}",partition="${partition}"`)).toBe(0);
  // Read from the database at scrape time (cached up to 5 s): nothing left to send, nothing dead.
  const settled = await eventually(
    scrape,
    (t) => sample(t, 'notifications_pending', g) === 0,
    30_000,
    'no pending notification',
  );
  expect(sample(settled, 'notifications_dead', g)).toBe(0);
  expect(settled).toMatch(/^process_cpu_seconds_total /m);
});

it('counts a notification the receiver rejects as dead, and the dead gauge follows the table', async () => {
  receiver.failNext(1, 410);
  const event = ticketCreated(tenantId);
  await fx.producer.send({ topic, acks: -1, messages: [toMessage(event, 0)] });
  const url = `http://127.0.0.1:${consumer.server.metricsPort}/metrics`;
  const g = `group="${groupId}"`;
  const text = await eventually(
    async () => (await fetch(url)).text(),
    (t) =>
      sample(t, 'webhook_deliveries_total', `${g},outcome="dead"`) === 1 && sample(t, 'notifications_dead', g) === 1,
    30_000,
    'one dead delivery and one dead notification',
  );
  expect(sample(text, 'webhook_delivery_duration_seconds_count', `${g},outcome="dead"`)).toBe(1);
});
