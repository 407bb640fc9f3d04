// A handler slower than the group's session timeout. The kit offers kafkajs a heartbeat every half second while
// a handler runs, so the member keeps its partition and the event is handled once. Without that, the
// coordinator evicted the member mid-handler, the heartbeat after the handler failed, the chunk was rolled back
// and read again after the rejoin, and a handler that always took that long never got past its event: no
// attempt counted, no dead letter, the partition stalled for good. Real broker, real PostgreSQL.
import { randomUUID } from 'node:crypto';
import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Pool } from 'pg';
import {
  Ctx,
  OnTicketEvent,
  OnTicketEventBatch,
  Payload,
  TicketEventBatchContext,
  TicketEventContext,
  TicketEventsServer,
  type TicketCreatedV1,
  type TicketEvent,
} from '@tickets/event-consumer';
import { TEST_DATABASE_URL } from '../support/env';
import { eventually, kafkaFixture, ticketCreated, toMessage, uniqueName } from '../support/events-factory';
import { deleteKitRows, EFFECTS_DDL, recordEffects } from '../support/kit-example';
import { capturingLogger, kitOptions } from '../support/kit-options';

jest.setTimeout(120_000);

/** The broker's smallest session timeout (group.min.session.timeout.ms); the handler takes half as long again. */
const SESSION_MS = 6_000;
const HANDLER_MS = 9_000;
const calls: string[] = [];
/** The event whose handler always takes HANDLER_MS, however often it runs. */
let slowId: string | undefined;

@Controller()
class Slow {
  @OnTicketEvent('ticket.created.v1')
  async created(@Payload() event: TicketCreatedV1, @Ctx() ctx: TicketEventContext): Promise<void> {
    calls.push(event.id);
    if (event.id === slowId) await new Promise((r) => setTimeout(r, HANDLER_MS));
    await recordEffects(ctx, [event]);
  }
}

@Module({ controllers: [Slow] })
class SlowModule {}

/** The batch form: the chunk's events in one call, slow when the chunk holds the slow event. */
@Controller()
class SlowBatch {
  @OnTicketEventBatch()
  async created(@Payload() events: TicketEvent[], @Ctx() ctx: TicketEventBatchContext): Promise<void> {
    calls.push(...events.map((e) => e.id));
    if (events.some((e) => e.id === slowId)) await new Promise((r) => setTimeout(r, HANDLER_MS));
    await recordEffects(ctx, events);
  }
}

@Module({ controllers: [SlowBatch] })
class SlowBatchModule {}

describe.each([
  ['per event (@OnTicketEvent)', SlowModule],
  ['batch (@OnTicketEventBatch)', SlowBatchModule],
])('event consumer kit: a handler slower than the session timeout, %s', (_form, module) => {
  const topic = uniqueName('kit-slow');
  const groupId = uniqueName('kit-slow-group');
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  let db: Pool;
  let app: INestMicroservice | undefined;
  const lines: string[] = [];

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

  it('keeps its partition: the event is handled once and the next one follows, no rejoin, no dead letter', async () => {
    const server = new TicketEventsServer(
      kitOptions(topic, groupId, {
        metrics: false,
        logger: capturingLogger(lines),
        consumer: { sessionTimeout: SESSION_MS, heartbeatInterval: 1_000 },
      }),
    );
    app = await NestFactory.createMicroservice(module, { strategy: server, logger: false });
    await app.listen();
    const group = async () => (await fx.admin.describeGroups([groupId])).groups[0];
    const before = await eventually(group, (g) => g.state === 'Stable' && g.members.length === 1, 60_000, 'a member');

    const slow = ticketCreated(randomUUID());
    slowId = slow.id;
    const next = ticketCreated(randomUUID());
    await fx.producer.send({ topic, messages: [toMessage(slow, 0), toMessage(next, 0)] });

    await eventually(
      async () => (await fx.admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions[0].offset,
      (o) => o === '2',
      60_000,
      'offset 2 committed',
    );
    const effects = await db.query('SELECT event_id FROM kit_test_effects WHERE group_id = $1 ORDER BY event_id', [
      groupId,
    ]);
    expect(effects.rows.map((r: { event_id: string }) => r.event_id).sort()).toEqual([slow.id, next.id].sort());
    // The slow handler ran once: its chunk was never rolled back and read again (which, for a handler that always
    // takes this long, went on for ever).
    expect(calls.filter((id) => id === slow.id)).toHaveLength(1);
    expect((await group()).members.map((m) => m.memberId)).toEqual(before.members.map((m) => m.memberId));
    expect(lines.filter((l) => /heartbeat failed|handler failed|dead-lettered/.test(l))).toEqual([]);
    const dead = await db.query('SELECT 1 FROM ticket_events.consumer_dead_letters WHERE group_id = $1', [groupId]);
    expect(dead.rowCount).toBe(0);
  });
});
