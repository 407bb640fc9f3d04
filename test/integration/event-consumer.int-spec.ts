// The consumer kit (@tickets/event-consumer) on the real broker and the real PostgreSQL, through the
// example consumer in test/support/kit-example.ts (kit API only): dedup of redeliveries, poison
// messages and a failing handler dead-lettered after N attempts while the partition moves on, an
// unknown event type skipped and counted, an event type without a handler skipped, counted and logged
// once, /metrics served by the consumer.
import { randomUUID } from 'node:crypto';
import type { INestMicroservice } from '@nestjs/common';
import { Pool } from 'pg';
import type { TicketEventsServer } from '@tickets/event-consumer';
import { TEST_DATABASE_URL } from '../support/env';
import {
  eventually,
  kafkaFixture,
  ticketCancelled,
  ticketCreated,
  toMessage,
  uniqueName,
} from '../support/events-factory';
import { EFFECTS_DDL, EffectsController, POISON_TITLE, startExample } from '../support/kit-example';
import { capturingLogger, kitMetric, kitOptions } from '../support/kit-options';

jest.setTimeout(90_000);

describe('event consumer kit', () => {
  const topic = uniqueName('kit');
  const groupId = uniqueName('kit-group');
  const tenantId = randomUUID();
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  let db: Pool;
  let consumer: { app: INestMicroservice; server: TicketEventsServer };
  const lines: string[] = [];

  const effects = async () =>
    (
      await db.query<{ event_id: string; n: number }>(
        'SELECT event_id, count(*)::int AS n FROM kit_test_effects WHERE group_id = $1 GROUP BY event_id',
        [groupId],
      )
    ).rows;
  const committed = async () => {
    const [t] = await fx.admin.fetchOffsets({ groupId, topics: [topic] });
    return Number(t.partitions.find((p) => p.partition === 0)!.offset);
  };

  beforeAll(async () => {
    db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await db.query(EFFECTS_DDL);
    fx = await kafkaFixture(topic, 1);
    consumer = await startExample(kitOptions(topic, groupId, { logger: capturingLogger(lines) }));
  });

  afterAll(async () => {
    await consumer?.app.close();
    await db.query('DELETE FROM kit_test_effects WHERE group_id = $1', [groupId]);
    await db.query('DELETE FROM ticket_events.inbox_events WHERE group_id = $1', [groupId]);
    await db.query('DELETE FROM ticket_events.consumer_dead_letters WHERE group_id = $1', [groupId]);
    await db.end();
    await fx?.close();
  });

  it('handles each event once: the same event published three times has one effect, and the offset moves past all', async () => {
    const e = ticketCreated(tenantId);
    await fx.producer.send({ topic, messages: [toMessage(e, 0), toMessage(e, 0)] });
    await fx.producer.send({ topic, messages: [toMessage(e, 0)] });
    await eventually(committed, (o) => o === 3, 30_000, 'offset 3 committed');
    expect(await effects()).toEqual([{ event_id: e.id, n: 1 }]);
    const inbox = await db.query(
      'SELECT duplicates FROM ticket_events.inbox_events WHERE group_id = $1 AND event_id = $2',
      [groupId, e.id],
    );
    expect(inbox.rows).toEqual([{ duplicates: 2 }]);
    expect(await kitMetric(consumer.server, 'event_consumer_processed_total')).toBe(1);
    expect(await kitMetric(consumer.server, 'event_consumer_duplicates_skipped_total')).toBe(2);
  });

  it('dead-letters a poison message and a handler that fails every attempt, with the reason, and keeps processing the partition', async () => {
    const before = await committed();
    const ok1 = ticketCreated(tenantId);
    const poison = ticketCreated(tenantId, { title: POISON_TITLE });
    const ok2 = ticketCreated(tenantId);
    await fx.producer.send({
      topic,
      messages: [
        toMessage(ok1, 0),
        { key: 'x', value: 'this is not JSON', partition: 0 },
        toMessage(poison, 0),
        toMessage(ok2, 0),
      ],
    });
    await eventually(committed, (o) => o === before + 4, 30_000, 'offsets past the poison committed');
    const ids = (await effects()).map((r) => r.event_id);
    expect(ids).toEqual(expect.arrayContaining([ok1.id, ok2.id]));
    expect(ids).not.toContain(poison.id);
    const dead = await db.query<{ offset: string; reason: string }>(
      'SELECT "offset"::text, reason FROM ticket_events.consumer_dead_letters WHERE group_id = $1 ORDER BY "offset"',
      [groupId],
    );
    expect(dead.rows).toEqual([
      { offset: String(before + 1), reason: expect.stringMatching(/^not JSON/) },
      {
        offset: String(before + 2),
        reason: expect.stringContaining(
          `handler failed 3 times (ticket.created.v1 ${poison.id}): Error: this handler cannot take a poison ticket`,
        ),
      },
    ]);
    expect(EffectsController.attempts.get(poison.id)).toBe(3);
    expect(await kitMetric(consumer.server, 'event_consumer_dead_lettered_total', 'cause="handler_failed"')).toBe(1);
    expect(await kitMetric(consumer.server, 'event_consumer_dead_lettered_total', 'cause="invalid"')).toBe(1);
    // Each dead letter is logged, the invalid message's with its offset and reason.
    expect(lines.filter((l) => l.startsWith('message dead-lettered'))).toEqual([
      expect.stringMatching(new RegExp(`"offset":"${before + 1}","reason":"not JSON`)),
    ]);
    expect(lines.filter((l) => l.startsWith('event dead-lettered'))).toHaveLength(1);
    // The poison event left no inbox row: a replay would try it again rather than skip it.
    expect(
      (
        await db.query('SELECT 1 FROM ticket_events.inbox_events WHERE group_id = $1 AND event_id = $2', [
          groupId,
          poison.id,
        ])
      ).rowCount,
    ).toBe(0);
  });

  it('skips and counts an event type it does not know (ticket.archived.v9), without a dead letter or a crash', async () => {
    const before = await committed();
    const deadBefore = (
      await db.query('SELECT count(*)::int AS n FROM ticket_events.consumer_dead_letters WHERE group_id = $1', [
        groupId,
      ])
    ).rows[0].n;
    const future = { ...ticketCreated(tenantId), type: 'ticket.archived.v9', data: { archivedBy: 'someone' } };
    const after = ticketCreated(tenantId);
    await fx.producer.send({
      topic,
      messages: [{ key: future.ticketId, value: JSON.stringify(future), partition: 0 }, toMessage(after, 0)],
    });
    await eventually(committed, (o) => o === before + 2, 30_000, 'offsets past the unknown event committed');
    expect((await effects()).map((r) => r.event_id)).toContain(after.id);
    expect(await kitMetric(consumer.server, 'event_consumer_unknown_skipped_total', 'type="ticket.archived.v9"')).toBe(
      1,
    );
    expect(
      (
        await db.query('SELECT count(*)::int AS n FROM ticket_events.consumer_dead_letters WHERE group_id = $1', [
          groupId,
        ])
      ).rows[0].n,
    ).toBe(deadBefore);
    expect(
      (
        await db.query('SELECT 1 FROM ticket_events.inbox_events WHERE group_id = $1 AND event_id = $2', [
          groupId,
          future.id,
        ])
      ).rowCount,
    ).toBe(0);
  });

  it('counts the events of a type it has no handler for (ticket.cancelled.v1) and says so once, with no inbox row', async () => {
    const before = await committed();
    const created = ticketCreated(tenantId);
    const [c1, c2] = [ticketCancelled(created), ticketCancelled(ticketCreated(tenantId))];
    await fx.producer.send({ topic, messages: [toMessage(c1, 0), toMessage(created, 0)] });
    await eventually(committed, (o) => o === before + 2, 30_000, 'offsets past the first unhandled event committed');
    await fx.producer.send({ topic, messages: [toMessage(c2, 0)] });
    await eventually(committed, (o) => o === before + 3, 30_000, 'offsets past the second unhandled event committed');
    expect((await effects()).map((r) => r.event_id)).toContain(created.id);
    expect(
      await kitMetric(consumer.server, 'event_consumer_unhandled_skipped_total', 'type="ticket.cancelled.v1"'),
    ).toBe(2);
    expect(lines.filter((l) => l.startsWith('events of type ticket.cancelled.v1 have no handler'))).toHaveLength(1);
    const inbox = await db.query(
      'SELECT 1 FROM ticket_events.inbox_events WHERE group_id = $1 AND event_id = ANY($2)',
      [groupId, [c1.id, c2.id]],
    );
    expect(inbox.rowCount).toBe(0);
  });

  it('serves lag per partition and handler latency on /metrics', async () => {
    const text = await (await fetch(`http://127.0.0.1:${consumer.server.metricsPort}/metrics`)).text();
    expect(text).toMatch(new RegExp(`event_consumer_lag\\{group="${groupId}",topic="${topic}",partition="0"\\} 0`));
    expect(text).toMatch(/event_consumer_handler_duration_seconds_count\{group="[^"]+"\} [1-9]/);
  });
});
