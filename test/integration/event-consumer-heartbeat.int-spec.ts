// A rebalance that begins while a handler runs: the kit's heartbeats during and after the handler are answered
// REBALANCE_IN_PROGRESS by the real broker. That is Kafka's news, not the event's failure. The per-event form's
// chunk is rolled back and read again after the rejoin; a batch handler's chunk is committed (the member owns
// the partition until it rejoins), so the handler is not run twice. Either way no retry is counted and no dead
// letter written, even with maxAttempts 1. Real broker, real PostgreSQL, two members of one group in this process.
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
  type KitLogger,
  type TicketCreatedV1,
  type TicketEvent,
  type TicketEventsOptions,
} from '@tickets/event-consumer';
import { TEST_DATABASE_URL } from '../support/env';
import { eventually, kafkaFixture, ticketCreated, toMessage, uniqueName } from '../support/events-factory';
import { deleteKitRows, EFFECTS_DDL, recordEffects } from '../support/kit-example';
import { capturingLogger, kitOptions } from '../support/kit-options';

jest.setTimeout(120_000);

/** The first run of the handler for `eventId` waits, inside the chunk's transaction, until released. */
const gate = {
  eventId: undefined as string | undefined,
  entered: undefined as (() => void) | undefined,
  release: Promise.resolve(),
};

/** Runs of a handler per event id. */
const runs = new Map<string, number>();

@Controller()
class Gated {
  @OnTicketEvent('ticket.created.v1')
  async created(@Payload() event: TicketCreatedV1, @Ctx() ctx: TicketEventContext): Promise<void> {
    runs.set(event.id, (runs.get(event.id) ?? 0) + 1);
    if (event.id === gate.eventId) {
      gate.eventId = undefined;
      gate.entered?.();
      await gate.release;
    }
    await recordEffects(ctx, [event]);
  }
}

@Module({ controllers: [Gated] })
class GatedModule {}

@Controller()
class GatedBatch {
  @OnTicketEventBatch()
  async created(@Payload() events: TicketEvent[], @Ctx() ctx: TicketEventBatchContext): Promise<void> {
    for (const e of events) runs.set(e.id, (runs.get(e.id) ?? 0) + 1);
    if (events.some((e) => e.id === gate.eventId)) {
      gate.eventId = undefined;
      gate.entered?.();
      await gate.release;
    }
    await recordEffects(ctx, events);
  }
}

@Module({ controllers: [GatedBatch] })
class GatedBatchModule {}

describe.each([
  { form: 'per event', module: GatedModule, rolledBack: true },
  { form: 'batch', module: GatedBatchModule, rolledBack: false },
])('event consumer kit: a rebalance under a running handler ($form)', ({ form, module, rolledBack }) => {
  const topic = uniqueName(`kit-heartbeat-${form.replace(' ', '-')}`);
  const groupId = uniqueName('kit-heartbeat-group');
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  let db: Pool;
  const members: { app: INestMicroservice; server: TicketEventsServer }[] = [];

  const start = async (options: TicketEventsOptions) => {
    const server = new TicketEventsServer(options);
    const app = await NestFactory.createMicroservice(module, { strategy: server, logger: false });
    await app.listen();
    members.push({ app, server });
    return server;
  };
  const group = async () => (await fx.admin.describeGroups([groupId])).groups[0];

  beforeAll(async () => {
    db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await db.query(EFFECTS_DDL);
    fx = await kafkaFixture(topic, 1);
  });

  afterAll(async () => {
    for (const m of members) await m.app.close();
    await deleteKitRows(db, groupId);
    await db.end();
    await fx?.close();
  });

  it(`${rolledBack ? 'rolls the chunk back and handles it again' : 'commits the chunk, then rejoins'}: no retry, no dead letter, one effect`, async () => {
    const lines: string[] = [];
    // Every heartbeat call is sent (kafkajs skips one that is not yet due), the one after the handler included.
    const options = (logger?: KitLogger) =>
      kitOptions(topic, groupId, { maxAttempts: 1, metrics: false, consumer: { heartbeatInterval: 1 }, logger });
    const first = await start(options(capturingLogger(lines)));
    await eventually(group, (g) => g.state === 'Stable' && g.members.length === 1, 60_000, 'the first member');

    const event = ticketCreated(randomUUID());
    let release!: () => void;
    gate.release = new Promise<void>((r) => (release = r));
    const entered = new Promise<void>((r) => (gate.entered = r));
    gate.eventId = event.id;
    await fx.producer.send({ topic, messages: [toMessage(event, 0)] });
    await entered;

    // A second member joins while the handler holds the chunk's transaction open.
    const joining = start(options());
    await eventually(group, (g) => g.state === 'PreparingRebalance', 60_000, 'the rebalance to begin');
    // Long enough for the heartbeats offered while the handler runs (every 500 ms) to hear of the rebalance.
    await new Promise((r) => setTimeout(r, 1_500));
    release();
    await joining;

    await eventually(
      async () => (await fx.admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions[0].offset,
      (o) => o === '1',
      60_000,
      'offset 1 committed',
    );
    const effects = await db.query('SELECT event_id FROM kit_test_effects WHERE group_id = $1', [groupId]);
    expect(effects.rows).toEqual([{ event_id: event.id }]);
    const dead = await db.query('SELECT reason FROM ticket_events.consumer_dead_letters WHERE group_id = $1', [
      groupId,
    ]);
    expect(dead.rows).toEqual([]);
    const heartbeats = lines.filter((l) => l.includes('Kafka heartbeat failed during a chunk'));
    if (rolledBack) {
      expect(heartbeats.length).toBeGreaterThan(0);
      expect(heartbeats.every((l) => l.includes('The group is rebalancing'))).toBe(true);
      expect(runs.get(event.id)).toBe(2);
    } else {
      expect(heartbeats).toEqual([]);
      expect(runs.get(event.id)).toBe(1);
    }
    expect(lines.filter((l) => l.includes('handler failed'))).toEqual([]);
    expect((await first.metrics.retries.get()).values.reduce((s, v) => s + v.value, 0)).toBe(0);
  });
});
