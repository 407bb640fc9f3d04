// The kit's offset commits are off the messages' path: a chunk does not wait for the commit of its offset, one
// OffsetCommit request per consumer carries the offsets resolved since the last one (at most one per
// commitIntervalMs), and a graceful stop commits what is left before the member leaves the group. A commit the
// coordinator refuses is counted, and its offset is committed once the member is back in the group.
// Real broker, real PostgreSQL, the kit example (kit API only).
import { randomUUID } from 'node:crypto';
import type { INestMicroservice } from '@nestjs/common';
import type { Consumer } from 'kafkajs';
import { Pool } from 'pg';
import type { TicketEventsServer } from '@tickets/event-consumer';
import { leaveAsStaleMember } from '@tickets/event-consumer/admin';
import { TEST_DATABASE_URL } from '../support/env';
import { eventually, kafkaFixture, testKafka, ticketCreated, toMessage, uniqueName } from '../support/events-factory';
import { EFFECTS_DDL, startExample } from '../support/kit-example';
import { kitOptions } from '../support/kit-options';

jest.setTimeout(90_000);

const PARTITIONS = 4;

describe('event consumer kit: offset commits', () => {
  const topic = uniqueName('kit-commits');
  const groupId = uniqueName('kit-commits-group');
  const refusedTopic = uniqueName('kit-commit-refused');
  const refusedGroup = uniqueName('kit-commit-refused-group');
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  let fxRefused: Awaited<ReturnType<typeof kafkaFixture>>;
  let db: Pool;
  let consumer: { app: INestMicroservice; server: TicketEventsServer } | undefined;

  beforeAll(async () => {
    db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await db.query(EFFECTS_DDL);
    fx = await kafkaFixture(topic, PARTITIONS);
    fxRefused = await kafkaFixture(refusedTopic, 1);
  });

  afterAll(async () => {
    await consumer?.app.close();
    await db.query('DELETE FROM kit_test_effects WHERE group_id = ANY($1)', [[groupId, refusedGroup]]);
    await db.query('DELETE FROM ticket_events.inbox_events WHERE group_id = ANY($1)', [[groupId, refusedGroup]]);
    await db.end();
    await fx?.close();
    await fxRefused?.close();
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

  it('is counted in event_consumer_offset_commit_failures_total, and the offset is committed after the member rejoins', async () => {
    // Heartbeats 5 s apart: the member learns that it was taken out of the group only then, and meanwhile
    // handles a message whose commit the coordinator refuses (UNKNOWN_MEMBER_ID).
    const options = kitOptions(refusedTopic, refusedGroup, {
      chunkSize: 1,
      partitionsConcurrency: 1,
      fromBeginning: true,
      commitIntervalMs: 0,
      consumer: { sessionTimeout: 30_000, heartbeatInterval: 5_000 },
    });
    consumer = await startExample(options);
    const failures = async () => {
      const text = await (await fetch(`http://127.0.0.1:${consumer!.server.metricsPort}/metrics`)).text();
      const line = text
        .split('\n')
        .find((l) => l.startsWith(`event_consumer_offset_commit_failures_total{group="${refusedGroup}"}`));
      return line ? Number(line.split(' ').pop()) : 0;
    };
    const members = async () =>
      (await fxRefused.admin.describeGroups([refusedGroup])).groups[0].members.map((m) => m.memberId);
    const [memberId] = await eventually(members, (ids) => ids.length === 1, 60_000, 'the kit joined its group');
    expect(await failures()).toBe(0);

    await expect(leaveAsStaleMember(testKafka(), refusedGroup, memberId)).resolves.toBe('left');
    const event = ticketCreated(randomUUID());
    await fxRefused.producer.send({ topic: refusedTopic, messages: [toMessage(event, 0)] });
    await eventually(failures, (n) => n >= 1, 30_000, 'a refused commit counted');

    // At its next heartbeat the member rejoins; the event is read again, skipped by the inbox, and committed.
    await eventually(
      async () =>
        (await fxRefused.admin.fetchOffsets({ groupId: refusedGroup, topics: [refusedTopic] }))[0].partitions[0].offset,
      (offset) => offset === '1',
      60_000,
      'the offset committed after the rejoin',
    );
    const effects = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM kit_test_effects WHERE group_id = $1',
      [refusedGroup],
    );
    expect(effects.rows[0].n).toBe(1);
  });
});
