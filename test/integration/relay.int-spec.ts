// The outbox relay against the real PostgreSQL and the real Kafka broker: what a message looks
// like, marking only after the ack, the NOTIFY wake-up from another connection (OutboxNotifier), crash
// between publish and mark, retention.
import { randomUUID } from 'node:crypto';
import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import { Pool, type PoolClient } from 'pg';
import { Registry } from 'prom-client';
import { createLogger } from '@tickets/logger';
import { OutboxNotifier, OutboxRelay, type OutboxRelayOptions } from '@tickets/outbox';
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

const topic = `relay-int-${randomUUID().slice(0, 8)}`;
const TOPIC_RETENTION_MS = 3 * 86_400_000;
const tenantId = randomUUID();
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent', 'relay-test');
let database: RelayTestDatabase;
let db: Pool;
const relays: OutboxRelay[] = [];

function newRelay(overrides: Partial<OutboxRelayOptions> = {}): OutboxRelay {
  const relay = new OutboxRelay({
    databaseUrl: database.url,
    kafka: {
      brokers: TEST_KAFKA_BROKERS,
      clientId: 'relay-test',
      topic,
      partitions: 3,
      retentionMs: TOPIC_RETENTION_MS,
    },
    logger,
    registry: new Registry(),
    pollIntervalMs: 200,
    leaderRetryMs: 200,
    retryBaseMs: 50,
    retryMaxMs: 500,
    ...overrides,
  });
  relays.push(relay);
  return relay;
}

async function unpublished(seqs?: string[]): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM outbox_pending WHERE $1::bigint[] IS NULL OR seq = ANY($1::bigint[])',
    [seqs ?? null],
  );
  return rows[0].n;
}

beforeAll(async () => {
  database = await createRelayTestDatabase('basic');
  db = new Pool({ connectionString: database.url, max: 2 });
});

afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.stop()));
});

afterAll(async () => {
  await db?.end();
  await database?.drop();
  await deleteTopic(TEST_KAFKA_BROKERS, topic);
});

describe('OutboxRelay', () => {
  it('publishes each row with key = ticket id, the envelope as value and the event headers, and marks it only after the ack; the notifier of another connection wakes it', async () => {
    const publishedAtHookTime: number[] = [];
    // A poll interval far longer than the test: only the writer's NOTIFY can wake the relay in time.
    const relay = newRelay({
      pollIntervalMs: 60_000,
      faults: {
        afterPublishBeforeMark: async (rows) => {
          const { rows: r } = await db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM outbox_events o
              WHERE o.seq = ANY($1::bigint[]) AND NOT EXISTS (SELECT 1 FROM outbox_pending p WHERE p.seq = o.seq)`,
            [rows.map((x) => x.seq)],
          );
          publishedAtHookTime.push(r[0].n);
        },
      },
    });
    await relay.start();
    await waitFor('leadership', async () => (await relay.stats()).isLeader);
    await new Promise((r) => setTimeout(r, 300)); // let it settle into its (60 s) wait

    const rows = Array.from({ length: 5 }, () => ticketLifecycle(tenantId)).flat();
    const seqs = await insertOutboxRows(db, rows);
    // The writer, after its commit: a coalesced pg_notify from a connection of its own.
    const notifier = new OutboxNotifier({ databaseUrl: database.url, intervalMs: 10, logger });
    try {
      notifier.committed();
      await waitFor('all rows published', async () => (await unpublished(seqs)) === 0, 30_000);
    } finally {
      await notifier.close();
    }

    // Marked only after the broker acknowledged: at hook time (ack received) nothing was marked yet.
    expect(publishedAtHookTime.length).toBeGreaterThan(0);
    expect(publishedAtHookTime.every((n) => n === 0)).toBe(true);

    const messages = await readTopic(TEST_KAFKA_BROKERS, topic);
    expect(messages).toHaveLength(rows.length);
    for (const row of rows) {
      const m = messages.find((x) => x.headers['event-id'] === row.eventId)!;
      expect(m).toBeDefined();
      expect(m.key).toBe(row.aggregateId);
      expect(JSON.parse(m.value)).toEqual(row.payload);
      expect(m.headers).toEqual({
        'event-id': row.eventId,
        'event-type': row.eventType,
        traceparent: row.headers.traceparent,
        'correlation-id': row.headers['correlation-id'],
      });
    }
    // The mark stores the record's own timestamp, the one a consumer reads (the console's "published").
    const { rows: stamps } = await db.query<{ eventId: string; ms: number }>(
      `SELECT o.event_id::text AS "eventId", (extract(epoch FROM p.kafka_timestamp) * 1000)::float8 AS ms
         FROM outbox_events o JOIN outbox_publications p ON o.seq = ANY (p.seqs) WHERE o.seq = ANY($1::bigint[])`,
      [seqs],
    );
    expect(stamps).toHaveLength(rows.length);
    for (const s of stamps) expect(s.ms).toBe(messages.find((m) => m.headers['event-id'] === s.eventId)!.timestamp);
    for (let i = 0; i < rows.length; i += 2) {
      const [created, cancelled] = [rows[i], rows[i + 1]].map((r) =>
        messages.find((m) => m.headers['event-id'] === r.eventId)!,
      );
      expect(created.partition).toBe(cancelled.partition);
      expect(created.offset).toBeLessThan(cancelled.offset);
    }

    const stats = await relay.stats();
    const up = { state: 'up', unreachableForMs: 0 };
    expect(stats).toEqual({
      pending: 0,
      oldestPendingAgeMs: 0,
      deadLetters: 0,
      published: rows.length,
      isLeader: true,
      broker: up,
      database: up,
    });

    // The relay created the topic: configured partitions and retention.
    const admin = new Kafka({
      brokers: TEST_KAFKA_BROKERS,
      clientId: 'relay-test-admin',
      logLevel: logLevel.NOTHING,
    }).admin();
    await admin.connect();
    try {
      const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
      expect(topics[0].partitions).toHaveLength(3);
      const { resources } = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms'] }],
      });
      expect(resources[0].configEntries[0].configValue).toBe(String(TOPIC_RETENTION_MS));
    } finally {
      await admin.disconnect();
    }
  });

  it('dies after publishing and before marking: the restarted relay publishes the rows again (a duplicate in Kafka) and marks them', async () => {
    let crashed!: () => void;
    const crash = new Promise<void>((r) => (crashed = r));
    const dying = newRelay({
      faults: {
        afterPublishBeforeMark: () => {
          crashed();
          throw new Error('simulated crash between publish and mark');
        },
      },
    });
    const rows = ticketLifecycle(tenantId);
    const seqs = await insertOutboxRows(db, rows);
    await dying.start();
    await crash;
    await new Promise((r) => setTimeout(r, 300));
    expect(await unpublished(seqs)).toBe(2); // published to Kafka, never marked
    expect((await dying.stats()).isLeader).toBe(false);

    const restarted = newRelay();
    await restarted.start();
    await waitFor('rows published after restart', async () => (await unpublished(seqs)) === 0);
    expect((await restarted.stats()).published).toBe(2);

    const messages = (await readTopic(TEST_KAFKA_BROKERS, topic)).filter((m) =>
      rows.some((r) => r.eventId === m.headers['event-id']),
    );
    for (const row of rows) {
      expect(messages.filter((m) => m.headers['event-id'] === row.eventId)).toHaveLength(2);
    }
    // Even with the duplicate, the ticket's first occurrences are in order: created, then cancelled.
    const firstSeen = [...new Set(messages.map((m) => m.headers['event-type']))];
    expect(firstSeen).toEqual(['ticket.created.v1', 'ticket.cancelled.v1']);
  });

  it('deletes published rows older than the retention with the record of their sends, whole sends at a time, and nothing else', async () => {
    // What the relay's mark writes, as if it had happened `ago`: the queue entries gone, one record of the send.
    const publish = (client: PoolClient, seqs: string[], ago: string) =>
      client.query(
        `WITH d AS (DELETE FROM outbox_pending WHERE seq = ANY($1::bigint[]) RETURNING seq)
         INSERT INTO outbox_publications (seqs, first_seq, last_seq, rows, published_at)
         SELECT array_agg(seq ORDER BY seq), min(seq), max(seq), count(*), now() - $2::interval FROM d`,
        [seqs, ago],
      );
    const client = await db.connect();
    let oldSeqs: string[];
    let recentSeqs: string[];
    let pendingSeqs: string[];
    try {
      await client.query('BEGIN');
      oldSeqs = await insertOutboxRows(
        client,
        Array.from({ length: 5 }, () => ticketEventRow({ tenantId, kind: 'created' })),
      );
      recentSeqs = await insertOutboxRows(client, [ticketEventRow({ tenantId, kind: 'created' })]);
      pendingSeqs = await insertOutboxRows(client, [ticketEventRow({ tenantId, kind: 'created' })]);
      // Three old sends (2, 2 and 1 rows): the cleanup's batches of 2 rows take one send each.
      await publish(client, oldSeqs.slice(0, 2), '2 hours 2 minutes');
      await publish(client, oldSeqs.slice(2, 4), '2 hours 1 minute');
      await publish(client, oldSeqs.slice(4), '2 hours');
      await publish(client, recentSeqs, '10 minutes');
      // Unpublished but created long ago: never deleted by retention, however old.
      await client.query(
        `UPDATE outbox_events SET created_at = now() - interval '3 hours' WHERE seq = ANY($1::bigint[])`,
        [pendingSeqs],
      );
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    const relay = newRelay({ retentionMs: 60 * 60_000, cleanupIntervalMs: 200, cleanupBatchSize: 2 });
    await relay.start();
    const remaining = async (seqs: string[]) =>
      (
        await db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox_events WHERE seq = ANY($1::bigint[])', [
          seqs,
        ])
      ).rows[0].n;
    await waitFor('old published rows deleted', async () => (await remaining(oldSeqs)) === 0);
    await waitFor('pending row published', async () => (await unpublished(pendingSeqs)) === 0);
    await new Promise((r) => setTimeout(r, 500)); // a few more cleanup rounds
    expect(await remaining(recentSeqs)).toBe(1);
    expect(await remaining(pendingSeqs)).toBe(1);
    // The records of the old sends went with their rows; the recent send's and the relay's own stay.
    const { rows: sends } = await db.query<{ seqs: string[] }>('SELECT seqs::text[] AS seqs FROM outbox_publications');
    const recorded = sends.flatMap((s) => s.seqs);
    expect(recorded).toEqual(expect.arrayContaining([...recentSeqs, ...pendingSeqs]));
    expect(recorded.filter((s) => oldSeqs.includes(s))).toEqual([]);
    expect(await relay.purgePublished()).toBe(0);
  });
});
