// The consumer kit's claim statement against the dead letters of a requeue, on a real PostgreSQL with the
// kit's schema migrated: a requeued dead letter holds its ticket's events read before its copy until the
// group has handled the copy, the copies themselves are not held behind one another, and a copy that is
// dead-lettered again keeps its original's place in the ticket's order (also for a replay of the
// originals), also when the original was stored without its event id or the copy's dead letter by an earlier
// kit. The dead letters are written as the kit writes them (KitInboxRepository.deadLetter) or, for
// the requeue's mark, as ConsumerDeadLettersRepository.resolve leaves them; the whole path on the broker is
// in event-consumer-holds.int-spec.ts.
import { randomUUID } from 'node:crypto';
import { Pool, type PoolClient } from 'pg';
import { KitTables, migrate } from '@tickets/event-consumer/admin';
import { KitInboxRepository, type Claimed, type Place } from '@tickets/event-consumer/inbox.repository';
import { scratchDatabase, type ScratchDatabase } from '../support/kit-databases';

jest.setTimeout(60_000);

let database: ScratchDatabase;
let db: Pool;
const inbox = new KitInboxRepository(new KitTables());
const place: Place = { groupId: 'claim-holds', topic: 'ticket-events', partition: 0 };

beforeAll(async () => {
  database = await scratchDatabase('claim_holds');
  await migrate({ databaseUrl: database.url });
  db = new Pool({ connectionString: database.url, max: 2 });
});

afterAll(async () => {
  await db?.end();
  await database?.drop();
});

interface Event {
  id: string;
  ticketId: string;
}

const event = (ticketId: string): Event => ({ id: randomUUID(), ticketId });

async function inTx<T>(work: (tx: PoolClient) => Promise<T>): Promise<T> {
  const tx = await db.connect();
  try {
    await tx.query('BEGIN');
    const out = await work(tx);
    await tx.query('COMMIT');
    return out;
  } finally {
    tx.release();
  }
}

/** One chunk of the partition: each event read at its offset. */
const claim = (read: [Event, number][]): Promise<Claimed> =>
  inTx((tx) =>
    inbox.claim(
      tx,
      place,
      read.map(([e, offset]) => ({
        id: e.id,
        type: 'ticket.cancelled.v1',
        ticketId: e.ticketId,
        offset: String(offset),
        repeats: 0,
      })),
    ),
  );

/**
 * The event's dead letter at `offset`, as the kit writes it (without its event id: as a kit before schema step 3
 * stored a message without the `event-id` header); returns its id.
 */
async function deadLetter(
  e: Event,
  offset: number,
  cause: 'handler_failed' | 'held',
  held?: string,
  withEventId = true,
): Promise<string> {
  await inbox.deadLetter(
    db,
    place,
    [
      {
        offset: String(offset),
        reason: cause,
        key: e.ticketId,
        value: JSON.stringify(e),
        headers: {},
        eventId: withEventId ? e.id : undefined,
        held,
      },
    ],
    cause,
  );
  const r = await db.query<{ id: string }>(
    `SELECT id::text FROM ticket_events.consumer_dead_letters WHERE group_id = $1 AND partition = 0 AND "offset" = $2`,
    [place.groupId, offset],
  );
  return r.rows[0].id;
}

/** A requeue's mark (ConsumerDeadLettersRepository.resolve): requeued, its copy produced at `copyOffset`. */
const requeued = (id: string, copyOffset: number) =>
  db.query(
    `UPDATE ticket_events.consumer_dead_letters SET resolution = 'requeued', resolved_at = now(), copy_partition = 0, copy_offset = $2
      WHERE id = $1::uuid`,
    [id, copyOffset],
  );

const origin = async (id: string) =>
  (
    await db.query<{ o: string | null }>(
      'SELECT origin_offset::text AS o FROM ticket_events.consumer_dead_letters WHERE id = $1::uuid',
      [id],
    )
  ).rows[0].o;

/** What the claim did with each event: fresh, skipped (in the inbox), or held behind a dead letter. */
const outcome = (c: Claimed, e: Event) => {
  const h = c.held.get(e.id);
  if (h) return { heldBy: h.id, pending: h.pending };
  return c.fresh.has(e.id) ? 'fresh' : 'skipped';
};

it("a requeued dead letter holds its ticket's events read before its copy, not its copies, and nothing once the copy is handled", async () => {
  const t = randomUUID();
  const [create, cancel1, cancel2, cancel3] = [event(t), event(t), event(t), event(t)];
  // create failed at 100, cancel1 held behind it at 101; a requeue produced both again at 200 and 201.
  const head = await deadLetter(create, 100, 'handler_failed');
  const behind = await deadLetter(cancel1, 101, 'held', head);
  await requeued(head, 200);
  await requeued(behind, 201);

  // cancel2, written while the requeue ran, at 150: before the copies, so it waits for them.
  const first = await claim([[cancel2, 150]]);
  expect(outcome(first, cancel2)).toEqual({ heldBy: head, pending: true });

  // The copies in one chunk, with cancel3 after them: none is held (the chain's later rows do not hold
  // the earlier events' copies, and cancel3 comes after the copies).
  const copies = await claim([
    [create, 200],
    [cancel1, 201],
    [cancel3, 202],
  ]);
  expect([outcome(copies, create), outcome(copies, cancel1), outcome(copies, cancel3)]).toEqual([
    'fresh',
    'fresh',
    'fresh',
  ]);

  // The claim that read the copies cleared their rows' copy place: they leave the claim's index.
  const places = await db.query(
    'SELECT copy_offset FROM ticket_events.consumer_dead_letters WHERE id = ANY($1::uuid[]) ORDER BY "offset"',
    [[head, behind]],
  );
  expect(places.rows).toEqual([{ copy_offset: null }, { copy_offset: null }]);

  // Handled: the requeued rows hold nothing now, even for an event at an offset before the copies.
  const late = event(t);
  expect(outcome(await claim([[late, 160]]), late)).toBe('fresh');
});

it("a copy dead-lettered again keeps its original's place: it holds the copies after it and a replay of the originals, not the events before it", async () => {
  const t = randomUUID();
  const [create, cancel1, cancel2, before] = [event(t), event(t), event(t), event(t)];
  const head = await deadLetter(create, 300, 'handler_failed');
  const behind = await deadLetter(cancel1, 301, 'held', head);
  const during = await deadLetter(cancel2, 350, 'held', head); // read between the requeue and its copies
  await requeued(head, 400);
  await requeued(behind, 401);
  // The create's copy fails again at 400: its dead letter stands where the create was first read.
  const again = await deadLetter(create, 400, 'handler_failed');
  expect(await origin(again)).toBe('300');
  expect(await origin(head)).toBeNull();

  // cancel1's copy at 401 waits behind the create's new dead letter, not behind its own requeued row.
  expect(outcome(await claim([[cancel1, 401]]), cancel1)).toEqual({ heldBy: again, pending: false });
  const behindAgain = await deadLetter(cancel1, 401, 'held', again);
  expect(await origin(behindAgain)).toBe('301');

  // A requeue of cancel2 alone produced it at 402: still behind the create, whose copy is dead.
  await requeued(during, 402);
  expect(outcome(await claim([[cancel2, 402]]), cancel2)).toEqual({ heldBy: again, pending: false });

  // A replay reads the originals again: cancel1 at 301 is held (its place is after the create's); an
  // event of the ticket before the create is not.
  const replay = await claim([
    [before, 299],
    [cancel1, 301],
  ]);
  expect([outcome(replay, before), outcome(replay, cancel1)]).toEqual(['fresh', { heldBy: again, pending: false }]);
});

it('a copy is known by its place as well as by its event id: an original stored without the event id still puts its copy ahead of what waited for it', async () => {
  const t = randomUUID();
  const [create, cancel, next] = [event(t), event(t), event(t)];
  const head = await deadLetter(create, 600, 'handler_failed', undefined, false);
  await requeued(head, 900);
  // The cancel, read between the requeue and the copy, waits for it.
  expect(outcome(await claim([[cancel, 700]]), cancel)).toEqual({ heldBy: head, pending: true });
  await deadLetter(cancel, 700, 'held', head);
  // The copy stands at the create's place (600), ahead of the held cancel (700): not held behind it.
  expect(outcome(await claim([[create, 900]]), create)).toBe('fresh');
  // A later event still waits behind the held cancel.
  expect(outcome(await claim([[next, 950]]), next)).toEqual({ heldBy: expect.any(String), pending: false });
});

it("a dead letter written at a copy's place without its original's place (a replica of the earlier kit) gets it from the trigger", async () => {
  const t = randomUUID();
  const [create, cancel] = [event(t), event(t)];
  const head = await deadLetter(create, 1000, 'handler_failed');
  const behind = await deadLetter(cancel, 1001, 'held', head);
  await requeued(head, 1100);
  await requeued(behind, 1101);
  // The create's copy dead again, stored as a kit at schema step 3 stores it: no origin columns.
  const r = await db.query<{ id: string; o: string }>(
    `INSERT INTO ticket_events.consumer_dead_letters (group_id, topic, partition, "offset", key, value, reason, cause, event_id)
     VALUES ($1, $2, 0, 1100, $3, '{}', 'handler failed 2 times', 'handler_failed', $4) RETURNING id::text, origin_offset::text AS o`,
    [place.groupId, place.topic, t, create.id],
  );
  expect(r.rows[0].o).toBe('1000');
  // So the cancel's copy waits behind it.
  expect(outcome(await claim([[cancel, 1101]]), cancel)).toEqual({ heldBy: r.rows[0].id, pending: false });
});

it('a requeued dead letter without the place of its copy (requeued by an earlier kit) holds nothing', async () => {
  const t = randomUUID();
  const [create, cancel] = [event(t), event(t)];
  const head = await deadLetter(create, 500, 'handler_failed');
  await db.query(
    `UPDATE ticket_events.consumer_dead_letters SET resolution = 'requeued', resolved_at = now() WHERE id = $1::uuid`,
    [head],
  );
  expect(outcome(await claim([[cancel, 550]]), cancel)).toBe('fresh');
});
