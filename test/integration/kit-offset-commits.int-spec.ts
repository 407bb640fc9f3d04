// The kit's offset commits are grouped: the chunks of several partitions that finish while a commit is in
// flight are committed together by the next OffsetCommit request, and each chunk still waits for the commit
// of its own offset. Real broker, real PostgreSQL, the kit example (kit API only).
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { INestMicroservice } from '@nestjs/common';
import type { Consumer } from 'kafkajs';
import { Pool } from 'pg';
import type { TicketEventsOptions, TicketEventsServer } from '@tickets/event-consumer';
import { withFaults } from '@tickets/event-consumer/testing';
import { TEST_DATABASE_URL } from '../support/env';
import { eventually, kafkaFixture, ticketCreated, toMessage, uniqueName } from '../support/events-factory';
import { EFFECTS_DDL, startExample } from '../support/kit-example';
import { kitOptions } from '../support/kit-options';

jest.setTimeout(90_000);

const PARTITIONS = 4;

describe('event consumer kit: grouped offset commits', () => {
  const topic = uniqueName('kit-commits');
  const groupId = uniqueName('kit-commits-group');
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  let db: Pool;
  let consumer: { app: INestMicroservice; server: TicketEventsServer } | undefined;

  beforeAll(async () => {
    db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await db.query(EFFECTS_DDL);
    fx = await kafkaFixture(topic, PARTITIONS);
  });

  afterAll(async () => {
    await consumer?.app.close();
    await db.query('DELETE FROM kit_test_effects WHERE group_id = $1', [groupId]);
    await db.query('DELETE FROM ticket_events.inbox_events WHERE group_id = $1', [groupId]);
    await db.end();
    await fx?.close();
  });

  it('commits the chunks that finish while a commit is in flight in one request, and every offset', async () => {
    const tenantId = randomUUID();
    const events = Array.from({ length: PARTITIONS * 2 }, () => ticketCreated(tenantId));
    await fx.producer.send({ topic, messages: events.map((e, i) => toMessage(e, i % PARTITIONS)) });

    // The first chunk of each partition waits after its transaction until all of them are there (and the
    // test listens to the commits): then they ask for their commits in the same instant.
    let listening!: () => void;
    const ready = new Promise<void>((r) => (listening = r));
    const arrived = new Set<number>();
    let all!: () => void;
    const together = new Promise<void>((r) => (all = r));
    const options = withFaults(
      kitOptions(topic, groupId, { chunkSize: 1, partitionsConcurrency: PARTITIONS, fromBeginning: true }),
      {
        afterTransactionBeforeCommit: async ({ partition }) => {
          if (arrived.has(partition) && arrived.size === PARTITIONS) return;
          arrived.add(partition);
          if (arrived.size === PARTITIONS) all();
          // Bounded: if the first fetch did not bring all four, the test fails on the requests below instead of hanging.
          await Promise.race([Promise.all([ready, together]), sleep(15_000)]);
        },
      },
    ) as TicketEventsOptions;
    consumer = await startExample(options);
    const kafkaConsumer = consumer.server.unwrap<{ consumer: Consumer }>().consumer;
    const requests: number[][] = [];
    kafkaConsumer.on(kafkaConsumer.events.COMMIT_OFFSETS, (e) => {
      const parts = e.payload.topics.filter((t) => t.topic === topic).flatMap((t) => t.partitions);
      if (parts.length > 0) requests.push(parts.map((p) => Number(p.partition)).sort());
    });
    listening();

    await eventually(
      async () => (await fx.admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions,
      (ps) => ps.length === PARTITIONS && ps.every((p) => p.offset === '2'),
      60_000,
      'every partition committed at offset 2',
    );
    const effects = await db.query<{ n: number; distinct: number }>(
      'SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS distinct FROM kit_test_effects WHERE group_id = $1',
      [groupId],
    );
    expect(effects.rows[0]).toEqual({ n: events.length, distinct: events.length });
    // The first of the four released chunks commits alone; the other three join the next request.
    expect(requests[0]).toHaveLength(1);
    expect(requests[1]).toHaveLength(PARTITIONS - 1);
    expect(requests.flat().length).toBeLessThanOrEqual(events.length);
  });
});
