// Poison rows: an envelope that fails validation and a row the broker rejects as too large end up
// in outbox_dead_letters with a reason, after bounded attempts; other tickets keep flowing, and the
// later rows of the same ticket are dead-lettered with it (reason blocked_by_dead_letter:<event id>).
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { Pool } from 'pg';
import { Registry } from 'prom-client';
import { createLogger } from '@tickets/logger';
import { OutboxRelay } from '@tickets/outbox';
import { TEST_KAFKA_BROKERS } from '../support/env';
import {
  createRelayTestDatabase,
  deleteTopic,
  insertOutboxRows,
  readTopic,
  ticketEventRow,
  ticketLifecycle,
  waitFor,
  type RelayTestDatabase,
} from '../support/outbox-factory';

const TOPIC_MAX_MESSAGE_BYTES = 64 * 1024;
const MAX_ATTEMPTS = 3;
const topic = `relay-dlq-${randomUUID().slice(0, 8)}`;
const tenantId = randomUUID();
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent', 'relay-test');
let database: RelayTestDatabase;
let db: Pool;
let relay: OutboxRelay;
let registry: Registry;

interface DeadLetter {
  event_id: string;
  reason: string;
  attempts: number;
  created_at: Date;
}

beforeAll(async () => {
  database = await createRelayTestDatabase('dlq');
  db = new Pool({ connectionString: database.url, max: 2 });
  // The topic exists already (the relay must accept that) with a 64 KiB record limit, so a
  // 100 KB envelope is too large for the broker.
  const admin = new Kafka({
    brokers: TEST_KAFKA_BROKERS,
    clientId: 'relay-test-admin',
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: [
      {
        topic,
        numPartitions: 3,
        configEntries: [{ name: 'max.message.bytes', value: String(TOPIC_MAX_MESSAGE_BYTES) }],
      },
    ],
  });
  await admin.disconnect();
});

afterAll(async () => {
  await relay?.stop();
  await db?.end();
  await database?.drop();
  await deleteTopic(TEST_KAFKA_BROKERS, topic);
});

async function deadLetters(): Promise<Map<string, DeadLetter>> {
  const { rows } = await db.query<DeadLetter>('SELECT event_id, reason, attempts, created_at FROM outbox_dead_letters');
  return new Map(rows.map((r) => [r.event_id, r]));
}

async function pendingRows(): Promise<number> {
  return (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox_pending')).rows[0].n;
}

it('dead-letters a poison envelope and an oversized row after bounded attempts; other tickets flow, the same ticket follows it', async () => {
  const [aCreated, aCancelled] = ticketLifecycle(tenantId);
  const [pCreated, pCancelled] = ticketLifecycle(tenantId);
  (pCreated.payload.data as Record<string, unknown>).priority = 'extreme'; // not in the contract
  // zod 4.6's safeParse throws on this envelope (its length checks compare the object's length with a number).
  const tCreated = ticketEventRow({ tenantId, kind: 'created' });
  (tCreated.payload as Record<string, unknown>).idempotencyKey = { length: { toString: 0 } };
  const bigCreated = ticketEventRow({ tenantId, kind: 'created', metadata: { blob: 'x'.repeat(100_000) } });
  const bigCancelled = ticketEventRow({ tenantId, ticketId: bigCreated.aggregateId, kind: 'cancelled' });
  const [cCreated, cCancelled] = ticketLifecycle(tenantId);
  await insertOutboxRows(db, [
    aCreated,
    pCreated,
    tCreated,
    bigCreated,
    aCancelled,
    pCancelled,
    bigCancelled,
    cCreated,
    cCancelled,
  ]);

  registry = new Registry();
  relay = new OutboxRelay({
    databaseUrl: database.url,
    kafka: { brokers: TEST_KAFKA_BROKERS, clientId: 'relay-test', topic, partitions: 3 },
    logger,
    registry,
    maxAttempts: MAX_ATTEMPTS,
    pollIntervalMs: 100,
    retryBaseMs: 100,
    retryMaxMs: 300,
  });
  await relay.start();
  await waitFor('outbox drained (published or dead-lettered)', async () => (await pendingRows()) === 0);

  const dl = await deadLetters();
  expect(dl.size).toBe(5);
  expect(dl.get(pCreated.eventId)).toMatchObject({ attempts: 1 });
  expect(dl.get(pCreated.eventId)!.reason).toMatch(/^invalid_envelope: data\.priority/);
  expect(dl.get(tCreated.eventId)).toMatchObject({
    attempts: 1,
    reason: expect.stringMatching(/^invalid_envelope: idempotencyKey: Invalid input: expected string, received object/),
  });
  expect(dl.get(pCancelled.eventId)!.reason).toBe(`blocked_by_dead_letter:${pCreated.eventId}`);
  expect(dl.get(bigCreated.eventId)).toMatchObject({ attempts: MAX_ATTEMPTS });
  expect(dl.get(bigCreated.eventId)!.reason).toMatch(/^kafka_rejected: .*(MESSAGE_TOO_LARGE|RECORD_LIST_TOO_LARGE)/);
  expect(dl.get(bigCancelled.eventId)!.reason).toBe(`blocked_by_dead_letter:${bigCreated.eventId}`);

  // Dead letters left the outbox; the healthy tickets were published, C before the oversized row
  // used up its attempts (rows behind a parked row of another ticket keep flowing).
  const { rows: outbox } = await db.query<{ event_id: string; published_at: Date | null }>(
    `SELECT o.event_id, p.published_at FROM outbox_events o
       LEFT JOIN outbox_publications p ON o.seq = ANY (p.seqs)`,
  );
  expect(outbox.map((r) => r.event_id).sort()).toEqual(
    [aCreated, aCancelled, cCreated, cCancelled].map((r) => r.eventId).sort(),
  );
  const cPublishedAt = outbox.find((r) => r.event_id === cCancelled.eventId)!.published_at!;
  expect(cPublishedAt.getTime()).toBeLessThan(dl.get(bigCreated.eventId)!.created_at.getTime());

  const messages = await readTopic(TEST_KAFKA_BROKERS, topic);
  expect(messages.map((m) => m.headers['event-id']).sort()).toEqual(
    [aCreated, aCancelled, cCreated, cCancelled].map((r) => r.eventId).sort(),
  );

  // A row of a dead-lettered ticket that arrives later is dead-lettered too, never published alone.
  const pLate = ticketEventRow({ tenantId, ticketId: pCreated.aggregateId, kind: 'cancelled' });
  await insertOutboxRows(db, [pLate]);
  await waitFor('late row handled', async () => (await deadLetters()).has(pLate.eventId));
  expect((await deadLetters()).get(pLate.eventId)!.reason).toBe(`blocked_by_dead_letter:${pCreated.eventId}`);

  const stats = await relay.stats();
  expect(stats).toMatchObject({ pending: 0, deadLetters: 6, published: 4 });
  const metrics = await registry.getMetricsAsJSON();
  const value = (name: string) => metrics.find((m) => m.name === name)?.values.reduce((n, v) => n + v.value, 0);
  expect(value('outbox_dead_letters_total')).toBe(6);
  expect(value('outbox_dead_letter_rows')).toBe(6);
  expect(value('outbox_published_total')).toBe(4);
});
