// The idempotent notification consumer against the real broker, the real test database and a real
// HTTP webhook receiver: exactly-once webhooks, duplicates, a crash between the inbox transaction and
// the offset commit, poison messages.
import { randomUUID } from 'node:crypto';
import type { RecordMetadata } from 'kafkajs';
import { Pool } from 'pg';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import type { TicketEventsOptions } from '@tickets/event-consumer';
import { withFaults } from '@tickets/event-consumer/testing';
import { setTenantWebhook } from '../support/webhooks-cli';
import { TEST_DATABASE_URL } from '../support/env';
import {
  eventually,
  kafkaFixture,
  newWebhookSecret,
  ticketCreated,
  toMessage,
  uniqueName,
} from '../support/events-factory';
import { startTestNotifier, type TestNotifier } from '../support/notifier';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

jest.setTimeout(60_000);

const topic = uniqueName('consumer-it');
const groupId = uniqueName('notifier-it');
const secret = newWebhookSecret();
const tenantId = randomUUID();
const slug = uniqueName('consumer-it');

let fx: Awaited<ReturnType<typeof kafkaFixture>>;
let prisma: PrismaClient;
let db: Pool;
let receiver: WebhookReceiver;
const running: TestNotifier[] = [];

async function start(kit?: Partial<TicketEventsOptions>): Promise<TestNotifier> {
  const c = await startTestNotifier({ topic, groupId, kit });
  running.push(c);
  return c;
}

const send = (messages: Parameters<typeof toMessage>[0][], partition = 0): Promise<RecordMetadata[]> =>
  fx.producer.send({ topic, acks: -1, messages: messages.map((e) => toMessage(e, partition)) });

const deliveriesOf = (eventId: string) =>
  receiver.deliveries.filter((d) => (d.json as { data?: { id?: string } })?.data?.id === eventId);
const requestsOf = (eventId: string) =>
  receiver.requests.filter((d) => (d.json as { data?: { id?: string } })?.data?.id === eventId);

async function inboxRow(eventId: string) {
  const { rows } = await db.query(
    'SELECT "offset"::text AS offset, partition, duplicates FROM ticket_events.inbox_events WHERE group_id = $1 AND event_id = $2',
    [groupId, eventId],
  );
  return rows[0] as { offset: string; partition: number; duplicates: number } | undefined;
}

async function committedOffset(partition: number): Promise<number> {
  const [t] = await fx.admin.fetchOffsets({ groupId, topics: [topic] });
  return Number(t.partitions.find((p) => p.partition === partition)?.offset ?? -1);
}

/** Gives any wrongly scheduled second delivery time to show up before asserting there was none. */
const settle = (ms = 800) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  fx = await kafkaFixture(topic, 3);
  prisma = createPrismaClient(TEST_DATABASE_URL, 6, 'consumer-it');
  db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  receiver = await startWebhookReceiver({ secret });
  await db.query('INSERT INTO tenants (id, slug) VALUES ($1, $2)', [tenantId, slug]);
  const out: string[] = [];
  const code = await setTenantWebhook(prisma, slug, receiver.url, secret, (l) => out.push(l));
  expect({ code, out }).toEqual({ code: 0, out: [expect.stringContaining(receiver.url)] });
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((c) => c.stop()));
});

afterAll(async () => {
  await db.query('DELETE FROM notifications WHERE group_id = $1', [groupId]);
  await db.query('DELETE FROM ticket_events.inbox_events WHERE group_id = $1', [groupId]);
  await db.query('DELETE FROM ticket_events.consumer_dead_letters WHERE group_id = $1', [groupId]);
  await db.query('DELETE FROM tenants WHERE id = $1', [tenantId]);
  await fx?.admin.deleteGroups([groupId]).catch(() => undefined);
  await Promise.allSettled([fx?.close(), prisma?.$disconnect(), db?.end(), receiver?.close()]);
});

it('delivers one correctly signed webhook per event, with the notification id as webhook-id', async () => {
  await start();
  const event = ticketCreated(tenantId);
  await send([event]);

  await eventually(
    () => deliveriesOf(event.id).length,
    (n) => n >= 1,
    20_000,
    'the webhook',
  );
  await settle();
  expect(requestsOf(event.id)).toHaveLength(1);
  const [d] = deliveriesOf(event.id);
  expect(d.verified).toBe(true);
  expect(Math.abs(d.timestamp - Date.now() / 1000)).toBeLessThan(30);
  expect(d.json).toEqual({ type: 'ticket.created.v1', timestamp: event.occurredAt, data: event });

  const { rows } = await db.query(
    'SELECT id, status, attempts, target_source FROM notifications WHERE group_id = $1 AND event_id = $2',
    [groupId, event.id],
  );
  expect(rows).toEqual([{ id: d.id, status: 'delivered', attempts: 1, target_source: 'tenant' }]);
});

it('sends no second webhook when the same event is produced again by hand', async () => {
  const c = await start();
  const event = ticketCreated(tenantId);
  await send([event], 1);
  await eventually(
    () => deliveriesOf(event.id).length,
    (n) => n >= 1,
    20_000,
    'the first webhook',
  );

  await send([event], 1);
  await eventually(
    () => inboxRow(event.id),
    (r) => r?.duplicates === 1,
    20_000,
    'the duplicate to be skipped',
  );
  await settle();
  expect(requestsOf(event.id)).toHaveLength(1);
  expect(await c.counts()).toMatchObject({ duplicates: 1 });
  const { rows } = await db.query(
    'SELECT count(*)::int AS n FROM notifications WHERE group_id = $1 AND event_id = $2',
    [groupId, event.id],
  );
  expect(rows[0].n).toBe(1);
});

it('a consumer that dies after its transaction and before the offset commit: the next instance skips the redelivery', async () => {
  let fired = false;
  let died!: () => void;
  const dead = new Promise<void>((resolve) => (died = resolve));
  const doomed = await start(
    withFaults({} as TicketEventsOptions, {
      afterTransactionBeforeCommit: () => {
        if (fired) return;
        fired = true;
        died();
        return 'die';
      },
    }),
  );
  const event = ticketCreated(tenantId);
  const [meta] = await send([event], 2);
  const offset = Number(meta.baseOffset);
  await dead;
  // The dead instance commits nothing more; stopping it only makes it leave the group sooner.
  await doomed.stop();

  // The inbox transaction committed, the offset did not.
  expect(await inboxRow(event.id)).toMatchObject({ offset: String(offset), partition: 2, duplicates: 0 });
  expect(await committedOffset(2)).toBeLessThanOrEqual(offset);

  const successor = await start();
  await eventually(
    () => inboxRow(event.id),
    (r) => r?.duplicates === 1,
    30_000,
    'the redelivery to be skipped',
  );
  await eventually(
    () => committedOffset(2),
    (o) => o === offset + 1,
    10_000,
    'the offset commit',
  );
  await eventually(
    () => deliveriesOf(event.id).length,
    (n) => n >= 1,
    20_000,
    'the webhook',
  );
  await settle();
  expect(requestsOf(event.id)).toHaveLength(1);
  expect(await successor.counts()).toMatchObject({ processed: 0, duplicates: 1 });
});

it('dead-letters poison messages, skips and counts an unknown event type, commits past them and processes the next message', async () => {
  const c = await start();
  const good = ticketCreated(tenantId);
  const future = { ...ticketCreated(tenantId), type: 'ticket.archived.v9', data: { archivedBy: 'someone' } };
  const [meta] = await fx.producer.send({
    topic,
    acks: -1,
    messages: [
      { partition: 0, key: 'poison-1', value: 'this is { not json', headers: { source: 'test' } },
      { partition: 0, key: 'poison-2', value: JSON.stringify({ ...good, id: 'not-a-uuid' }) },
      // zod 4.6's safeParse throws on this one (its length checks compare the object's length with a number).
      {
        partition: 0,
        key: 'poison-3',
        value: JSON.stringify({ ...good, idempotencyKey: { length: { toString: 0 } } }),
      },
      { partition: 0, key: 'future', value: JSON.stringify(future) },
      toMessage(good, 0),
    ],
  });
  const first = Number(meta.baseOffset);

  await eventually(
    () => deliveriesOf(good.id).length,
    (n) => n >= 1,
    20_000,
    'the webhook of the message after the poison',
  );
  const { rows } = await db.query(
    'SELECT "offset"::int AS offset, key, value, headers, reason FROM ticket_events.consumer_dead_letters WHERE group_id = $1 AND topic = $2 ORDER BY "offset"',
    [groupId, topic],
  );
  expect(rows).toEqual([
    {
      offset: first,
      key: 'poison-1',
      value: 'this is { not json',
      headers: { source: 'test' },
      reason: expect.stringMatching(/^not JSON/),
    },
    {
      offset: first + 1,
      key: 'poison-2',
      value: expect.any(String),
      headers: {},
      reason: expect.stringMatching(/^not a TicketEvent/),
    },
    {
      offset: first + 2,
      key: 'poison-3',
      value: expect.any(String),
      headers: {},
      reason: expect.stringMatching(
        /^not a TicketEvent: idempotencyKey: Invalid input: expected string, received object/,
      ),
    },
  ]);
  await eventually(
    () => committedOffset(0),
    (o) => o === first + 5,
    10_000,
    'the offset commit past the poison',
  );
  // A newer event type is not poison: skipped (no notification, no dead letter) and counted.
  expect(await c.counts()).toMatchObject({ unknown: 1, deadLettered: 3 });
  const { rows: archived } = await db.query(
    'SELECT count(*)::int AS n FROM notifications WHERE group_id = $1 AND event_id = $2',
    [groupId, future.id],
  );
  expect(archived[0].n).toBe(0);
});

it("purges only this group's inbox rows older than the retention, on the kit's schedule", async () => {
  const other = uniqueName('other-group');
  const [oldId, newId, otherId] = [randomUUID(), randomUUID(), randomUUID()];
  await db.query(
    `INSERT INTO ticket_events.inbox_events (group_id, event_id, event_type, ticket_id, topic, partition, "offset", received_at) VALUES
       ($1, $2, 'ticket.created.v1', $2, 't', 0, 1, now() - interval '31 days'),
       ($1, $3, 'ticket.created.v1', $3, 't', 0, 2, now() - interval '29 days'),
       ($4, $5, 'ticket.created.v1', $5, 't', 0, 3, now() - interval '31 days')`,
    [groupId, oldId, newId, other, otherId],
  );
  try {
    await start({ inbox: { retentionMs: 30 * 86_400_000, purgeIntervalMs: 200 } });
    const left = async () =>
      (
        await db.query('SELECT event_id FROM ticket_events.inbox_events WHERE event_id = ANY($1) ORDER BY "offset"', [
          [oldId, newId, otherId],
        ])
      ).rows.map((r) => r.event_id);
    await eventually(left, (ids) => !ids.includes(oldId), 20_000, 'the purge of the 31-day-old row');
    expect(await left()).toEqual([newId, otherId]);
  } finally {
    await db.query('DELETE FROM ticket_events.inbox_events WHERE group_id = $1', [other]);
  }
});
