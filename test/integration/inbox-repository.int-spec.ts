// The consumer's inbox statement on the real test database, without Kafka: what it stores, how it
// counts, and what happens when two consumers record the same events at the same moment (the race a
// rebalance can cause), which takes the statement's careful path.
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { boolArray, int4Array, int8Array, textArray, uuidArray } from '@tickets/event-consumer';
import { TicketEvent } from '@tickets/contracts';
import type { InvalidMessage } from '@tickets/event-consumer';
import { InboxRepository } from '../../apps/consumer/src/inbox/inbox.repository';
import { TEST_DATABASE_URL } from '../support/env';
import { ticketCreated, uniqueName } from '../support/events-factory';

jest.setTimeout(30_000);

let db: Pool;
const groups: string[] = [];
const tenantId = randomUUID();

/** A chunk as the kit hands it to the notifier (inbox 'handler'): valid events in offset order with their bytes, and the invalid messages. */
function chunk(values: string[], firstOffset = 0) {
  const c = {
    events: [] as TicketEvent[],
    offsets: [] as string[],
    values: [] as Buffer[],
    invalid: [] as InvalidMessage[],
  };
  values.forEach((v, i) => {
    const offset = String(firstOffset + i);
    try {
      c.events.push(TicketEvent.parse(JSON.parse(v)));
      c.offsets.push(offset);
      c.values.push(Buffer.from(v));
    } catch (e) {
      c.invalid.push({ offset, reason: `not JSON: ${(e as Error).message}`, key: null, value: v, headers: {} });
    }
  });
  return c;
}
const newGroup = () => {
  const g = uniqueName('inbox-repo');
  groups.push(g);
  return g;
};

beforeAll(() => {
  db = new Pool({ connectionString: TEST_DATABASE_URL, max: 8 });
});

afterAll(async () => {
  await db.query('DELETE FROM notifications WHERE group_id = ANY($1)', [groups]);
  await db.query('DELETE FROM ticket_events.inbox_events WHERE group_id = ANY($1)', [groups]);
  await db.query('DELETE FROM ticket_events.consumer_dead_letters WHERE group_id = ANY($1)', [groups]);
  await db.end();
});

describe('binary array parameters', () => {
  it('round-trip through PostgreSQL unchanged', async () => {
    const ids = [randomUUID(), randomUUID().toUpperCase()];
    const texts = ['plain', 'ünïcødé ✓ "quoted" \\ back\nslash', ''];
    const { rows } = await db.query(
      'SELECT $1::uuid[] AS ids, $2::text[] AS texts, $3::int8[]::text[] AS big, $4::int4[] AS ints, $5::bool[] AS flags, $6::uuid[] AS empty',
      [
        uuidArray(ids),
        textArray([texts[0], Buffer.from(texts[1]), texts[2]]),
        int8Array(['9007199254740993', -1n, 0]),
        int4Array([-2147483648, 7]),
        boolArray([true, false]),
        uuidArray([]),
      ],
    );
    expect(rows[0]).toEqual({
      ids: ids.map((i) => i.toLowerCase()),
      texts,
      big: ['9007199254740993', '-1', '0'],
      ints: [-2147483648, 7],
      flags: [true, false],
      empty: [],
    });
  });

  it('refuses a malformed uuid before anything is sent', () => {
    expect(() => uuidArray(['not-a-uuid'])).toThrow(/not a uuid/);
  });
});

describe('InboxRepository.recordBatch', () => {
  it('stores the message bytes as the payload, counts repeats in one chunk, and skips a redelivery', async () => {
    const groupId = newGroup();
    const repo = new InboxRepository();
    const a = JSON.stringify(ticketCreated(tenantId, { title: 'Ünïcode "title" \\ with escapes' }));
    const b = JSON.stringify(ticketCreated(tenantId));
    const input = { groupId, topic: 't', partition: 0, defaultWebhookUrl: 'http://127.0.0.1:9/hook' };

    const first = await repo.recordBatch(db, { ...input, ...chunk([a, b, a, 'not json'], 10) });
    expect(first).toEqual({
      received: 4,
      processed: 2,
      skippedDuplicate: 1,
      deadLettered: 1,
      pending: 2,
      noTarget: 0,
      leased: [],
    });
    const { rows } = await db.query(
      `SELECT n.payload, i."offset"::int AS offset, i.duplicates FROM notifications n
       JOIN ticket_events.inbox_events i USING (group_id, event_id) WHERE n.group_id = $1 ORDER BY i."offset"`,
      [groupId],
    );
    // Byte for byte what was read from Kafka; the repeat of `a` (offset 12) only raised its counter.
    expect(rows).toEqual([
      { payload: a, offset: 10, duplicates: 1 },
      { payload: b, offset: 11, duplicates: 0 },
    ]);

    const again = await repo.recordBatch(db, { ...input, ...chunk([b, a], 20) });
    expect(again).toEqual({
      received: 2,
      processed: 0,
      skippedDuplicate: 2,
      deadLettered: 0,
      pending: 0,
      noTarget: 0,
      leased: [],
    });
    const counts = await db.query(
      'SELECT count(*)::int AS n, sum(duplicates)::int AS d FROM ticket_events.inbox_events WHERE group_id = $1',
      [groupId],
    );
    expect(counts.rows[0]).toEqual({ n: 2, d: 3 });
    expect(
      (await db.query('SELECT count(*)::int AS n FROM notifications WHERE group_id = $1', [groupId])).rows[0].n,
    ).toBe(2);
  });

  it('two consumers recording the same events at once: one notification per event, both statements succeed', async () => {
    const groupId = newGroup();
    const events = Array.from({ length: 200 }, () => JSON.stringify(ticketCreated(tenantId)));
    const input = { groupId, topic: 't', partition: 1, defaultWebhookUrl: 'http://127.0.0.1:9/hook' };
    // Six statements over the same 40 events, in both orders: the ones that probe before the winner
    // commits hit its primary key, fail with a unique violation and must come back through the
    // careful path (without it, this test fails with "duplicate key value violates unique constraint").
    for (let round = 0; round < 5; round++) {
      const slice = events.slice(round * 40, round * 40 + 40);
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, w) =>
          new InboxRepository().recordBatch(db, { ...input, ...chunk(w % 2 ? [...slice].reverse() : slice, w * 100) }),
        ),
      );
      expect(results.reduce((s, r) => s + r.processed, 0)).toBe(40);
      expect(results.every((r) => r.processed + r.skippedDuplicate === 40)).toBe(true);
    }
    const { rows } = await db.query(
      `SELECT (SELECT count(*) FROM ticket_events.inbox_events WHERE group_id = $1)::int AS inbox,
              (SELECT count(*) FROM notifications WHERE group_id = $1)::int AS notifications,
              (SELECT count(DISTINCT event_id) FROM notifications WHERE group_id = $1)::int AS distinct_events`,
      [groupId],
    );
    expect(rows[0]).toEqual({ inbox: 200, notifications: 200, distinct_events: 200 });
  });

  it('an event replayed after its inbox row was purged, while its notification remains: no second notification', async () => {
    const groupId = newGroup();
    const repo = new InboxRepository();
    const event = ticketCreated(tenantId);
    const input = { groupId, topic: 't', partition: 2, defaultWebhookUrl: 'http://127.0.0.1:9/hook' };
    await repo.recordBatch(db, { ...input, ...chunk([JSON.stringify(event)], 1) });
    // What an INBOX_RETENTION shorter than the topic's retention would do before a replay.
    await db.query('DELETE FROM ticket_events.inbox_events WHERE group_id = $1', [groupId]);

    // The fast path hits the notification's unique key; the careful re-run skips it.
    const replayed = await repo.recordBatch(db, { ...input, ...chunk([JSON.stringify(event)], 1) });
    expect(replayed).toMatchObject({ received: 1, pending: 0 });
    const { rows } = await db.query(
      'SELECT count(*)::int AS n FROM notifications WHERE group_id = $1 AND event_id = $2',
      [groupId, event.id],
    );
    expect(rows[0].n).toBe(1);
  });
});
