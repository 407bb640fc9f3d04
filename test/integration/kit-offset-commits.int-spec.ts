// The kit's offset commits are off the messages' path: a chunk does not wait for the commit of its offset, one
// OffsetCommit request per consumer carries the offsets resolved since the last one (at most one per
// commitIntervalMs), and a graceful stop commits what is left before the member leaves the group.
// Real broker, real PostgreSQL, the kit example (kit API only).
import { randomUUID } from 'node:crypto';
import type { INestMicroservice } from '@nestjs/common';
import type { Consumer } from 'kafkajs';
import { Pool } from 'pg';
import type { TicketEventsServer } from '@tickets/event-consumer';
import { TEST_DATABASE_URL } from '../support/env';
import { eventually, kafkaFixture, ticketCreated, toMessage, uniqueName } from '../support/events-factory';
import { EFFECTS_DDL, startExample } from '../support/kit-example';
import { kitOptions } from '../support/kit-options';

jest.setTimeout(90_000);

const PARTITIONS = 4;

describe('event consumer kit: offset commits off the path of the messages', () => {
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

  it('handles every chunk without waiting for its commit, and commits the rest when it stops', async () => {
    const tenantId = randomUUID();
    const events = Array.from({ length: PARTITIONS * 2 }, () => ticketCreated(tenantId));
    await fx.producer.send({ topic, messages: events.map((e, i) => toMessage(e, i % PARTITIONS)) });

    // A minute between commits: the first chunk's commit starts at once, every later one would wait for the
    // minute. If a chunk waited for its own commit, the eight chunks could not all be handled within it.
    const options = kitOptions(topic, groupId, {
      chunkSize: 1,
      partitionsConcurrency: PARTITIONS,
      fromBeginning: true,
      commitIntervalMs: 60_000,
    });
    consumer = await startExample(options);
    const kafkaConsumer = consumer.server.unwrap<{ consumer: Consumer }>().consumer;
    const requests: number[][] = [];
    kafkaConsumer.on(kafkaConsumer.events.COMMIT_OFFSETS, (e) => {
      const parts = e.payload.topics.filter((t) => t.topic === topic).flatMap((t) => t.partitions);
      if (parts.length > 0) requests.push(parts.map((p) => Number(p.partition)).sort());
    });

    const handled = () =>
      db
        .query<{ n: number; distinct: number }>(
          'SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS distinct FROM kit_test_effects WHERE group_id = $1',
          [groupId],
        )
        .then((r) => r.rows[0]);
    await eventually(handled, (r) => r.n === events.length, 30_000, 'every event handled');
    const committed = async () =>
      (await fx.admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions.map((p) => Number(p.offset));
    // At most the one commit that started at once: the rest waits for the interval, not the chunks for it.
    expect(requests.length).toBeLessThanOrEqual(1);
    expect((await committed()).reduce((a, b) => a + Math.max(0, b), 0)).toBeLessThan(events.length);

    await consumer.app.close();
    consumer = undefined;
    // The stop committed every resolved offset before it left the group, in one request.
    expect(await committed()).toEqual(Array.from({ length: PARTITIONS }, () => 2));
    expect(requests.length).toBeLessThanOrEqual(2);
    expect(await handled()).toEqual({ n: events.length, distinct: events.length });
  });
});
