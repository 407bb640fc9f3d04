// Per-ticket order, decided by the claim's SQL alone on the real PostgreSQL: no relay, no broker, no
// timing. A ticket with a row parked until a later retry has none of its rows claimed, so its cancel
// event can never overtake its create event (docs/relay.md, "Ordering"). The relay tests that publish
// through a broker see this only when a retry happens to line up with a claim; this one sees it always.
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { OutboxRepository } from '../../libs/outbox/src/outbox.repository';
import {
  createRelayTestDatabase,
  insertOutboxRows,
  ticketEventRow,
  ticketLifecycle,
  type RelayTestDatabase,
} from '../support/outbox-factory';

jest.setTimeout(60_000);

const repo = new OutboxRepository();
let database: RelayTestDatabase;
let db: Client;

beforeAll(async () => {
  database = await createRelayTestDatabase('claim_order');
  db = new Client({ connectionString: database.url });
  await db.connect();
});

afterAll(async () => {
  await db?.end();
  await database?.drop();
});

beforeEach(async () => {
  await db.query('TRUNCATE outbox_events, outbox_pending, outbox_dead_letters');
});

/** Parks a row as the relay does after a rejected send: one attempt, retry `inMs` from now. */
async function park(seq: string, inMs: number): Promise<void> {
  await repo.park(db, seq, 1, 'kafka_rejected: test', inMs);
}

const seqsOf = (rows: { seq: string }[]) => rows.map((r) => r.seq);

test('a ticket whose created row is parked has neither its created nor its cancelled row claimed', async () => {
  const tenantId = randomUUID();
  const [created, cancelled] = ticketLifecycle(tenantId);
  const other = ticketEventRow({ tenantId, kind: 'created' });
  const [createdSeq, cancelledSeq, otherSeq] = await insertOutboxRows(db, [created, cancelled, other]);
  await park(createdSeq, 60 * 60_000);

  const claimed = seqsOf(await repo.claim(db, 100));
  expect(claimed).not.toContain(createdSeq);
  expect(claimed).not.toContain(cancelledSeq);
  // The hold-back is per ticket: another ticket's row is claimed as usual.
  expect(claimed).toEqual([otherSeq]);

  // The claim that also marks a batch published runs the same hold-back.
  const folded = seqsOf(
    await repo.markPublishedAndClaim(db, { seqs: [otherSeq], kafkaTimestampMs: Date.now() }, 100, [otherSeq]),
  );
  expect(folded).toEqual([]);
});

test("a ticket's rows are claimed again, in seq order, once its parked row's retry is due", async () => {
  const [created, cancelled] = ticketLifecycle(randomUUID());
  const [createdSeq, cancelledSeq] = await insertOutboxRows(db, [created, cancelled]);
  await park(createdSeq, 60 * 60_000);
  expect(seqsOf(await repo.claim(db, 100))).toEqual([]);

  await db.query("UPDATE outbox_pending SET next_attempt_at = now() - interval '1 second' WHERE seq = $1", [
    createdSeq,
  ]);
  expect(seqsOf(await repo.claim(db, 100))).toEqual([createdSeq, cancelledSeq]);
});

test("a row claimed after its ticket's dead letter carries that dead letter's event id (the relay dead-letters it behind it)", async () => {
  const tenantId = randomUUID();
  const [created, cancelled] = ticketLifecycle(tenantId);
  const other = ticketEventRow({ tenantId, kind: 'created' });
  const [otherSeq, createdSeq, cancelledSeq] = await insertOutboxRows(db, [other, created, cancelled]);
  expect(await repo.deadLetter(db, [{ seq: createdSeq, reason: 'kafka_rejected: test', attempts: 5 }])).toBe(1);

  const claimed = await repo.claim(db, 100);
  expect(claimed.map((r) => [r.seq, r.blockedBy])).toEqual([
    [otherSeq, null],
    [cancelledSeq, created.eventId],
  ]);
});
