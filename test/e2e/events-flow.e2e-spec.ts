// The whole path, as it runs: POST over HTTP → the outbox relay inside the API → real Kafka → the
// notification consumer → a real webhook receiver. Every event notifies exactly once, correctly signed,
// even when the relay publishes a row twice (it died after publishing, before marking).
import { Registry } from 'prom-client';
import { loadConfig, loadEventConsumerConfig } from '@tickets/config';
import { createLogger } from '@tickets/logger';
import { OutboxRelay, relayOptionsFromConfig } from '@tickets/outbox';
import { createConsumerApp, type NotifierApp } from '../../apps/consumer/src/consumer.app';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from '../support/env';
import { eventually, kafkaFixture, newWebhookSecret, testKafka, uniqueName } from '../support/events-factory';
import { post, startTestStack, type TestStack } from '../support/stack';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

jest.setTimeout(90_000);

const topic = uniqueName('flow');
const groupId = uniqueName('flow-notifier');
const secret = newWebhookSecret();
const env = {
  KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
  TICKET_EVENTS_TOPIC: topic,
  NOTIFIER_GROUP_ID: groupId,
  RELAY_POLL_INTERVAL: '200ms',
};

describe('POST → outbox → Kafka → consumer → webhook', () => {
  let stack: TestStack;
  let receiver: WebhookReceiver;
  let consumer: NotifierApp;
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;

  beforeAll(async () => {
    fx = await kafkaFixture(topic, 3);
    receiver = await startWebhookReceiver({ secret });
    stack = await startTestStack({ env: { ...env, RELAY_ENABLED: 'true' } });
    await stack.db.query('UPDATE tenants SET webhook_url = $1, webhook_secret = $2 WHERE id = $3', [
      receiver.url,
      secret,
      stack.tenantId,
    ]);
    const config = loadConfig({
      DATABASE_URL: TEST_DATABASE_URL,
      DB_POOL_MAX: '4',
      LOG_LEVEL: 'silent',
      NOTIFY_RETRY_BASE: '50ms',
      ...env,
    });
    consumer = await createConsumerApp(
      config,
      loadEventConsumerConfig({ NOTIFIER_METRICS_PORT: '0' }),
      createLogger('silent', 'flow-consumer'),
    );
  });
  afterAll(async () => {
    await consumer?.app.close();
    await stack?.stop();
    await receiver?.close();
    await fx?.close();
  });

  const deliveriesFor = (ticketId: string) =>
    receiver.deliveries.filter((d) => (d.json as { data?: { ticketId?: string } }).data?.ticketId === ticketId);

  it('a created ticket notifies exactly once, signed, with the event envelope', async () => {
    const res = await post(
      stack.baseUrl,
      '/v1/tickets',
      stack.apiKey,
      { title: 'Webhook me', externalRef: 'FLOW-1' },
      'flow-1',
      {
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      },
    );
    expect(res.status).toBe(201);
    const ticket = JSON.parse(res.text);
    await eventually(
      () => deliveriesFor(ticket.id).length,
      (n) => n >= 1,
      30_000,
      'the webhook',
    );
    // The same request again (a retry) and a re-planned one (new key, same externalRef) make no new event.
    expect(
      (await post(stack.baseUrl, '/v1/tickets', stack.apiKey, { title: 'Webhook me', externalRef: 'FLOW-1' }, 'flow-1'))
        .status,
    ).toBe(201);
    expect(
      (
        await post(
          stack.baseUrl,
          '/v1/tickets',
          stack.apiKey,
          { title: 'Webhook me!', externalRef: 'FLOW-1' },
          'flow-1b',
        )
      ).status,
    ).toBe(200);
    await new Promise((r) => setTimeout(r, 1_500));
    const got = deliveriesFor(ticket.id);
    expect(got).toHaveLength(1);
    expect(got[0].verified).toBe(true);
    const body = got[0].json as { type: string; data: { type: string; ticketId: string; data: { id: string } } };
    expect(body.data).toMatchObject({ type: 'ticket.created.v1', ticketId: ticket.id, data: { id: ticket.id } });
    // The request's trace id reached the Kafka headers and, with tracing off too, the webhook request.
    const { rows } = await stack.db.query('SELECT headers FROM outbox_events WHERE aggregate_id = $1', [ticket.id]);
    expect(rows[0].headers.traceparent).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-/);
    expect(got[0].headers.traceparent).toBe(rows[0].headers.traceparent);
  });

  it('cancel notifies once more (created, then cancelled), however often it is retried', async () => {
    const ticket = JSON.parse(
      (await post(stack.baseUrl, '/v1/tickets', stack.apiKey, { title: 'Cancel me' }, 'flow-2')).text,
    );
    for (const key of ['c-1', 'c-1', 'c-2'])
      expect((await post(stack.baseUrl, `/v1/tickets/${ticket.id}/cancel`, stack.apiKey, {}, key)).status).toBe(200);
    await eventually(
      () => deliveriesFor(ticket.id).length,
      (n) => n >= 2,
      30_000,
      'two webhooks',
    );
    await new Promise((r) => setTimeout(r, 1_500));
    expect(deliveriesFor(ticket.id).map((d) => (d.json as { type: string }).type)).toEqual([
      'ticket.created.v1',
      'ticket.cancelled.v1',
    ]);
  });

  it('the relay dies after publishing and before marking: the event is in Kafka twice, the webhook arrives once', async () => {
    // Stop the API's relay so the crashing one below is the leader.
    await stack.app.close();
    const config = loadConfig({ DATABASE_URL: TEST_DATABASE_URL, LOG_LEVEL: 'silent', ...env });
    const crashing = new OutboxRelay(
      relayOptionsFromConfig(config, createLogger('silent', 'crashing-relay'), {
        registry: new Registry(),
        faults: { afterPublishBeforeMark: () => Promise.reject(new Error('injected crash between publish and mark')) },
      }),
    );
    // A new ticket written straight through the API's transaction path, then published by the crashing relay.
    const api = await startTestStack({ env: { ...env, RELAY_ENABLED: 'false' } });
    await api.db.query('UPDATE tenants SET webhook_url = $1, webhook_secret = $2 WHERE id = $3', [
      receiver.url,
      secret,
      api.tenantId,
    ]);
    const ticket = JSON.parse(
      (await post(api.baseUrl, '/v1/tickets', api.apiKey, { title: 'Published twice' }, 'twice')).text,
    );
    await crashing.start();
    const seen = new Map<string, number>();
    const reader = testKafka().consumer({ groupId: uniqueName('flow-reader') });
    await reader.connect();
    await reader.subscribe({ topic, fromBeginning: true });
    await reader.run({
      eachMessage: async ({ message }) => {
        if (message.key?.toString() === ticket.id) {
          const id = message.headers?.['event-id']?.toString() ?? '';
          seen.set(id, (seen.get(id) ?? 0) + 1);
        }
      },
    });
    try {
      await eventually(
        () => Math.max(0, ...seen.values()),
        (n) => n >= 1,
        30_000,
        'a publish by the crashing relay',
      );
      await crashing.stop();
      // A healthy relay takes over: the row was never marked, so it is published again.
      const healthy = new OutboxRelay(
        relayOptionsFromConfig(config, createLogger('silent', 'healthy-relay'), { registry: new Registry() }),
      );
      await healthy.start();
      try {
        await eventually(
          () => Math.max(0, ...seen.values()),
          (n) => n >= 2,
          30_000,
          'the duplicate publish',
        );
        await eventually(
          async () =>
            (
              await api.db.query(
                'SELECT count(*)::int AS n FROM outbox_pending p JOIN outbox_events o ON o.seq = p.seq WHERE o.aggregate_id = $1',
                [ticket.id],
              )
            ).rows[0].n,
          (n) => n === 0,
          10_000,
          'marking',
        );
        await eventually(
          () => deliveriesFor(ticket.id).length,
          (n) => n >= 1,
          30_000,
          'the webhook',
        );
        await new Promise((r) => setTimeout(r, 2_000));
        expect(deliveriesFor(ticket.id)).toHaveLength(1);
        const inbox = await api.db.query(
          'SELECT duplicates FROM ticket_events.inbox_events WHERE group_id = $1 AND ticket_id = $2',
          [groupId, ticket.id],
        );
        expect(inbox.rows).toHaveLength(1);
        expect(inbox.rows[0].duplicates).toBeGreaterThanOrEqual(1);
      } finally {
        await healthy.stop();
      }
    } finally {
      await reader.disconnect();
      await api.stop();
    }
  });
});
