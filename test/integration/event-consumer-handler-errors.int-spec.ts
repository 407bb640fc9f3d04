// How the kit takes a handler's failures, on the real broker and the real PostgreSQL: a handler that
// catches its own SQL error (PostgreSQL then answers COMMIT with ROLLBACK) fails like one that throws, its
// dead letter naming that error; with maxAttempts 1 only the failing event of a chunk is dead-lettered, with
// its own error; a reason cut at 2000 inside a surrogate pair still stores; an upper-case event id (the
// contracts accept one) is handled.
import { randomUUID } from 'node:crypto';
import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Pool } from 'pg';
import {
  Ctx,
  OnTicketEvent,
  Payload,
  TicketEventContext,
  TicketEventsServer,
  type TicketCreatedV1,
  type TicketEventsOptions,
} from '@tickets/event-consumer';
import { TEST_DATABASE_URL } from '../support/env';
import { eventually, kafkaFixture, ticketCreated, toMessage, uniqueName } from '../support/events-factory';
import { deleteKitRows, EFFECTS_DDL } from '../support/kit-example';
import { kitOptions } from '../support/kit-options';

jest.setTimeout(90_000);

/** Titles that make the handler below misbehave. */
const SWALLOW = 'swallows a failed statement';
const POISON = 'always throws';
const LONG = 'throws a long error';

/** The error of a LONG ticket tried `tries` times: the dead letter's 2000-character cut falls inside a surrogate pair. */
function longError(event: TicketCreatedV1, tries: number): string {
  const prefix = `handler failed ${tries} times (${event.type} ${event.id}): Error: `;
  return `${prefix.length % 2 === 0 ? 'x' : ''}${'\ud83d\udd25'.repeat(1100)}`;
}

@Controller()
class Misbehaving {
  static readonly attempts = new Map<string, number>();
  /** Tries an event of a chunk of several gets before its dead letter: the chunk's, then at least one alone. */
  static inChunk = 3;

  @OnTicketEvent('ticket.created.v1')
  async created(@Payload() event: TicketCreatedV1, @Ctx() ctx: TicketEventContext): Promise<void> {
    Misbehaving.attempts.set(event.id, ctx.attempt);
    if (event.data.title === POISON) throw new Error('this handler cannot take the ticket');
    if (event.data.title === LONG) throw new Error(longError(event, Misbehaving.inChunk));
    await ctx.tx.query(
      'INSERT INTO kit_test_effects (group_id, event_id, ticket_id, partition) VALUES ($1, $2, $3, $4)',
      [ctx.groupId, event.id, event.ticketId, ctx.partition],
    );
    // The mistake: the error is swallowed, but PostgreSQL has aborted the transaction.
    if (event.data.title === SWALLOW) await ctx.tx.query('SELECT 1 / 0').catch(() => undefined);
  }
}

@Module({ controllers: [Misbehaving] })
class MisbehavingModule {}

describe.each([
  { maxAttempts: 3, label: 'maxAttempts 3' },
  { maxAttempts: 1, label: 'maxAttempts 1' },
])('event consumer kit: failing handlers ($label)', ({ maxAttempts }) => {
  const inChunk = Math.max(2, maxAttempts);
  const topic = uniqueName('kit-errors');
  const groupId = uniqueName('kit-errors-group');
  const tenantId = randomUUID();
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  let db: Pool;
  let app: INestMicroservice | undefined;
  let server: TicketEventsServer;

  const start = async (options: TicketEventsOptions) => {
    Misbehaving.inChunk = inChunk;
    server = new TicketEventsServer(options);
    app = await NestFactory.createMicroservice(MisbehavingModule, { strategy: server, logger: false });
    await app.listen();
  };
  // -1 before the group's first commit.
  const committed = async () =>
    Math.max(0, Number((await fx.admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions[0].offset));
  const effects = async (ids: string[]) =>
    (
      await db.query<{ event_id: string }>(
        'SELECT event_id::text FROM kit_test_effects WHERE group_id = $1 AND event_id = ANY($2::uuid[]) ORDER BY at',
        [groupId, ids],
      )
    ).rows.map((r) => r.event_id);
  const inboxRows = async (ids: string[]) =>
    (
      await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM ticket_events.inbox_events WHERE group_id = $1 AND event_id = ANY($2::uuid[])',
        [groupId, ids],
      )
    ).rows[0].n;
  const deadLetters = async () =>
    (
      await db.query<{ offset: number; reason: string }>(
        'SELECT "offset"::int AS offset, reason FROM ticket_events.consumer_dead_letters WHERE group_id = $1 ORDER BY "offset"',
        [groupId],
      )
    ).rows;
  const processed = async () => (await server.metrics.processed.get()).values.reduce((s, v) => s + v.value, 0);

  beforeAll(async () => {
    db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await db.query(EFFECTS_DDL);
    fx = await kafkaFixture(topic, 1);
    await start(kitOptions(topic, groupId, { maxAttempts }));
  });

  afterAll(async () => {
    await app?.close();
    await deleteKitRows(db, groupId);
    await db.end();
    await fx?.close();
  });

  it('does not lose an event whose handler swallowed a statement error: retried, then dead-lettered saying why', async () => {
    const ok1 = ticketCreated(tenantId);
    const swallowed = ticketCreated(tenantId, { title: SWALLOW });
    const ok2 = ticketCreated(tenantId);
    const before = await committed();
    // One send: one record batch, read in one fetch, so one chunk (the first attempt is the chunk's transaction).
    await fx.producer.send({ topic, messages: [ok1, swallowed, ok2].map((e) => toMessage(e, 0)) });
    await eventually(committed, (o) => o === before + 3, 30_000, 'offsets past the chunk committed');

    expect((await deadLetters()).filter((d) => d.offset >= before)).toEqual([
      {
        offset: before + 1,
        reason: expect.stringMatching(
          new RegExp(
            `^handler failed ${inChunk} times \\(ticket.created.v1 ${swallowed.id}\\): TransactionAborted: PostgreSQL rolled the transaction back at COMMIT: a statement in it failed \\(22012 division by zero\\) and the handler caught the error, .*SAVEPOINT`,
          ),
        ),
      },
    ]);
    expect(Misbehaving.attempts.get(swallowed.id)).toBe(inChunk);
    // Nothing of it counts as applied: neither its effect nor its inbox row (a requeue or replay applies it).
    expect(await effects([swallowed.id])).toEqual([]);
    expect(await inboxRows([swallowed.id])).toBe(0);
    expect((await effects([ok1.id, ok2.id])).sort()).toEqual([ok1.id, ok2.id].sort());
    expect(await processed()).toBe(2);
  });

  it("dead-letters only the failing event of a chunk, with the event's own error", async () => {
    const before = await committed();
    const ok1 = ticketCreated(tenantId);
    const poison = ticketCreated(tenantId, { title: POISON });
    const ok2 = ticketCreated(tenantId);
    await fx.producer.send({ topic, messages: [ok1, poison, ok2].map((e) => toMessage(e, 0)) });
    await eventually(committed, (o) => o === before + 3, 30_000, 'offsets past the chunk committed');
    // Then a chunk of the failing event alone.
    const alone = ticketCreated(tenantId, { title: POISON });
    await fx.producer.send({ topic, messages: [toMessage(alone, 0)] });
    await eventually(committed, (o) => o === before + 4, 30_000, 'offset past the lone event committed');

    const own = (e: TicketCreatedV1, tries: number) =>
      `handler failed ${tries} times (ticket.created.v1 ${e.id}): Error: this handler cannot take the ticket`;
    // The reason counts every try: in a chunk of several, the chunk's and at least one alone.
    expect((await deadLetters()).filter((d) => d.offset >= before)).toEqual([
      { offset: before + 1, reason: own(poison, inChunk) },
      { offset: before + 3, reason: own(alone, maxAttempts) },
    ]);
    expect((await effects([ok1.id, ok2.id])).sort()).toEqual([ok1.id, ok2.id].sort());
  });

  it('stores a dead letter whose reason is cut inside a surrogate pair, and moves on', async () => {
    const before = await committed();
    const long = ticketCreated(tenantId, { title: LONG });
    const after = ticketCreated(tenantId);
    await fx.producer.send({ topic, messages: [long, after].map((e) => toMessage(e, 0)) });
    await eventually(committed, (o) => o === before + 2, 30_000, 'offsets past the long error committed');

    const [dead] = (await deadLetters()).filter((d) => d.offset === before);
    const full = `handler failed ${inChunk} times (ticket.created.v1 ${long.id}): Error: ${longError(long, inChunk)}`;
    expect(dead.reason).toBe(full.slice(0, 1999));
    expect(await effects([after.id])).toEqual([after.id]);
  });

  it('handles an event whose id is in upper case (the contracts accept one), once with its lower-case copy', async () => {
    const before = await committed();
    const lower = ticketCreated(tenantId);
    const upper = { ...lower, id: lower.id.toUpperCase() };
    const later = { ...ticketCreated(tenantId), id: randomUUID().toUpperCase() };
    await fx.producer.send({ topic, messages: [upper, lower].map((e) => toMessage(e, 0)) });
    await eventually(committed, (o) => o === before + 2, 30_000, 'offsets past the upper-case event committed');
    await fx.producer.send({ topic, messages: [toMessage(later, 0), toMessage(lower, 0)] });
    await eventually(committed, (o) => o === before + 4, 30_000, 'offsets past the redelivery committed');

    expect((await effects([lower.id, later.id])).sort()).toEqual([lower.id, later.id.toLowerCase()].sort());
    const inbox = await db.query<{ duplicates: number }>(
      'SELECT duplicates FROM ticket_events.inbox_events WHERE group_id = $1 AND event_id = $2',
      [groupId, lower.id],
    );
    expect(inbox.rows).toEqual([{ duplicates: 2 }]);
  });
});
