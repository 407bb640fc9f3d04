import { randomBytes, randomUUID } from 'node:crypto';
import { Kafka, logLevel, type Admin, type Message, type Producer } from 'kafkajs';
import {
  ticketCancelledEvent,
  ticketCreatedEvent,
  ticketEventMessage,
  type TicketCancelledV1,
  type TicketCreatedV1,
  type TicketEvent,
} from '@tickets/contracts';
import { TEST_KAFKA_BROKERS } from './env';

/**
 * A valid ticket.created.v1 envelope, made by the contracts' ticketCreatedEvent (what downstream teams use in their
 * own tests, so these tests exercise it too).
 */
export function ticketCreated(tenantId: string, over: { ticketId?: string; title?: string } = {}): TicketCreatedV1 {
  return ticketCreatedEvent({
    tenantId,
    ticketId: over.ticketId,
    idempotencyKey: `key-${randomUUID()}`,
    correlationId: `req-${randomUUID().slice(0, 8)}`,
    data: { title: over.title ?? 'Printer on fire', priority: 'high', requester: { name: 'Ada' } },
  });
}

export const ticketCancelled = (created: TicketCreatedV1): TicketCancelledV1 => ticketCancelledEvent(created);

/** The Kafka message the relay would publish (the contracts' ticketEventMessage), on `partition` if given. */
export function toMessage(event: TicketEvent, partition?: number): Message {
  return { ...ticketEventMessage(event), partition };
}

export const uniqueName = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${randomUUID().slice(0, 6)}`;

export const testKafka = () =>
  new Kafka({ clientId: 'tests', brokers: TEST_KAFKA_BROKERS, logLevel: logLevel.NOTHING });

/** Admin + producer on the test broker, plus a topic of this test's own. */
export async function kafkaFixture(
  topic: string,
  partitions = 3,
): Promise<{ admin: Admin; producer: Producer; close(): Promise<void> }> {
  const kafka = testKafka();
  const admin = kafka.admin();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await Promise.all([admin.connect(), producer.connect()]);
  await admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }],
  });
  return {
    admin,
    producer,
    async close() {
      await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
      await Promise.allSettled([admin.disconnect(), producer.disconnect()]);
    },
  };
}

/** Polls `read` until `done(value)` holds; returns the last value or throws after `timeoutMs`. */
export async function eventually<T>(
  read: () => Promise<T> | T,
  done: (v: T) => boolean,
  timeoutMs = 20_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}; last value: ${JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? String(x) : x))}`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Fast retry settings for tests (real timers, small delays). */
export const TEST_NOTIFIER = {
  maxAttempts: 4,
  retryBaseMs: 50,
  retryMaxDelayMs: 400,
  timeoutMs: 2000,
  leaseMs: 5000,
  pollIntervalMs: 200,
  concurrency: 4,
};

/** A whsec_ secret of 24 random bytes. */
export const newWebhookSecret = () => `whsec_${randomBytes(24).toString('base64')}`;
