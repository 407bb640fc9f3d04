// Replay of a group built on the kit (the kit's replayTopic, what `ticket-events replay` and `npm run cli -- replay`
// run): one partition from earliest, the kit counts what it re-reads in the chunk's transaction, the
// report says re-read vs skipped vs dead-lettered (a handler that fails again, an event held behind it), the
// other partition keeps its offset, and no effect happens twice.
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import type { TicketEventsServer } from '@tickets/event-consumer';
import { replayTopic } from '@tickets/event-consumer/admin';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from '../support/env';
import { eventually, kafkaFixture, ticketCreated, toMessage, uniqueName } from '../support/events-factory';
import { deleteKitRows, EFFECTS_DDL, POISON_TITLE, startExample } from '../support/kit-example';
import { kitMetric, kitOptions } from '../support/kit-options';

jest.setTimeout(90_000);

/** The test database (with the example's effects table) and a topic of the test's own. */
async function openFixture(topic: string, partitions: number) {
  const db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  await db.query(EFFECTS_DDL);
  return { db, fx: await kafkaFixture(topic, partitions) };
}

/** Stops the example and removes what the group left: its rows, its replays, the group and the topic. */
async function closeFixture(
  groupId: string,
  db: Pool,
  fx: Awaited<ReturnType<typeof kafkaFixture>> | undefined,
  example: Awaited<ReturnType<typeof startExample>> | undefined,
) {
  await example?.app.close();
  await deleteKitRows(db, groupId);
  await db.query('DELETE FROM ticket_events.replays WHERE group_id = $1', [groupId]);
  await fx?.admin.deleteGroups([groupId]).catch(() => undefined);
  await Promise.allSettled([fx?.close(), db.end()]);
}

describe('event consumer kit: replay of a kit group', () => {
  const topic = uniqueName('kit-replay');
  const groupId = uniqueName('kit-replay-group');
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  let db: Pool;
  let example: Awaited<ReturnType<typeof startExample>> | undefined;

  const committed = async () =>
    (await fx.admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions
      .sort((a, b) => a.partition - b.partition)
      .map((p) => p.offset);
  const effects = async () =>
    (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM kit_test_effects WHERE group_id = $1', [groupId]))
      .rows[0].n;

  beforeAll(async () => {
    ({ db, fx } = await openFixture(topic, 2));
  });

  afterAll(() => closeFixture(groupId, db, fx, example));

  const deadLetters = async () =>
    (
      await db.query<{ o: number; cause: string }>(
        'SELECT "offset"::int AS o, cause FROM ticket_events.consumer_dead_letters WHERE group_id = $1 ORDER BY "offset"',
        [groupId],
      )
    ).rows;

  it('replays one partition from earliest: every message re-read and skipped or dead-lettered again, no second effect, the other partition untouched', async () => {
    const tenant = randomUUID();
    const p0 = Array.from({ length: 5 }, () => ticketCreated(tenant));
    const p1 = Array.from({ length: 7 }, () => ticketCreated(tenant));
    // A create whose handler always fails, and a later event of its ticket (the example handles creates only)
    // held behind its dead letter.
    const poison = ticketCreated(tenant, { title: POISON_TITLE });
    await fx.producer.send({
      topic,
      acks: -1,
      messages: [
        ...p0.map((e) => toMessage(e, 0)),
        ...p1.map((e) => toMessage(e, 1)),
        { partition: 1, value: '{"broken":' },
        { partition: 1, value: JSON.stringify({ ...ticketCreated(tenant), type: 'ticket.archived.v9' }) },
        toMessage(poison, 1),
        toMessage(ticketCreated(tenant, { ticketId: poison.ticketId }), 1),
      ],
    });
    example = await startExample(kitOptions(topic, groupId));
    await eventually(committed, (o) => o.join() === '5,11', 30_000, 'offsets 5 and 11');
    expect(await effects()).toBe(12);
    const dead = await deadLetters();
    expect(dead).toEqual([
      { o: 7, cause: 'invalid' },
      { o: 9, cause: 'handler_failed' },
      { o: 10, cause: 'held' },
    ]);
    const deadLettered = (server: TicketEventsServer) =>
      Promise.all(
        ['invalid', 'handler_failed', 'held'].map((c) =>
          kitMetric(server, 'event_consumer_dead_lettered_total', `cause="${c}"`),
        ),
      );
    expect(await deadLettered(example.server)).toEqual([1, 1, 1]);
    await example.app.close();
    example = undefined;

    const out: string[] = [];
    const outcome = replayTopic(
      {
        group: groupId,
        topic,
        from: 'earliest',
        partition: 1,
        wait: true,
        follow: true,
        timeoutMs: 60_000,
        pollIntervalMs: 200,
      },
      {
        databaseUrl: TEST_DATABASE_URL,
        kafka: { brokers: TEST_KAFKA_BROKERS, clientId: 'kit-replay-it' },
        out: (l) => out.push(l),
        deadLetters: (g) => `dead-letters list --group ${g}`,
      },
    );
    await eventually(
      () => out.join('\n'),
      (t) => t.includes('message(s) to re-read'),
      20_000,
      'the offsets to move',
    );
    expect(await committed()).toEqual(['5', '0']);
    example = await startExample(kitOptions(topic, groupId));

    expect(await outcome).toMatchObject({ outcome: 'completed' });
    const text = out.join('\n');
    expect(text).toContain(
      `group ${groupId} on topic ${topic} partition 1 moved to earliest; 11 message(s) to re-read`,
    );
    expect(text).toMatch(/re-read\s+11 of 11\n/);
    // 7 events already in the inbox and the unknown type; the poison create failed again and the later event
    // of its ticket was held again (dead-lettered, not skipped); the invalid message is counted apart.
    expect(text).toMatch(/skipped \(already processed\)\s+8\n/);
    expect(text).toMatch(/processed as new\s+0\n/);
    expect(text).toMatch(/dead-lettered \(failed, held\)\s+2\n/);
    expect(text).toMatch(/dead-lettered \(invalid\)\s+1\n/);
    expect(text).toContain(`\nthe group's open dead letters: dead-letters list --group ${groupId}`);
    expect(text).not.toContain('not counted');
    expect(await committed()).toEqual(['5', '11']);
    expect(await effects()).toBe(12);
    // Each place keeps its one dead letter: the replay wrote no second row, and counted none (the dead-letter
    // alert watches this counter; it would point at dead letters that are not there).
    expect(await deadLetters()).toEqual(dead);
    expect(await deadLettered(example.server)).toEqual([0, 0, 0]);
  });

  it('refuses an unknown partition without moving anything, before asking the live members to pause', async () => {
    const out: string[] = [];
    expect(example).toBeDefined(); // a live member of the group
    const before = await committed();
    const r = await replayTopic(
      {
        group: groupId,
        topic,
        from: 'earliest',
        partition: 7,
        wait: true,
        follow: false,
        timeoutMs: 30_000,
        pollIntervalMs: 200,
      },
      {
        databaseUrl: TEST_DATABASE_URL,
        kafka: { brokers: TEST_KAFKA_BROKERS, clientId: 'kit-replay-it' },
        out: (l) => out.push(l),
      },
    );
    expect(r).toEqual({ outcome: 'failed' });
    expect(out).toEqual([expect.stringContaining('has no partition 7')]);
    expect(await committed()).toEqual(before);
    await example?.app.close();
    example = undefined;
  });

  it('refuses a group Kafka and the kit do not know (a mistyped id), or one with offsets on another topic only; takes one whose offsets expired; --new-group sets a new one', async () => {
    const typo = `${groupId}-typo`;
    const elsewhere = `${groupId}-elsewhere`;
    const expired = `${groupId}-expired`;
    const otherTopic = `${topic}-other`;
    const offsetsOf = async (g: string) =>
      (await fx.admin.fetchOffsets({ groupId: g, topics: [topic] }))[0].partitions
        .sort((a, b) => a.partition - b.partition)
        .map((p) => p.offset);
    const replays = async (g: string) =>
      (await db.query('SELECT 1 FROM ticket_events.replays WHERE group_id = $1', [g])).rowCount;
    const out: string[] = [];
    const request = { topic, from: 'earliest', wait: true, follow: false, timeoutMs: 30_000 };
    const deps = {
      databaseUrl: TEST_DATABASE_URL,
      kafka: { brokers: TEST_KAFKA_BROKERS, clientId: 'kit-replay-it' },
      out: (l: string) => void out.push(l),
    };
    try {
      expect(await replayTopic({ ...request, group: typo }, deps)).toEqual({ outcome: 'unknown-group' });
      expect(out).toEqual([
        `replay: group "${typo}" has no members, no committed offset and no rows in the kit's tables: is the group id right? ` +
          "For a group that has not consumed yet, or whose offsets the broker dropped (an empty group's, after offsets.retention.minutes), add --new-group. Nothing was changed.",
      ]);
      expect(await offsetsOf(typo)).toEqual(['-1', '-1']);
      expect(await replays(typo)).toBe(0);

      // Offsets on another topic only: the topic is the likelier mistake.
      await fx.admin.createTopics({ topics: [{ topic: otherTopic, numPartitions: 1 }], waitForLeaders: true });
      await fx.admin.setOffsets({ groupId: elsewhere, topic: otherTopic, partitions: [{ partition: 0, offset: '0' }] });
      out.length = 0;
      expect(await replayTopic({ ...request, group: elsewhere }, deps)).toEqual({ outcome: 'unknown-group' });
      expect(out.join('\n')).toContain(
        `group "${elsewhere}" has committed offsets on ${otherTopic} but none on ${topic}: check --topic / TICKET_EVENTS_TOPIC.`,
      );
      expect(await offsetsOf(elsewhere)).toEqual(['-1', '-1']);

      // No offsets, but rows in the kit's inbox: a real group whose offsets the broker dropped. Not refused.
      await db.query(
        `INSERT INTO ticket_events.inbox_events (group_id, event_id, event_type, ticket_id, topic, partition, "offset")
         VALUES ($1, gen_random_uuid(), 'ticket.created.v1', gen_random_uuid(), $2, 0, 0)`,
        [expired, topic],
      );
      expect((await replayTopic({ ...request, group: expired }, deps)).outcome).toBe('started');
      expect(await offsetsOf(expired)).toEqual(['0', '0']);

      const allowed = await replayTopic({ ...request, group: typo, newGroup: true }, deps);
      expect(allowed.outcome).toBe('started');
      expect(await offsetsOf(typo)).toEqual(['0', '0']);
      expect(await replays(typo)).toBe(1);
    } finally {
      await db.query('DELETE FROM ticket_events.inbox_events WHERE group_id = $1', [expired]);
      await db.query('DELETE FROM ticket_events.replays WHERE group_id = ANY($1)', [[typo, expired]]);
      await fx.admin.deleteGroups([typo, elsewhere, expired]).catch(() => undefined);
      await fx.admin.deleteTopics({ topics: [otherTopic] }).catch(() => undefined);
    }
  });
});

describe('event consumer kit: replay of an event held behind a dead letter from before the replay', () => {
  const topic = uniqueName('kit-replay-held');
  const groupId = uniqueName('kit-replay-held-group');
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  let db: Pool;
  let example: Awaited<ReturnType<typeof startExample>> | undefined;

  beforeAll(async () => {
    ({ db, fx } = await openFixture(topic, 1));
  });

  afterAll(() => closeFixture(groupId, db, fx, example));

  it('counts the held event as dead-lettered when the replay re-reads it alone (its chunk claims nothing)', async () => {
    const tenant = randomUUID();
    const poison = ticketCreated(tenant, { title: POISON_TITLE });
    const now = Date.now();
    await fx.producer.send({
      topic,
      acks: -1,
      messages: [
        { ...toMessage(poison, 0), timestamp: String(now - 120_000) },
        { ...toMessage(ticketCreated(tenant, { ticketId: poison.ticketId }), 0), timestamp: String(now) },
      ],
    });
    example = await startExample(kitOptions(topic, groupId));
    const causes = async () =>
      (
        await db.query<{ cause: string }>(
          'SELECT cause FROM ticket_events.consumer_dead_letters WHERE group_id = $1 ORDER BY "offset"',
          [groupId],
        )
      ).rows.map((r) => r.cause);
    await eventually(causes, (c) => c.join() === 'handler_failed,held', 30_000, 'the create dead, the later held');
    await example.app.close();
    example = undefined;

    // From a time after the poison create: only the held event is re-read, in a chunk that handles nothing.
    const out: string[] = [];
    const outcome = replayTopic(
      {
        group: groupId,
        topic,
        from: new Date(now - 60_000).toISOString(),
        wait: true,
        follow: true,
        timeoutMs: 60_000,
        pollIntervalMs: 200,
      },
      {
        databaseUrl: TEST_DATABASE_URL,
        kafka: { brokers: TEST_KAFKA_BROKERS, clientId: 'kit-replay-it' },
        out: (l) => out.push(l),
      },
    );
    await eventually(
      () => out.join('\n'),
      (t) => t.includes('message(s) to re-read'),
      20_000,
      'the offsets to move',
    );
    example = await startExample(kitOptions(topic, groupId));
    expect(await outcome).toMatchObject({ outcome: 'completed' });
    const text = out.join('\n');
    expect(text).toMatch(/re-read\s+1 of 1\n/);
    expect(text).toMatch(/skipped \(already processed\)\s+0\n/);
    expect(text).toMatch(/processed as new\s+0\n/);
    expect(text).toMatch(/dead-lettered \(failed, held\)\s+1\n/);
    expect(await causes()).toEqual(['handler_failed', 'held']);
    expect(
      (await db.query('SELECT count(*)::int AS n FROM kit_test_effects WHERE group_id = $1', [groupId])).rows[0].n,
    ).toBe(0);
  });
});
