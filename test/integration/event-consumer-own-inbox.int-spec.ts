// The kit's batch form with inbox 'handler': the shape the notifier needs (one statement per chunk that
// writes the inbox, the effect for new ids only and the dead letters; offsets committed after it).
import { randomUUID } from 'node:crypto';
import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Pool } from 'pg';
import {
  Ctx,
  OnTicketEventBatch,
  Payload,
  TicketEventBatchContext,
  TicketEventsServer,
  type OwnInboxResult,
  type TicketEvent,
} from '@tickets/event-consumer';
import { TEST_DATABASE_URL } from '../support/env';
import { eventually, kafkaFixture, ticketCreated, toMessage, uniqueName } from '../support/events-factory';
import { deleteKitRows, EFFECTS_DDL } from '../support/kit-example';
import { kitOptions } from '../support/kit-options';

jest.setTimeout(90_000);

const seenValues: string[] = [];

@Controller()
class OneStatement {
  @OnTicketEventBatch({ inbox: 'handler' })
  async record(@Payload() events: TicketEvent[], @Ctx() ctx: TicketEventBatchContext): Promise<OwnInboxResult> {
    seenValues.push(...ctx.values.map((v) => v.toString('utf8')));
    const ids = [...new Set(events.map((e) => e.id))];
    const tickets = ids.map((id) => events.find((e) => e.id === id)!.ticketId);
    const { rows } = await ctx.tx.query<{ n: number }>(
      `WITH ins AS (
         INSERT INTO ticket_events.inbox_events (group_id, event_id, event_type, ticket_id, topic, partition, "offset")
         SELECT $1, x.id, 'ticket.created.v1', x.t, $2, $3, 0 FROM unnest($4::uuid[], $5::uuid[]) AS x(id, t)
         ON CONFLICT (event_id, group_id) DO NOTHING RETURNING event_id, ticket_id),
       dl AS (
         INSERT INTO ticket_events.consumer_dead_letters (group_id, topic, partition, "offset", reason)
         SELECT $1, $2, $3, x.o, x.r FROM unnest($6::int8[], $7::text[]) AS x(o, r)),
       eff AS (INSERT INTO kit_test_effects (group_id, event_id, ticket_id, partition) SELECT $1, event_id, ticket_id, $3 FROM ins)
       SELECT count(*)::int AS n FROM ins`,
      [
        ctx.groupId,
        ctx.topic,
        ctx.partition,
        ids,
        tickets,
        ctx.invalid.map((m) => m.offset),
        ctx.invalid.map((m) => m.reason),
      ],
    );
    return { processed: rows[0].n, duplicates: events.length - rows[0].n };
  }
}

@Module({ controllers: [OneStatement] })
class OneStatementModule {}

describe('event consumer kit: a batch handler that owns the inbox (one statement per chunk)', () => {
  const topic = uniqueName('kit-own');
  const groupId = uniqueName('kit-own-group');
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  let db: Pool;
  let app: INestMicroservice;
  let server: TicketEventsServer;

  beforeAll(async () => {
    db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await db.query(EFFECTS_DDL);
    fx = await kafkaFixture(topic, 1);
  });

  afterAll(async () => {
    await app?.close();
    await deleteKitRows(db, groupId);
    await db.end();
    await fx?.close();
  });

  it('passes every valid event with its bytes and the invalid messages, and commits after the statement', async () => {
    const e = ticketCreated(randomUUID());
    const other = ticketCreated(randomUUID());
    await fx.producer.send({
      topic,
      messages: [toMessage(e, 0), { value: '{"broken":', partition: 0 }, toMessage(e, 0), toMessage(other, 0)],
    });
    server = new TicketEventsServer(kitOptions(topic, groupId));
    app = await NestFactory.createMicroservice(OneStatementModule, { strategy: server, logger: false });
    await app.listen();
    await eventually(
      async () => (await fx.admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions[0].offset,
      (o) => o === '4',
      30_000,
      'offset 4',
    );

    const effects = await db.query('SELECT event_id FROM kit_test_effects WHERE group_id = $1 ORDER BY event_id', [
      groupId,
    ]);
    expect(effects.rows.map((r) => r.event_id).sort()).toEqual([e.id, other.id].sort());
    const dead = await db.query(
      'SELECT "offset"::int AS o, reason FROM ticket_events.consumer_dead_letters WHERE group_id = $1',
      [groupId],
    );
    expect(dead.rows).toEqual([{ o: 1, reason: expect.stringMatching(/^not JSON/) }]);
    // The copy of `e` reached the handler too (it dedups), with the bytes exactly as published.
    expect(seenValues).toEqual([JSON.stringify(e), JSON.stringify(e), JSON.stringify(other)]);
    const count = async (name: 'processed' | 'duplicates') =>
      (await server.metrics[name].get()).values.reduce((s, v) => s + v.value, 0);
    expect(await count('processed')).toBe(2);
    expect(await count('duplicates')).toBe(1);
  });
});
