// The order of a consumer dead-letter requeue, on the real broker and PostgreSQL: a kit consumer whose
// handler's table is missing dead-letters a ticket's created, and holds its two cancels behind it
// (offsets in order); once the table exists, `ticket-events dead-letters requeue --reason` (the kit's
// bin, in process), which matches the created alone, produces it and the two held behind it again in the
// order they had in the partition, and the handler applies the create first. A partial requeue (`npm run
// cli -- dead-letters requeue --kind consumer --limit 1`, the service's path) takes the oldest one with
// the events held behind it, so it never sends a later event of a ticket ahead of an earlier one still dead.
import { randomUUID } from 'node:crypto';
import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Pool } from 'pg';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import {
  Ctx,
  OnTicketEvent,
  Payload,
  TicketEventContext,
  TicketEventsServer,
  type TicketCancelledV1,
  type TicketCreatedV1,
  type TicketEvent,
} from '@tickets/event-consumer';
import { main as ticketEvents } from '@tickets/event-consumer/bin/ticket-events';
import { deadLettersCommand } from '../support/dead-letters-cli';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from '../support/env';
import {
  eventually,
  kafkaFixture,
  ticketCancelled,
  ticketCreated,
  toMessage,
  uniqueName,
} from '../support/events-factory';
import { kitOptions } from '../support/kit-options';
import { readTopic } from '../support/outbox-factory';

jest.setTimeout(90_000);

const topic = uniqueName('dl-requeue-order-it');
const groupId = uniqueName('dl-requeue-order-it');
const tenantId = randomUUID();
const tables: string[] = [];
let fx: Awaited<ReturnType<typeof kafkaFixture>>;
let db: Pool;
let prisma: PrismaClient;
let app: INestMicroservice;

/** A handler whose table is missing until the test creates it (the kind of cause a requeue follows). */
@Controller()
class OrderedEffects {
  static table = '';

  @OnTicketEvent('ticket.created.v1')
  async created(@Payload() event: TicketCreatedV1, @Ctx() ctx: TicketEventContext): Promise<void> {
    await recordEffect(event, ctx);
  }

  @OnTicketEvent('ticket.cancelled.v1')
  async cancelled(@Payload() event: TicketCancelledV1, @Ctx() ctx: TicketEventContext): Promise<void> {
    const created = await ctx.tx.query(
      `SELECT 1 FROM ${OrderedEffects.table} WHERE ticket_id = $1 AND type = 'ticket.created.v1'`,
      [event.ticketId],
    );
    if (!created.rowCount) throw new Error(`ticket ${event.ticketId} cancelled before it was created`);
    await recordEffect(event, ctx);
  }
}

/** The effect, in the handler's transaction: one row per event, numbered in the order applied. */
async function recordEffect(event: TicketEvent, ctx: TicketEventContext): Promise<void> {
  await ctx.tx.query(
    `INSERT INTO ${OrderedEffects.table} (event_id, ticket_id, type, "offset") VALUES ($1, $2, $3, $4)`,
    [event.id, event.ticketId, event.type, ctx.offset],
  );
}

@Module({ controllers: [OrderedEffects] })
class OrderedEffectsModule {}

/** A new table name for the handler, not created yet: every event it gets fails and is dead-lettered. */
function missingTable(): string {
  const name = `kit_dl_order_${randomUUID().slice(0, 8)}`;
  tables.push(name);
  OrderedEffects.table = name;
  return name;
}

const createTable = (name: string) =>
  db.query(
    `CREATE TABLE ${name} (seq bigserial PRIMARY KEY, event_id uuid NOT NULL, ticket_id uuid NOT NULL, type text NOT NULL, "offset" bigint NOT NULL)`,
  );

const applied = async (name: string) =>
  (await db.query<{ event_id: string; type: string }>(`SELECT event_id, type FROM ${name} ORDER BY seq`)).rows;

const deadLetters = async (ticketId: string) =>
  (
    await db.query<{ id: string; offset: string; eventId: string; cause: string; resolution: string | null }>(
      `SELECT id::text, "offset"::text, value::jsonb->>'id' AS "eventId", cause, resolution
         FROM ticket_events.consumer_dead_letters d WHERE group_id = $1 AND key = $2 ORDER BY d."offset"`,
      [groupId, ticketId],
    )
  ).rows;

const high = async () => Number((await fx.admin.fetchTopicOffsets(topic))[0].high);

/** Each message of the topic by offset: its event id (from the value) and its headers. */
const topicByOffset = async () =>
  new Map(
    (await readTopic(TEST_KAFKA_BROKERS, topic)).map((m) => [
      m.offset,
      { id: (JSON.parse(m.value) as TicketEvent).id, headers: m.headers },
    ]),
  );

/** The handler applies all of `events`, in their order. */
async function expectAppliedInOrder(table: string, events: TicketEvent[]): Promise<void> {
  await eventually(
    () => applied(table),
    (rows) => rows.length === events.length,
    30_000,
    `the ${events.length} applied`,
  );
  expect(await applied(table)).toEqual(events.map((e) => ({ event_id: e.id, type: e.type })));
}

/** A ticket's created and two cancels, published in that order to partition 0: the created dead, the cancels held. */
async function deadLetteredTicket(): Promise<{ ticketId: string; events: TicketEvent[]; first: number }> {
  const created = ticketCreated(tenantId);
  const events: TicketEvent[] = [created, ticketCancelled(created), ticketCancelled(created)];
  const first = await high();
  await fx.producer.send({ topic, acks: -1, messages: events.map((e) => toMessage(e, 0)) });
  await eventually(
    () => deadLetters(created.ticketId),
    (rows) => rows.length === events.length,
    30_000,
    'the three events dead-lettered',
  );
  expect(
    (await deadLetters(created.ticketId)).map((r) => [Number(r.offset), r.eventId, r.cause, r.resolution]),
  ).toEqual(events.map((e, i) => [first + i, e.id, i === 0 ? 'handler_failed' : 'held', null]));
  return { ticketId: created.ticketId, events, first };
}

beforeAll(async () => {
  fx = await kafkaFixture(topic, 1);
  db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  prisma = createPrismaClient(TEST_DATABASE_URL, 2, 'dl-requeue-order-it');
  app = await NestFactory.createMicroservice(OrderedEffectsModule, {
    strategy: new TicketEventsServer(kitOptions(topic, groupId, { maxAttempts: 2, metrics: false })),
    logger: false,
  });
  await app.listen();
});

afterAll(async () => {
  await app?.close();
  await db.query('DELETE FROM ticket_events.dead_letter_actions WHERE group_id = $1', [groupId]);
  await db.query('DELETE FROM ticket_events.consumer_dead_letters WHERE group_id = $1', [groupId]);
  await db.query('DELETE FROM ticket_events.inbox_events WHERE group_id = $1', [groupId]);
  for (const t of tables) await db.query(`DROP TABLE IF EXISTS ${t}`);
  await fx?.admin.deleteGroups([groupId]).catch(() => undefined);
  await Promise.allSettled([fx?.close(), prisma?.$disconnect(), db?.end()]);
});

it('ticket-events dead-letters requeue --reason produces them again in their partition order, and the handler applies them in it', async () => {
  const table = missingTable();
  const { ticketId, events, first } = await deadLetteredTicket();
  await createTable(table);

  const out: string[] = [];
  const code = await ticketEvents(
    [
      'dead-letters',
      'requeue',
      '--group',
      groupId,
      '--reason',
      `relation "${table}" does not exist`,
      '--database-url',
      TEST_DATABASE_URL,
      '--brokers',
      TEST_KAFKA_BROKERS.join(','),
      '--by',
      'order-test',
    ],
    { out: (l) => out.push(l), err: (l) => out.push(l) },
  );
  expect(code).toBe(0);
  // The copies (offsets 3, 4, 5) carry the events of offsets 0, 1, 2 in that order.
  const to = first + events.length;
  const byOffset = await topicByOffset();
  expect(events.map((_e, i) => byOffset.get(to + i)?.id)).toEqual(events.map((_e, i) => byOffset.get(first + i)?.id));
  expect(events.map((_e, i) => byOffset.get(to + i)?.id)).toEqual(events.map((e) => e.id));
  // With the headers they were read with (a handler's dead letter stored none, so its copy went without
  // event-id and event-type).
  expect(events.map((_e, i) => byOffset.get(to + i)?.headers)).toEqual(
    events.map((_e, i) => byOffset.get(first + i)?.headers),
  );
  expect(byOffset.get(to)?.headers).toMatchObject({ 'event-id': events[0].id, 'event-type': events[0].type });
  const head = (await deadLetters(ticketId))[0].id;
  expect(out).toEqual(
    events.map(
      (e, i) =>
        `requeued: produced the stored message (event ${e.id}) to ${topic}[0]@${to + i} with key ${ticketId}; every group reads it, and one that already processed the event skips it${i === 0 ? '' : ` (held behind ${head}, an earlier event of its ticket: produced after it)`}`,
    ),
  );

  await expectAppliedInOrder(table, events);
  expect((await deadLetters(ticketId)).map((r) => r.resolution)).toEqual(['requeued', 'requeued', 'requeued']);
});

it('a requeue with --limit takes the oldest dead letters with the events held behind them (dead-letters requeue --kind consumer, the service path)', async () => {
  const table = missingTable();
  const { events, first } = await deadLetteredTicket();
  const other = await deadLetteredTicket();
  await createTable(table);
  const to = other.first + other.events.length;
  const cli = (...argv: string[]) => deadLettersCommand(prisma, 'requeue', '--kind', 'consumer', ...argv);

  // The oldest dead letter is the first ticket's created: the two cancels held behind it go with it.
  const reason = `relation "${table}" does not exist`;
  const part = await cli('--reason', reason, '--limit', '1', '--by', 'order-test', '--json');
  expect(part.code).toBe(0);
  expect(part.json().results.map((r: { outcome: string; message: string }) => [r.outcome, r.message])).toEqual(
    events.map((e, i) => ['requeued', expect.stringContaining(`(event ${e.id}) to ${topic}[0]@${to + i} `)]),
  );
  expect((await deadLetters(other.ticketId)).map((r) => r.resolution)).toEqual([null, null, null]);
  const rest = await cli('--reason', reason, '--by', 'order-test', '--json');
  expect(rest.json().results.map((r: { message: string }) => r.message)).toEqual(
    other.events.map((e, i) => expect.stringContaining(`(event ${e.id}) to ${topic}[0]@${to + 3 + i} `)),
  );

  const byOffset = await topicByOffset();
  expect([...events, ...other.events].map((_e, i) => byOffset.get(to + i)?.id)).toEqual(
    [...events, ...other.events].map((e) => e.id),
  );
  expect(first).toBeLessThan(other.first);
  await expectAppliedInOrder(table, [...events, ...other.events]);
});
