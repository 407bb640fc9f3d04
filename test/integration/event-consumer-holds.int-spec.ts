// A ticket's later events wait behind its dead letter, on the real broker and PostgreSQL: when a handler
// fails every attempt on a ticket's event, the ticket's later events are dead-lettered as held (not
// handled), other tickets go on, and a requeue of the dead letter produces it and the held events again
// in their order, in one transaction whose locks the consumer's claim waits for, so the copies are
// applied in order and never held again. An event read between a requeue and its copies waits for the
// copies. A held event waits for its head; an invalid message holds nothing.
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
  type TicketCancelledV1,
  type TicketCreatedV1,
  type TicketEvent,
} from '@tickets/event-consumer';
import {
  ConsumerDeadLetters,
  deadLetterFate,
  followReport,
  kafkaRepublisher,
  type MessageRepublisher,
} from '@tickets/event-consumer/admin';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from '../support/env';
import {
  eventually,
  kafkaFixture,
  ticketCancelled,
  ticketCreated,
  toMessage,
  uniqueName,
} from '../support/events-factory';
import { deleteKitRows } from '../support/kit-example';
import { kitMetric, kitOptions } from '../support/kit-options';

jest.setTimeout(90_000);

const topic = uniqueName('kit-holds-it');
const groupId = uniqueName('kit-holds-it');
const tenantId = randomUUID();
const table = `kit_holds_${randomUUID().slice(0, 8)}`;
let fx: Awaited<ReturnType<typeof kafkaFixture>>;
let db: Pool;
let app: INestMicroservice;
let server: TicketEventsServer;

/** Applies each event as a numbered row; throws for the tickets in `failing`. */
@Controller()
class Effects {
  static readonly failing = new Set<string>();
  static readonly tries = new Map<string, number>();

  @OnTicketEvent('ticket.created.v1')
  async created(@Payload() event: TicketCreatedV1, @Ctx() ctx: TicketEventContext): Promise<void> {
    await apply(event, ctx);
  }

  @OnTicketEvent('ticket.cancelled.v1')
  async cancelled(@Payload() event: TicketCancelledV1, @Ctx() ctx: TicketEventContext): Promise<void> {
    await apply(event, ctx);
  }
}

async function apply(event: TicketEvent, ctx: TicketEventContext): Promise<void> {
  Effects.tries.set(event.id, (Effects.tries.get(event.id) ?? 0) + 1);
  if (Effects.failing.has(event.ticketId)) throw new Error(`ticket ${event.ticketId} cannot be taken yet`);
  await ctx.tx.query(`INSERT INTO ${table} (event_id, ticket_id, type) VALUES ($1, $2, $3)`, [
    event.id,
    event.ticketId,
    event.type,
  ]);
}

@Module({ controllers: [Effects] })
class EffectsModule {}

const applied = async (ticketId: string) =>
  (
    await db.query<{ event_id: string }>(`SELECT event_id FROM ${table} WHERE ticket_id = $1 ORDER BY seq`, [ticketId])
  ).rows.map((r) => r.event_id);

const deadLetters = async (ticketId: string) =>
  (
    await db.query<{ id: string; eventId: string; cause: string; heldBy: string | null; resolution: string | null }>(
      `SELECT id::text, CASE WHEN cause <> 'invalid' THEN value::jsonb->>'id' END AS "eventId", cause, held_by::text AS "heldBy", resolution
         FROM ticket_events.consumer_dead_letters WHERE group_id = $1 AND key = $2 ORDER BY "offset"`,
      [groupId, ticketId],
    )
  ).rows;

const send = (events: TicketEvent[]) =>
  fx.producer.send({ topic, acks: -1, messages: events.map((e) => toMessage(e, 0)) });

beforeAll(async () => {
  fx = await kafkaFixture(topic, 1);
  db = new Pool({ connectionString: TEST_DATABASE_URL, max: 3 });
  await db.query(
    `CREATE TABLE ${table} (seq bigserial PRIMARY KEY, event_id uuid NOT NULL UNIQUE, ticket_id uuid NOT NULL, type text NOT NULL)`,
  );
  server = new TicketEventsServer(kitOptions(topic, groupId, { maxAttempts: 2 }));
  app = await NestFactory.createMicroservice(EffectsModule, { strategy: server, logger: false });
  await app.listen();
});

afterAll(async () => {
  await app?.close();
  await deleteKitRows(db, groupId);
  await db.query(`DROP TABLE IF EXISTS ${table}`);
  await fx?.admin.deleteGroups([groupId]).catch(() => undefined);
  await Promise.allSettled([fx?.close(), db?.end()]);
});

it('holds a ticket behind its dead letter while other tickets go on, and a requeue brings the held events back after it, in order', async () => {
  const a = ticketCreated(tenantId);
  const b = ticketCreated(tenantId);
  const aCancels = [ticketCancelled(a), ticketCancelled(a)];
  Effects.failing.add(a.ticketId);
  // One fetch: a's create fails every attempt; a's first cancel comes after it, b's events between.
  await send([a, b, aCancels[0], ticketCancelled(b)]);
  await eventually(
    () => applied(b.ticketId),
    (rows) => rows.length === 2,
    30_000,
    "b's two events applied",
  );
  const [head, held] = await eventually(
    () => deadLetters(a.ticketId),
    (rows) => rows.length === 2,
    30_000,
    "a's create dead and its cancel held",
  );
  expect([head.eventId, head.cause, head.heldBy]).toEqual([a.id, 'handler_failed', null]);
  expect([held.eventId, held.cause, held.heldBy]).toEqual([aCancels[0].id, 'held', head.id]);
  // The held cancel never reached the handler: its ticket's create is not applied.
  expect(Effects.tries.get(aCancels[0].id)).toBeUndefined();

  // A later event of the ticket, in a fetch of its own, waits behind the same dead letter.
  await send([aCancels[1]]);
  const rows = await eventually(
    () => deadLetters(a.ticketId),
    (r) => r.length === 3,
    30_000,
    "a's second cancel held",
  );
  expect(rows.map((r) => [r.eventId, r.cause, r.heldBy])).toEqual([
    [a.id, 'handler_failed', null],
    [aCancels[0].id, 'held', head.id],
    [aCancels[1].id, 'held', head.id],
  ]);
  expect(Effects.tries.get(aCancels[1].id)).toBeUndefined();
  expect(await kitMetric(server, 'event_consumer_dead_lettered_total', 'cause="held"')).toBe(2);
  expect(await applied(a.ticketId)).toEqual([]);

  // The cause fixed, the dead letter is requeued: its copy and the held events' copies are produced in one
  // transaction. After the first send the requeue waits until the consumer's claim waits on its locks:
  // the copy of the create is read while the cancels are still dead, and must not be held behind them.
  Effects.failing.delete(a.ticketId);
  const kafka = kafkaRepublisher(TEST_KAFKA_BROKERS, 'kit-holds-it');
  let sends = 0;
  const pausing: MessageRepublisher = {
    async send(m) {
      const at = await kafka.send(m);
      if (++sends === 1) await claimWaitsOnLock();
      return at;
    },
    close: () => kafka.close(),
  };
  const dl = new ConsumerDeadLetters({ databaseUrl: TEST_DATABASE_URL, republisher: pausing });
  try {
    const results = await dl.requeue({
      filter: { id: head.id, limit: 1 },
      actor: { by: 'holds-test', note: null },
      dryRun: false,
    });
    expect(results.map((r) => [r.id, r.outcome])).toEqual(rows.map((r) => [r.id, 'requeued']));
    expect(results[1].message).toContain(`(held behind ${head.id}, an earlier event of its ticket: produced after it)`);
  } finally {
    await pausing.close();
    await dl.close();
  }

  await eventually(
    () => applied(a.ticketId),
    (r) => r.length === 3,
    30_000,
    "a's three events applied",
  );
  expect(await applied(a.ticketId)).toEqual([a.id, aCancels[0].id, aCancels[1].id]);
  expect((await deadLetters(a.ticketId)).map((r) => r.resolution)).toEqual(['requeued', 'requeued', 'requeued']);
});

it('an event of the ticket read between a requeue and its copies waits for the copies, then is requeued after them', async () => {
  const f = ticketCreated(tenantId);
  const cancels = [ticketCancelled(f), ticketCancelled(f)];
  const [head, held] = await deadWithItsCancelHeld(f, cancels[0]);
  const writing = writingBeforeFirstCopy(cancels[1]);
  const dl = new ConsumerDeadLetters({ databaseUrl: TEST_DATABASE_URL, republisher: writing });
  const actor = { by: 'holds-test', note: null };
  try {
    const results = await dl.requeue({ filter: { id: head.id, limit: 1 }, actor, dryRun: false });
    expect(results.map((r) => [r.id, r.outcome])).toEqual([
      [head.id, 'requeued'],
      [held.id, 'requeued'],
    ]);
    await eventually(
      () => applied(f.ticketId),
      (r) => r.length === 2,
      30_000,
      "the copies of f's create and first cancel applied",
    );
    // The second cancel was read first, and waited behind the requeued create instead of going ahead of it.
    const rows = await deadLetters(f.ticketId);
    expect(rows.map((r) => [r.eventId, r.cause, r.heldBy, r.resolution])).toEqual([
      [f.id, 'handler_failed', null, 'requeued'],
      [cancels[0].id, 'held', head.id, 'requeued'],
      [cancels[1].id, 'held', head.id, null],
    ]);
    expect(Effects.tries.get(cancels[1].id)).toBeUndefined();
    const [detail] = await dl.list({ id: rows[2].id, limit: 1 });
    expect(detail.reason).toContain(`requeued and not yet handled again`);
    expect(detail.reason).toContain(`(ticket-events dead-letters requeue --group ${groupId} --ticket ${f.ticketId};`);

    // `show` says where each one is now: the create's copy handled, the cancel still held behind it and free
    // to go (its requeue's dry run); the held one dead, its own requeue the next step.
    const shown = await dl.show(head.id);
    expect(shown).toMatchObject({
      copy: { id: head.id, state: 'handled', eventId: f.id },
      heldBehind: { count: 1, first: rows[2].id },
      next: { id: rows[2].id, dryRun: [{ id: rows[2].id, outcome: 'would-requeue' }] },
    });
    expect(deadLetterFate(shown!, { requeue: (id, g) => `requeue ${g} ${id}`, list: () => 'list' })).toEqual([
      `copy: handled by group ${groupId}`,
      `held behind it: 1 event(s) of ticket ${f.ticketId}, still dead, the first ${rows[2].id}`,
      `next: requeue ${groupId} ${rows[2].id} (would produce 1 message(s), in their order)`,
    ]);
    const heldShown = await dl.show(rows[2].id);
    expect(heldShown).toMatchObject({ next: { id: rows[2].id, dryRun: [{ outcome: 'would-requeue' }] } });
    expect(heldShown?.copy).toBeUndefined();
    expect(heldShown?.heldBehind).toBeUndefined();
    // A dry run only: nothing was produced or resolved.
    expect((await deadLetters(f.ticketId)).map((r) => r.resolution)).toEqual(['requeued', 'requeued', null]);

    // The copies handled, a requeue of the ticket brings it back last.
    const again = await dl.requeue({ filter: { ticket: f.ticketId, limit: 10 }, actor, dryRun: false });
    expect(again.map((r) => [r.id, r.outcome])).toEqual([[rows[2].id, 'requeued']]);
  } finally {
    await writing.close();
    await dl.close();
  }
  await eventually(
    () => applied(f.ticketId),
    (r) => r.length === 3,
    30_000,
    "f's three events applied",
  );
  expect(await applied(f.ticketId)).toEqual([f.id, cancels[0].id, cancels[1].id]);
});

it("follow waits until the group has handled a requeue's copies, then requeues the events held behind them, after them", async () => {
  const g = ticketCreated(tenantId);
  const cancels = [ticketCancelled(g), ticketCancelled(g)];
  // Another ticket with a dead create and a held cancel: not followed, so left dead.
  const other = ticketCreated(tenantId);
  const otherRows = await deadWithItsCancelHeld(other, ticketCancelled(other));
  const [head, held] = await deadWithItsCancelHeld(g, cancels[0]);
  const writing = writingBeforeFirstCopy(cancels[1]);
  const dl = new ConsumerDeadLetters({ databaseUrl: TEST_DATABASE_URL, republisher: writing });
  const actor = { by: 'holds-test', note: 'follow' };
  const progress: string[] = [];
  try {
    const results = await dl.requeue({ filter: { id: head.id, limit: 1 }, actor, dryRun: false });
    expect(results.map((r) => [r.id, r.outcome])).toEqual([
      [head.id, 'requeued'],
      [held.id, 'requeued'],
    ]);
    const followed = await dl.follow(results, {
      timeoutMs: 60_000,
      pollMs: 100,
      actor,
      progress: (l) => progress.push(l),
    });
    const third = (await deadLetters(g.ticketId))[2];
    expect([third.eventId, third.cause, third.heldBy]).toEqual([cancels[1].id, 'held', head.id]);
    expect(followed.outcome).toBe('handled');
    expect(followed.requeued.map((r) => [r.id, r.outcome])).toEqual([[third.id, 'requeued']]);
    expect(followed.copies.map((c) => [c.id, c.eventId, c.state])).toEqual([
      [head.id, g.id, 'handled'],
      [held.id, cancels[0].id, 'handled'],
      [third.id, cancels[1].id, 'handled'],
    ]);
    expect(progress.at(-1)).toMatch(
      /^follow: 3 of 3 copies handled by the group, 0 dead-lettered again, 0 not read yet \(\d+ s\)$/,
    );
    expect(progress).toContainEqual(expect.stringMatching(new RegExp(`^requeued: .*event ${cancels[1].id}`)));
  } finally {
    await writing.close();
    await dl.close();
  }
  // follow returned when the group had handled the third copy: no waiting here.
  expect(await applied(g.ticketId)).toEqual([g.id, cancels[0].id, cancels[1].id]);
  expect((await deadLetters(g.ticketId)).map((r) => r.resolution)).toEqual(['requeued', 'requeued', 'requeued']);
  expect(await deadLetters(other.ticketId)).toEqual(otherRows);
});

it('follow names the dead letter of a copy that failed again and leaves what waits behind it dead; a requeue of that one, as the advice says, brings the ticket back in order', async () => {
  const h = ticketCreated(tenantId);
  const cancels = [ticketCancelled(h), ticketCancelled(h)];
  Effects.failing.add(h.ticketId);
  await send([h, cancels[0]]);
  const [head, held] = await eventually(
    () => deadLetters(h.ticketId),
    (rows) => rows.length === 2,
    30_000,
    "h's create dead and its cancel held",
  );
  // Requeued before the cause is fixed: the copy of the create fails every attempt again. The ticket's second
  // cancel is read between the requeue and its copies, so it waits behind the requeued create.
  const republisher = writingBeforeFirstCopy(cancels[1]);
  const dl = new ConsumerDeadLetters({ databaseUrl: TEST_DATABASE_URL, republisher });
  const actor = { by: 'holds-test', note: null };
  try {
    const results = await dl.requeue({ filter: { id: head.id, limit: 1 }, actor, dryRun: false });
    const followed = await dl.follow(results, { timeoutMs: 60_000, pollMs: 100, actor });
    const rows = await deadLetters(h.ticketId);
    expect(rows.map((r) => [r.eventId, r.cause, r.heldBy, r.resolution])).toEqual([
      [h.id, 'handler_failed', null, 'requeued'],
      [cancels[0].id, 'held', head.id, 'requeued'],
      [cancels[1].id, 'held', head.id, null],
      [h.id, 'handler_failed', null, null],
      [cancels[0].id, 'held', rows[3].id, null],
    ]);
    // The second cancel waited behind a copy that is dead again: it is not requeued.
    expect(followed.outcome).toBe('dead-again');
    expect(followed.requeued).toEqual([]);
    expect(followed.copies).toEqual([
      {
        id: head.id,
        groupId,
        eventId: h.id,
        ticketId: h.ticketId,
        state: 'dead-again',
        deadLetter: rows[3].id,
        reason: expect.stringContaining('cannot be taken yet'),
        cause: 'handler_failed',
      },
      {
        id: held.id,
        groupId,
        eventId: cancels[0].id,
        ticketId: h.ticketId,
        state: 'dead-again',
        deadLetter: rows[4].id,
        reason: expect.stringContaining(rows[3].id),
        cause: 'held',
        heldBy: rows[3].id,
      },
    ]);
    const cmd = { requeue: (id: string) => `requeue ${id}`, list: () => 'list' };
    expect(followReport(followed, 60_000, cmd)).toEqual([
      expect.stringMatching(
        new RegExp(`^dead again: the copy of ${head.id} .* fix the cause, then: requeue ${rows[3].id}$`),
      ),
      expect.stringMatching(new RegExp(`held behind ${rows[3].id}: it comes back with that one$`)),
      `followed: group ${groupId} handled 0 of 2 copies`,
    ]);
    expect(await applied(h.ticketId)).toEqual([]);
    // `show` of the create: its copy dead again, the second cancel held behind it, and the requeue of the
    // copy's dead letter next, which would take all three back in order.
    const shown = await dl.show(head.id);
    expect(shown).toMatchObject({
      copy: { state: 'dead-again', deadLetter: rows[3].id },
      heldBehind: { count: 1, first: rows[2].id },
      next: { id: rows[3].id, dryRun: [{ id: rows[3].id }, { id: rows[4].id }, { id: rows[2].id }] },
    });
    expect(shown!.next!.dryRun.map((r) => r.outcome)).toEqual(['would-requeue', 'would-requeue', 'would-requeue']);
    // `show` of the second cancel: its own requeue would be refused, naming the copy's dead letter ahead of it.
    const heldShown = await dl.show(rows[2].id);
    expect(heldShown?.next?.dryRun).toEqual([
      expect.objectContaining({ outcome: 'refused', message: expect.stringContaining(`waits behind ${rows[3].id}`) }),
    ]);
    expect(deadLetterFate(heldShown!, cmd)).toEqual([
      expect.stringMatching(new RegExp(`^next: consumer dead letter ${rows[2].id} waits behind ${rows[3].id}, `)),
    ]);

    // As the advice says: the cause fixed, the create's new dead letter requeued takes the rest along, in order.
    Effects.failing.delete(h.ticketId);
    const again = await dl.requeue({ filter: { id: rows[3].id, limit: 1 }, actor, dryRun: false });
    expect(again.map((r) => [r.id, r.outcome])).toEqual([
      [rows[3].id, 'requeued'],
      [rows[4].id, 'requeued'],
      [rows[2].id, 'requeued'],
    ]);
    const done = await dl.follow(again, { timeoutMs: 60_000, pollMs: 100, actor });
    expect([done.outcome, done.requeued]).toEqual(['handled', []]);
  } finally {
    await republisher.close();
    await dl.close();
  }
  expect(await applied(h.ticketId)).toEqual([h.id, cancels[0].id, cancels[1].id]);
});

it('follow times out on copies no member of the group reads, and says so', async () => {
  const k = ticketCreated(tenantId);
  const lonely = uniqueName('kit-holds-nobody');
  const [{ id }] = (
    await db.query<{ id: string }>(
      `INSERT INTO ticket_events.consumer_dead_letters (group_id, topic, partition, "offset", key, value, reason, cause, event_id)
       VALUES ($1, $2, 0, 0, $3, $4, 'handler failed 2 times (ticket.created.v1): boom', 'handler_failed', $5) RETURNING id::text`,
      [lonely, topic, k.ticketId, JSON.stringify(k), k.id],
    )
  ).rows;
  const republisher = kafkaRepublisher(TEST_KAFKA_BROKERS, 'kit-holds-it');
  const dl = new ConsumerDeadLetters({ databaseUrl: TEST_DATABASE_URL, republisher });
  const actor = { by: 'holds-test', note: null };
  try {
    const results = await dl.requeue({ filter: { id, limit: 1 }, actor, dryRun: false });
    expect(results.map((r) => r.outcome)).toEqual(['requeued']);
    const followed = await dl.follow(results, { timeoutMs: 1_500, pollMs: 100, actor });
    expect(followed).toEqual({
      outcome: 'timeout',
      copies: [{ id, groupId: lonely, eventId: k.id, ticketId: k.ticketId, state: 'not-read' }],
      requeued: [],
    });
  } finally {
    await republisher.close();
    await dl.close();
    await deleteKitRows(db, lonely);
  }
  // The running group read the copy: a ticket's event like any other.
  await eventually(
    () => applied(k.ticketId),
    (r) => r.length === 1,
    30_000,
    "k's create applied by the running group",
  );
});

/** A ticket's create that fails every attempt, and its cancel held behind it; the cause then fixed. */
async function deadWithItsCancelHeld(create: TicketCreatedV1, cancel: TicketCancelledV1) {
  Effects.failing.add(create.ticketId);
  await send([create, cancel]);
  const rows = await eventually(
    () => deadLetters(create.ticketId),
    (r) => r.length === 2,
    30_000,
    'the create dead and its cancel held',
  );
  Effects.failing.delete(create.ticketId);
  return rows;
}

/**
 * A republisher that, before the requeue's first copy, writes the ticket's next event (it lands before the
 * copies) and waits until the consumer reads it while the requeue holds the ticket's rows.
 */
function writingBeforeFirstCopy(next: TicketEvent): MessageRepublisher {
  const kafka = kafkaRepublisher(TEST_KAFKA_BROKERS, 'kit-holds-it');
  let sends = 0;
  return {
    async send(m) {
      if (++sends === 1) {
        await send([next]);
        await claimWaitsOnLock();
      }
      return kafka.send(m);
    },
    close: () => kafka.close(),
  };
}

/** Waits until a statement on the kit's inbox waits for a lock: the consumer's claim, on the requeue's rows. */
async function claimWaitsOnLock(): Promise<void> {
  await eventually(
    async () =>
      (
        await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE wait_event_type = 'Lock' AND query LIKE '%consumer_dead_letters%' AND query LIKE '%inbox_events%'`,
        )
      ).rows[0].n,
    (n) => n > 0,
    20_000,
    "the consumer's claim waiting on the requeue's locks",
  );
}

it('a held event waits for its head: requeuing it alone is refused, naming the head; after the head is discarded it is requeued with the rest', async () => {
  const c = ticketCreated(tenantId);
  const cancels = [ticketCancelled(c), ticketCancelled(c)];
  Effects.failing.add(c.ticketId);
  await send([c, ...cancels]);
  const [head, first, second] = await eventually(
    () => deadLetters(c.ticketId),
    (rows) => rows.length === 3,
    30_000,
    "c's create dead and two cancels held",
  );
  expect([first.heldBy, second.heldBy]).toEqual([head.id, head.id]);
  Effects.failing.delete(c.ticketId);

  // The caller owns the republisher: ConsumerDeadLetters.close() leaves it open.
  const republisher = kafkaRepublisher(TEST_KAFKA_BROKERS, 'kit-holds-it');
  const dl = new ConsumerDeadLetters({ databaseUrl: TEST_DATABASE_URL, republisher });
  const actor = { by: 'holds-test', note: null };
  try {
    const refused = await dl.requeue({ filter: { id: first.id, limit: 1 }, actor, dryRun: false });
    expect(refused).toEqual([
      {
        id: first.id,
        outcome: 'refused',
        message: `consumer dead letter ${first.id} waits behind ${head.id}, an earlier event of ticket ${c.ticketId} in group ${groupId} still dead: requeue ${head.id}, which brings this one back after it, or discard ${head.id} first`,
      },
    ]);
    const discarded = await dl.discard({ filter: { id: head.id, limit: 1 }, actor, dryRun: false });
    expect(discarded[0].message).toBe(
      `consumer dead letter ${head.id} discarded (kept, marked); 2 later event(s) of ticket ${c.ticketId} stay dead: requeue ${first.id} to hand them to the handlers in their order`,
    );
    const requeued = await dl.requeue({ filter: { id: first.id, limit: 1 }, actor, dryRun: false });
    expect(requeued.map((r) => [r.id, r.outcome])).toEqual([
      [first.id, 'requeued'],
      [second.id, 'requeued'],
    ]);
  } finally {
    await republisher.close();
    await dl.close();
  }
  await eventually(
    () => applied(c.ticketId),
    (r) => r.length === 2,
    30_000,
    "c's two cancels applied",
  );
  expect(await applied(c.ticketId)).toEqual(cancels.map((e) => e.id));
});

it("a dead letter whose event was handled after all holds nothing (a crash between the dead letter and the offset's commit, then a redelivery that succeeded)", async () => {
  const e = ticketCreated(tenantId);
  const cancel = ticketCancelled(e);
  await send([e]);
  await eventually(
    () => applied(e.ticketId),
    (r) => r.length === 1,
    30_000,
    "e's create applied",
  );
  // The dead letter the first try left at the event's offset before the process died; the redelivery then
  // applied the event.
  await db.query(
    `INSERT INTO ticket_events.consumer_dead_letters (group_id, topic, partition, "offset", key, value, reason, cause, event_id)
     SELECT $1, $2, 0, i."offset", $3, $4, 'handler failed 2 times (ticket.created.v1): boom', 'handler_failed', $5
       FROM ticket_events.inbox_events i WHERE i.group_id = $1 AND i.event_id = $5`,
    [groupId, topic, e.ticketId, JSON.stringify(e), e.id],
  );
  await send([cancel]);
  await eventually(
    () => applied(e.ticketId),
    (r) => r.length === 2,
    30_000,
    "e's cancel applied",
  );
  expect(await applied(e.ticketId)).toEqual([e.id, cancel.id]);
  expect((await deadLetters(e.ticketId)).map((r) => [r.eventId, r.cause])).toEqual([[e.id, 'handler_failed']]);
});

it('an invalid message holds nothing: the ticket goes on after it', async () => {
  const d = ticketCreated(tenantId);
  const cancel = ticketCancelled(d);
  await fx.producer.send({
    topic,
    acks: -1,
    messages: [{ key: d.ticketId, value: '{"not": "an event"', partition: 0 }, toMessage(d, 0), toMessage(cancel, 0)],
  });
  await eventually(
    () => applied(d.ticketId),
    (r) => r.length === 2,
    30_000,
    "d's two events applied",
  );
  expect(await applied(d.ticketId)).toEqual([d.id, cancel.id]);
  expect((await deadLetters(d.ticketId)).map((r) => r.cause)).toEqual(['invalid']);
});
