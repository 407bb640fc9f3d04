// An outbox requeue racing the relay's dead-lettering of a later row of the same ticket, on the real
// PostgreSQL. The relay claims row X of a ticket while an earlier event D of that ticket is a dead
// letter, so it dead-letters X "blocked by D"; if an operator requeues D in between, X must not end up
// dead behind a blocker that has left (it would wait for a second requeue by hand). Both orders are
// played with real transactions: requeue first (X stays in the outbox, published after D), and the
// relay's statement first (the requeue waits for it, then takes X back with D).
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import { ConsumerDeadLetters, DeadLetters } from '@tickets/dead-letters';
import { OutboxRepository } from '../../libs/outbox/src/outbox.repository';
import {
  createRelayTestDatabase,
  insertOutboxRows,
  ticketEventRow,
  waitFor,
  type RelayTestDatabase,
} from '../support/outbox-factory';

jest.setTimeout(60_000);

let database: RelayTestDatabase;
let db: Pool;
let prisma: PrismaClient;
let deadLetters: DeadLetters;
const repo = new OutboxRepository();
const tenantId = randomUUID();
const actor = { by: 'race-test', note: null };

beforeAll(async () => {
  database = await createRelayTestDatabase('dl_race');
  db = new Pool({ connectionString: database.url, max: 4 });
  prisma = createPrismaClient(database.url, 2, 'dead-letters-race-it');
  deadLetters = new DeadLetters(prisma, new ConsumerDeadLetters({ pool: db }));
  await db.query('INSERT INTO tenants (id, slug) VALUES ($1, $2)', [tenantId, `dl-race-${tenantId.slice(0, 8)}`]);
});

afterAll(async () => {
  await Promise.allSettled([db?.end(), prisma?.$disconnect()]);
  await database?.drop();
});

/** A ticket with a created event D (dead-lettered, as after a broker rejection) and a later event X still in the outbox. */
async function ticketBehindDeadLetter() {
  const ticketId = randomUUID();
  const d = ticketEventRow({ tenantId, ticketId, kind: 'created' });
  const x = ticketEventRow({ tenantId, ticketId, kind: 'cancelled' });
  const [dSeq, xSeq] = await insertOutboxRows(db, [d, x]);
  expect(await repo.deadLetter(db, [{ seq: dSeq, reason: 'kafka_rejected: test', attempts: 1 }])).toBe(1);
  const blockedX = { seq: xSeq, reason: `blocked_by_dead_letter:${d.eventId}`, attempts: 0, blocker: d.eventId };
  return { d, x, blockedX };
}

const where = async (eventId: string) => {
  const { rows } = await db.query<{ place: string }>(
    `SELECT 'outbox' AS place FROM outbox_events o JOIN outbox_pending p ON p.seq = o.seq WHERE o.event_id = $1
     UNION ALL SELECT 'dead' FROM outbox_dead_letters WHERE event_id = $1`,
    [eventId],
  );
  return rows.map((r) => r.place).join(',');
};

it('requeue first: the relay leaves the row behind the requeued dead letter in the outbox instead of dead-lettering it', async () => {
  const { d, x, blockedX } = await ticketBehindDeadLetter();
  const [res] = await deadLetters.requeue({
    kind: 'outbox',
    filter: { id: d.eventId, limit: 1 },
    actor,
    dryRun: false,
  });
  expect(res).toMatchObject({ outcome: 'requeued', eventIds: [d.eventId] });

  // The relay's dead-lettering of X, decided from a claim read before the requeue.
  expect(await repo.deadLetter(db, [blockedX])).toBe(0);
  expect(await where(d.eventId)).toBe('outbox');
  expect(await where(x.eventId)).toBe('outbox');
});

it("relay first: the requeue waits for the relay's statement and then takes the row dead-lettered behind it along", async () => {
  const { d, x, blockedX } = await ticketBehindDeadLetter();
  const relay = await db.connect();
  try {
    await relay.query('BEGIN');
    expect(await repo.deadLetter(relay, [blockedX])).toBe(1);
    const requeue = deadLetters.requeue({ kind: 'outbox', filter: { id: d.eventId, limit: 1 }, actor, dryRun: false });
    // The requeue must be waiting on the dead letter the relay's statement holds.
    await waitFor('the requeue waiting for the lock on the dead letter', async () => {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%'`,
      );
      return rows[0].n > 0;
    });
    await relay.query('COMMIT');
    const [res] = await requeue;
    expect(res).toMatchObject({ outcome: 'requeued', eventIds: [d.eventId, x.eventId] });
  } finally {
    relay.release();
  }
  expect(await where(d.eventId)).toBe('outbox');
  expect(await where(x.eventId)).toBe('outbox');
});

it('a row following a dead letter made by the same statement is dead-lettered with it', async () => {
  const ticketId = randomUUID();
  const b = ticketEventRow({ tenantId, ticketId, kind: 'created' });
  const x = ticketEventRow({ tenantId, ticketId, kind: 'cancelled' });
  const [bSeq, xSeq] = await insertOutboxRows(db, [b, x]);
  const moved = await repo.deadLetter(db, [
    { seq: bSeq, reason: 'invalid_envelope: test', attempts: 1 },
    { seq: xSeq, reason: `blocked_by_dead_letter:${b.eventId}`, attempts: 0, blocker: b.eventId },
  ]);
  expect(moved).toBe(2);
  expect(await where(b.eventId)).toBe('dead');
  expect(await where(x.eventId)).toBe('dead');
});
