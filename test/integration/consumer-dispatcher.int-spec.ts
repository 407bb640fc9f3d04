// The webhook dispatcher against a real HTTP receiver: retries with backoff, permanent failures,
// giving up, tenants without a target, two dispatchers racing for the same notifications, and the
// hand-over from the inbox statement (the notifications it leases are sent without a claim; a leased
// notification is fenced from other dispatchers like a claimed one and due again when its lease ends; the
// statement records the deliveries finished before it).
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import { WebhookDispatcher } from '@tickets/notifications';
import { NotificationsRepository } from '../../libs/notifications/src/notifications.repository';
import { InboxRepository } from '../../apps/consumer/src/inbox/inbox.repository';
import { webhooksCommand } from '../../apps/cli/src/webhooks.command';
import { setTenantWebhook } from '../support/webhooks-cli';
import { TEST_DATABASE_URL } from '../support/env';
import {
  TEST_NOTIFIER,
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

const topic = uniqueName('dispatch-it');
const groupId = uniqueName('notifier-dispatch-it');
const raceGroupId = uniqueName('notifier-race-it');
const leaseGroupId = uniqueName('notifier-lease-it');
const foldGroupId = uniqueName('notifier-fold-it');
const secret = newWebhookSecret();
const tenantId = randomUUID();
const bareTenantId = randomUUID();
const slug = uniqueName('dispatch-it');

let fx: Awaited<ReturnType<typeof kafkaFixture>>;
let prisma: PrismaClient;
let db: Pool;
let receiver: WebhookReceiver;
let consumer: TestNotifier;

const bodyEventId = (d: { json: unknown }) => (d.json as { data?: { id?: string } })?.data?.id;
const requestsOf = (eventId: string) => receiver.requests.filter((d) => bodyEventId(d) === eventId);

async function notification(eventId: string) {
  const { rows } = await db.query(
    'SELECT id, status, attempts, last_error FROM notifications WHERE group_id = $1 AND event_id = $2',
    [groupId, eventId],
  );
  return rows[0] as { id: string; status: string; attempts: number; last_error: string | null } | undefined;
}

async function attempts(notificationId: string) {
  const { rows } = await db.query(
    'SELECT attempt_no, status_code, error FROM notification_attempts WHERE notification_id = $1 ORDER BY attempt_no',
    [notificationId],
  );
  return rows as { attempt_no: number; status_code: number | null; error: string | null }[];
}

async function notificationsOf(group: string, eventIds: string[]) {
  const { rows } = await db.query<{ event_id: string; status: string; attempts: number; tries: number }>(
    `SELECT n.event_id, n.status, n.attempts, (SELECT count(*)::int FROM notification_attempts a WHERE a.notification_id = n.id) AS tries
       FROM notifications n WHERE n.group_id = $1 AND n.event_id = ANY($2::uuid[])`,
    [group, eventIds],
  );
  return rows;
}

const publish = (event: ReturnType<typeof ticketCreated>) =>
  fx.producer.send({ topic, acks: -1, messages: [toMessage(event)] });

beforeAll(async () => {
  fx = await kafkaFixture(topic, 1);
  prisma = createPrismaClient(TEST_DATABASE_URL, 8, 'dispatch-it');
  db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  receiver = await startWebhookReceiver({ secret });
  await db.query('INSERT INTO tenants (id, slug) VALUES ($1, $2), ($3, $4)', [
    tenantId,
    slug,
    bareTenantId,
    `${slug}-bare`,
  ]);
  expect(await setTenantWebhook(prisma, slug, receiver.url, secret)).toBe(0);
  // No NOTIFY_WEBHOOK_URL: only the tenant with an override has a target.
  consumer = await startTestNotifier({ topic, groupId });
});

afterAll(async () => {
  await consumer?.stop();
  await db.query('DELETE FROM notifications WHERE group_id = ANY($1)', [
    [groupId, raceGroupId, leaseGroupId, foldGroupId],
  ]);
  await db.query('DELETE FROM ticket_events.inbox_events WHERE group_id = ANY($1)', [
    [groupId, leaseGroupId, foldGroupId],
  ]);
  await db.query('DELETE FROM tenants WHERE id = ANY($1)', [[tenantId, bareTenantId]]);
  await fx?.admin.deleteGroups([groupId]).catch(() => undefined);
  await Promise.allSettled([fx?.close(), prisma?.$disconnect(), db?.end(), receiver?.close()]);
});

it('retries 5xx with backoff and delivers once; every attempt is recorded', async () => {
  receiver.failNext(3, 500);
  const event = ticketCreated(tenantId);
  await publish(event);

  const n = (await eventually(
    () => notification(event.id),
    (r) => r?.status === 'delivered',
    20_000,
    'delivery after three 500s',
  ))!;
  expect(n.attempts).toBe(4);
  expect(await attempts(n.id)).toEqual([
    { attempt_no: 1, status_code: 500, error: 'HTTP 500' },
    { attempt_no: 2, status_code: 500, error: 'HTTP 500' },
    { attempt_no: 3, status_code: 500, error: 'HTTP 500' },
    { attempt_no: 4, status_code: 204, error: null },
  ]);
  const seen = requestsOf(event.id);
  expect(seen.map((r) => r.status)).toEqual([500, 500, 500, 204]);
  // Same webhook-id on every retry, each attempt freshly signed and verified.
  expect(new Set(seen.map((r) => r.id))).toEqual(new Set([n.id]));
  expect(seen.every((r) => r.verified)).toBe(true);
  // Backoff: the retries were spread out, not sent back to back (50 ms base, randomized 50-100 %).
  expect(seen[3].at - seen[0].at).toBeGreaterThanOrEqual(25 + 50 + 100);
});

it('a 4xx other than 408/429 is dead at once', async () => {
  receiver.failNext(1, 422);
  const event = ticketCreated(tenantId);
  await publish(event);

  const n = (await eventually(
    () => notification(event.id),
    (r) => r?.status === 'dead',
    20_000,
    'dead notification',
  ))!;
  expect(n.last_error).toBe('HTTP 422: not retried (the receiver rejected the request)');
  expect(await attempts(n.id)).toEqual([{ attempt_no: 1, status_code: 422, error: 'HTTP 422' }]);
});

it('gives up after NOTIFY_MAX_ATTEMPTS retryable failures (429 and 503)', async () => {
  receiver.failNext(1, 429);
  receiver.failNext(10, 503);
  const event = ticketCreated(tenantId);
  await publish(event);

  const n = (await eventually(
    () => notification(event.id),
    (r) => r?.status === 'dead',
    20_000,
    'dead notification',
  ))!;
  expect(n.attempts).toBe(TEST_NOTIFIER.maxAttempts);
  expect(n.last_error).toBe(`HTTP 503: gave up after ${TEST_NOTIFIER.maxAttempts} attempts`);
  expect((await attempts(n.id)).map((a) => a.status_code)).toEqual([429, 503, 503, 503]);
  receiver.clearFailures();
  await new Promise((r) => setTimeout(r, 300));
  expect(requestsOf(event.id)).toHaveLength(TEST_NOTIFIER.maxAttempts);
});

it('records a notification as skipped when neither the tenant nor NOTIFY_WEBHOOK_URL gives a target', async () => {
  const event = ticketCreated(bareTenantId);
  await publish(event);
  const n = (await eventually(
    () => notification(event.id),
    (r) => r !== undefined,
    20_000,
    'the notification',
  ))!;
  expect(n).toMatchObject({ status: 'skipped', attempts: 0, last_error: expect.stringMatching(/no webhook target/) });
  expect(requestsOf(event.id)).toHaveLength(0);
});

it('two dispatchers on the same group never send the same notification twice (SKIP LOCKED + lease)', async () => {
  const events = Array.from({ length: 40 }, () => ticketCreated(randomUUID()));
  await db.query(
    `INSERT INTO notifications (group_id, tenant_id, event_id, ticket_id, event_type, target_url, target_source, status, next_attempt_at, payload)
     SELECT $1, e.tenant_id, e.id, e.ticket_id, e.type, $2, 'default', 'pending', now(), e.payload
     FROM jsonb_to_recordset($3::jsonb) AS e(id uuid, tenant_id uuid, ticket_id uuid, type text, payload jsonb)`,
    [
      raceGroupId,
      receiver.url,
      JSON.stringify(
        events.map((e) => ({ id: e.id, tenant_id: e.tenantId, ticket_id: e.ticketId, type: e.type, payload: e })),
      ),
    ],
  );
  const dispatchers = [1, 2].map(
    () =>
      new WebhookDispatcher({
        prisma,
        groupId: raceGroupId,
        defaultSecret: secret,
        ...TEST_NOTIFIER,
        pollIntervalMs: 20,
      }),
  );
  dispatchers.forEach((d) => d.start());
  try {
    const ids = new Set(events.map((e) => e.id));
    await eventually(
      () => receiver.deliveries.filter((d) => ids.has(bodyEventId(d)!)).length,
      (n) => n >= 40,
      20_000,
      '40 deliveries',
    );
    await new Promise((r) => setTimeout(r, 300));
    const seen = receiver.requests.filter((d) => ids.has(bodyEventId(d)!));
    expect(seen).toHaveLength(40);
    expect(new Set(seen.map((r) => r.id)).size).toBe(40);
    // Both took part (each claims at most `concurrency` at a time).
    expect(dispatchers.map((d) => d.stats().delivered).every((n) => n > 0)).toBe(true);
    const { rows } = await db.query(
      `SELECT count(*)::int AS n, max(a.attempt_no) AS max FROM notification_attempts a JOIN notifications n ON n.id = a.notification_id WHERE n.group_id = $1`,
      [raceGroupId],
    );
    expect(rows[0]).toEqual({ n: 40, max: 1 });
  } finally {
    await Promise.all(dispatchers.map((d) => d.stop()));
  }
});

it('webhooks CLI: reads the secret from a file or stdin (never the command line), validates it, shows the target masked, clears the override', async () => {
  const lines: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'webhooks-cli-'));
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text, { mode: 0o600 });
    return join(dir, name);
  };
  const good = file('good', `${secret}\n`);
  const run = (...argv: string[]) => webhooksCommand(argv, { prisma, out: (l) => lines.push(l), err: () => undefined });
  const bare = `${slug}-bare`;
  expect(await run('set', '--tenant', 'no-such-tenant-slug', '--url', 'https://x.test/h', '--secret-file', good)).toBe(
    1,
  );
  expect(await run('set', '--tenant', bare, '--url', 'ftp://x.test/h', '--secret-file', good)).toBe(2);
  expect(await run('set', '--tenant', bare, '--url', 'https://x.test/h', '--secret-file', file('short', 'short'))).toBe(
    2,
  );
  expect(
    await run('set', '--tenant', bare, '--url', 'https://x.test/h', '--secret-file', file('bad', 'whsec_not base64!!')),
  ).toBe(2);
  expect(await run('set', '--tenant', bare, '--url', 'https://x.test/h', '--secret-file', join(dir, 'missing'))).toBe(
    2,
  );
  expect(lines.at(-1)).toMatch(/--secret-file .*missing cannot be read/);
  expect(await run('set', '--tenant', bare, '--url', 'https://x.test/h')).toBe(2);
  expect(await run('set', '--tenant', bare, '--url', 'https://x.test/h', '--secret', secret)).toBe(2);
  expect(lines.at(-1)).toMatch(/--secret is not taken: a secret on the command line shows in the process list/);
  expect(await run('set', '--tenant', bare, '--url', 'https://x.test/h', '--secret-file', good)).toBe(0);
  lines.length = 0;
  expect(await run('show', '--tenant', bare)).toBe(0);
  expect(lines[0]).toContain('https://x.test/h');
  expect(lines[0]).toContain(`(${secret.length} chars), encrypted with key dev`);
  expect(lines[0]).not.toContain(secret.slice(6, 14));
  expect(await run('clear', '--tenant', bare)).toBe(0);
  expect(lines.at(-1)).toMatch(/override cleared \(NOTIFY_WEBHOOK_URL is not set in this environment/);
  const { rows } = await db.query('SELECT webhook_url, webhook_secret FROM tenants WHERE id = $1', [bareTenantId]);
  expect(rows).toEqual([{ webhook_url: null, webhook_secret: null }]);
  rmSync(dir, { recursive: true, force: true });
});

it('the notifications a chunk creates are leased to the dispatcher by the same statement and sent without a claim', async () => {
  await eventually(
    () => consumer.dispatcher.stats()!.inFlight,
    (n) => n === 0,
    20_000,
    'no delivery in flight',
  );
  const before = consumer.dispatcher.stats()!;
  const events = Array.from({ length: 3 }, () => ticketCreated(tenantId));
  for (const e of events) await publish(e);
  const ids = events.map((e) => e.id);
  await eventually(
    () => notificationsOf(groupId, ids),
    (rows) => rows.length === 3 && rows.every((r) => r.status === 'delivered' && r.tries === 1),
    20_000,
    '3 delivered',
  );
  // Three events, four free slots: every one of them went straight from the statement to a send.
  await eventually(
    () => consumer.dispatcher.stats()!.delivered - before.delivered,
    (n) => n === 3,
    20_000,
    'delivered counted',
  );
  expect(consumer.dispatcher.stats()!.handedOver - before.handedOver).toBe(3);
  expect((await notificationsOf(groupId, ids)).map((r) => r.attempts)).toEqual([1, 1, 1]);
  expect(receiver.requests.filter((d) => ids.includes(bodyEventId(d)!))).toHaveLength(3);
});

it('a chunk larger than the free slots: the statement leases as many as are free, the rest are claimed; a racing dispatcher sends none twice', async () => {
  await eventually(
    () => consumer.dispatcher.stats()!.inFlight,
    (n) => n === 0,
    20_000,
    'no delivery in flight',
  );
  const before = consumer.dispatcher.stats()!.handedOver;
  const racer = new WebhookDispatcher({ prisma, groupId, defaultSecret: secret, ...TEST_NOTIFIER, pollIntervalMs: 20 });
  racer.start();
  try {
    const events = Array.from({ length: 30 }, () => ticketCreated(tenantId));
    // One send, one partition: one fetch, one chunk of 30 against TEST_NOTIFIER.concurrency (4) free slots.
    await fx.producer.send({ topic, acks: -1, messages: events.map((e) => toMessage(e)) });
    const ids = events.map((e) => e.id);
    await eventually(
      () => notificationsOf(groupId, ids),
      (rows) => rows.length === 30 && rows.every((r) => r.status === 'delivered'),
      20_000,
      '30 delivered',
    );
    expect(consumer.dispatcher.stats()!.handedOver - before).toBe(TEST_NOTIFIER.concurrency);
    const seen = receiver.requests.filter((d) => ids.includes(bodyEventId(d)!));
    expect(seen).toHaveLength(30);
    expect(new Set(seen.map(bodyEventId)).size).toBe(30);
    expect((await notificationsOf(groupId, ids)).every((r) => r.attempts === 1 && r.tries === 1)).toBe(true);
  } finally {
    await racer.stop();
  }
});

it('a leased notification is invisible to claims until its lease ends, then due again (its dispatcher died before sending)', async () => {
  const events = Array.from({ length: 3 }, () => ticketCreated(randomUUID()));
  const inbox = new InboxRepository();
  const lease = { token: randomUUID(), limit: 2, leaseMs: 1_500 };
  const r = await inbox.recordBatch(db, {
    groupId: leaseGroupId,
    topic,
    partition: 0,
    defaultWebhookUrl: receiver.url,
    events,
    offsets: ['0', '1', '2'],
    values: events.map((e) => Buffer.from(JSON.stringify(e))),
    invalid: [],
    lease,
  });
  expect(r).toMatchObject({ processed: 3, pending: 3 });
  expect(r.leased).toHaveLength(2);
  const byEvent = new Map(events.map((e) => [e.id, e]));
  for (const n of r.leased) {
    expect(n).toMatchObject({
      event_type: 'ticket.created.v1',
      target_url: receiver.url,
      target_source: 'default',
      attempts: 1,
      lease_token: lease.token,
      tenant_secret: null,
    });
    expect(JSON.parse(n.payload)).toEqual(byEvent.get((n as unknown as { event_id: string }).event_id));
  }
  // Nobody sends the leased ones: a claim sees only the third notification.
  const repo = new NotificationsRepository(prisma);
  const first = await repo.claim(leaseGroupId, 10, 60_000);
  expect(first).toHaveLength(1);
  expect(r.leased.map((n) => n.id)).not.toContain(first[0].id);
  // Once the lease has ended they are due again, with the attempt of the lost lease counted.
  const later = await eventually(
    () => repo.claim(leaseGroupId, 10, 60_000),
    (rows) => rows.length === 2,
    20_000,
    'the leased notifications due again',
  );
  expect(later.map((n) => n.id).sort()).toEqual(r.leased.map((n) => n.id).sort());
  expect(later.map((n) => n.attempts)).toEqual([2, 2]);
});

it('a dispatcher stopped while the inbox statement ran gives the leases back unsent: due now, the attempt un-counted', async () => {
  const events = Array.from({ length: 2 }, () => ticketCreated(randomUUID()));
  const dispatcher = new WebhookDispatcher({ prisma, groupId: leaseGroupId, defaultSecret: secret, ...TEST_NOTIFIER });
  dispatcher.start();
  const r = await dispatcher.handOver(events.length, async (lease) => {
    expect(lease).toMatchObject({ limit: 2, leaseMs: TEST_NOTIFIER.leaseMs });
    await dispatcher.stop(); // e.g. SIGTERM arrives while the statement runs
    return new InboxRepository().recordBatch(db, {
      groupId: leaseGroupId,
      topic,
      partition: 1,
      defaultWebhookUrl: receiver.url,
      events,
      offsets: ['10', '11'],
      values: events.map((e) => Buffer.from(JSON.stringify(e))),
      invalid: [],
      lease,
    });
  });
  expect(r.leased).toHaveLength(2);
  const ids = events.map((e) => e.id);
  const rows = await eventually(
    async () =>
      (
        await db.query(
          `SELECT lease_token, attempts, next_attempt_at <= now() AS due FROM notifications WHERE group_id = $1 AND event_id = ANY($2::uuid[])`,
          [leaseGroupId, ids],
        )
      ).rows,
    (rs) => rs.length === 2 && rs.every((x) => x.lease_token === null),
    20_000,
    'leases given back',
  );
  expect(rows).toEqual([
    { lease_token: null, attempts: 0, due: true },
    { lease_token: null, attempts: 0, due: true },
  ]);
  expect(dispatcher.stats().handedOver).toBe(0);
  expect(receiver.requests.filter((d) => ids.includes(bodyEventId(d)!))).toHaveLength(0);
});

it('the next inbox statement records the deliveries finished before it; a result it cannot write does not fail the chunk', async () => {
  // Neither a flush nor a claim would record anything within this test: only the inbox statements can.
  const dispatcher = new WebhookDispatcher({
    prisma,
    groupId: foldGroupId,
    defaultSecret: secret,
    ...TEST_NOTIFIER,
    pollIntervalMs: 600_000,
    recordFlushMs: 600_000,
    recordBatchSize: 1_000,
  });
  const inbox = new InboxRepository();
  let offset = 0;
  const chunk = (events: ReturnType<typeof ticketCreated>[]) =>
    dispatcher.handOver(
      events.length,
      (lease, records) =>
        inbox.recordBatch(db, {
          groupId: foldGroupId,
          topic,
          partition: 0,
          defaultWebhookUrl: null,
          events,
          offsets: events.map(() => String(offset++)),
          values: events.map((e) => Buffer.from(JSON.stringify(e))),
          invalid: [],
          lease,
          records,
        }),
      { records: true },
    );
  const finished = (n: number) =>
    eventually(
      () => dispatcher.stats().unrecorded,
      (u) => u === n,
      20_000,
      `${n} deliveries finished, not recorded`,
    );
  dispatcher.start();
  try {
    const first = [ticketCreated(tenantId), ticketCreated(tenantId)];
    expect((await chunk(first)).leased).toHaveLength(2);
    await finished(2);
    const firstIds = first.map((e) => e.id);
    expect(receiver.requests.filter((d) => firstIds.includes(bodyEventId(d)!))).toHaveLength(2);
    // Sent, and still as leased: attempt 1 under the lease, no attempt row.
    const sent = await notificationsOf(foldGroupId, firstIds);
    expect(sent.map((r) => [r.status, r.attempts, r.tries])).toEqual([
      ['pending', 1, 0],
      ['pending', 1, 0],
    ]);

    const second = [ticketCreated(tenantId)];
    expect((await chunk(second)).leased).toHaveLength(1);
    // Recorded by the statement of the second chunk, before it returned.
    const rows = await notificationsOf(foldGroupId, firstIds);
    expect(rows).toHaveLength(2);
    expect(rows.every((r) => r.status === 'delivered' && r.attempts === 1 && r.tries === 1)).toBe(true);
    await eventually(
      () => dispatcher.stats(),
      (st) => st.recordedWithChunks === 2 && st.delivered === 2,
      20_000,
      'counted as delivered',
    );

    // A result the statement cannot write (its notification deleted meanwhile: the attempt row's foreign key
    // fails the whole statement). The chunk still goes through: the statement runs again without the result,
    // which is left to a record statement of its own (failing too; the delivery is not counted).
    await finished(1);
    await db.query('DELETE FROM notifications WHERE group_id = $1 AND event_id = $2', [foldGroupId, second[0].id]);
    const third = [ticketCreated(tenantId)];
    const r = await chunk(third);
    expect(r).toMatchObject({ processed: 1, pending: 1 });
    expect(r.leased).toHaveLength(1);
    await finished(1); // the third's delivery; the second's result is gone
    expect(dispatcher.stats()).toMatchObject({ recordedWithChunks: 2, delivered: 2 });
    expect(await notificationsOf(foldGroupId, [second[0].id])).toEqual([]);
    expect(receiver.requests.filter((d) => [second[0].id, third[0].id].includes(bodyEventId(d)!))).toHaveLength(2);
    await dispatcher.stop(); // records what is left
    expect(await notificationsOf(foldGroupId, [third[0].id])).toEqual([
      expect.objectContaining({ status: 'delivered', attempts: 1, tries: 1 }),
    ]);
    expect(dispatcher.stats()).toMatchObject({ recordedWithChunks: 2, delivered: 3, unrecorded: 0 });
  } finally {
    await dispatcher.stop();
  }
});
