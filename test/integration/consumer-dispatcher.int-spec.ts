// The webhook dispatcher against a real HTTP receiver: retries with backoff, permanent failures,
// giving up, tenants without a target, and two dispatchers racing for the same notifications.
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import { WebhookDispatcher } from '@tickets/notifications';
import { webhooksCommand } from '../../apps/cli/src/webhooks.command';
import { TEST_DATABASE_URL } from '../support/env';
import { TEST_NOTIFIER, eventually, kafkaFixture, newWebhookSecret, ticketCreated, toMessage, uniqueName } from '../support/events-factory';
import { startTestNotifier, type TestNotifier } from '../support/notifier';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

jest.setTimeout(60_000);

const topic = uniqueName('dispatch-it');
const groupId = uniqueName('notifier-dispatch-it');
const raceGroupId = uniqueName('notifier-race-it');
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
  const { rows } = await db.query('SELECT id, status, attempts, last_error FROM notifications WHERE group_id = $1 AND event_id = $2', [groupId, eventId]);
  return rows[0] as { id: string; status: string; attempts: number; last_error: string | null } | undefined;
}

async function attempts(notificationId: string) {
  const { rows } = await db.query('SELECT attempt_no, status_code, error FROM notification_attempts WHERE notification_id = $1 ORDER BY attempt_no', [notificationId]);
  return rows as { attempt_no: number; status_code: number | null; error: string | null }[];
}

const publish = (event: ReturnType<typeof ticketCreated>) => fx.producer.send({ topic, acks: -1, messages: [toMessage(event)] });

beforeAll(async () => {
  fx = await kafkaFixture(topic, 1);
  prisma = createPrismaClient(TEST_DATABASE_URL, 8, 'dispatch-it');
  db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  receiver = await startWebhookReceiver({ secret });
  await db.query('INSERT INTO tenants (id, slug) VALUES ($1, $2), ($3, $4)', [tenantId, slug, bareTenantId, `${slug}-bare`]);
  expect(await webhooksCommand(['set', '--tenant', slug, '--url', receiver.url, '--secret', secret], { prisma, out: () => undefined })).toBe(0);
  // No NOTIFY_WEBHOOK_URL: only the tenant with an override has a target.
  consumer = await startTestNotifier({ topic, groupId });
});

afterAll(async () => {
  await consumer?.stop();
  await db.query('DELETE FROM notifications WHERE group_id = ANY($1)', [[groupId, raceGroupId]]);
  await db.query('DELETE FROM inbox_events WHERE group_id = $1', [groupId]);
  await db.query('DELETE FROM tenants WHERE id = ANY($1)', [[tenantId, bareTenantId]]);
  await fx?.admin.deleteGroups([groupId]).catch(() => undefined);
  await Promise.allSettled([fx?.close(), prisma?.$disconnect(), db?.end(), receiver?.close()]);
});

it('retries 5xx with backoff and delivers once; every attempt is recorded', async () => {
  receiver.failNext(3, 500);
  const event = ticketCreated(tenantId);
  await publish(event);

  const n = (await eventually(() => notification(event.id), (r) => r?.status === 'delivered', 20_000, 'delivery after three 500s'))!;
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

  const n = (await eventually(() => notification(event.id), (r) => r?.status === 'dead', 20_000, 'dead notification'))!;
  expect(n.last_error).toBe('HTTP 422: not retried (the receiver rejected the request)');
  expect(await attempts(n.id)).toEqual([{ attempt_no: 1, status_code: 422, error: 'HTTP 422' }]);
});

it('gives up after NOTIFY_MAX_ATTEMPTS retryable failures (429 and 503)', async () => {
  receiver.failNext(1, 429);
  receiver.failNext(10, 503);
  const event = ticketCreated(tenantId);
  await publish(event);

  const n = (await eventually(() => notification(event.id), (r) => r?.status === 'dead', 20_000, 'dead notification'))!;
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
  const n = (await eventually(() => notification(event.id), (r) => r !== undefined, 20_000, 'the notification'))!;
  expect(n).toMatchObject({ status: 'skipped', attempts: 0, last_error: expect.stringMatching(/no webhook target/) });
  expect(requestsOf(event.id)).toHaveLength(0);
});

it('two dispatchers on the same group never send the same notification twice (SKIP LOCKED + lease)', async () => {
  const events = Array.from({ length: 40 }, () => ticketCreated(randomUUID()));
  await db.query(
    `INSERT INTO notifications (group_id, tenant_id, event_id, ticket_id, event_type, target_url, target_source, status, next_attempt_at, payload)
     SELECT $1, e.tenant_id, e.id, e.ticket_id, e.type, $2, 'default', 'pending', now(), e.payload
     FROM jsonb_to_recordset($3::jsonb) AS e(id uuid, tenant_id uuid, ticket_id uuid, type text, payload jsonb)`,
    [raceGroupId, receiver.url, JSON.stringify(events.map((e) => ({ id: e.id, tenant_id: e.tenantId, ticket_id: e.ticketId, type: e.type, payload: e })))],
  );
  const dispatchers = [1, 2].map(() => new WebhookDispatcher({ prisma, groupId: raceGroupId, defaultSecret: secret, ...TEST_NOTIFIER, pollIntervalMs: 20 }));
  dispatchers.forEach((d) => d.start());
  try {
    const ids = new Set(events.map((e) => e.id));
    await eventually(() => receiver.deliveries.filter((d) => ids.has(bodyEventId(d)!)).length, (n) => n >= 40, 20_000, '40 deliveries');
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

it('webhooks CLI: validates its input, shows the target with the secret masked, clears the override', async () => {
  const lines: string[] = [];
  const run = (...argv: string[]) => webhooksCommand(argv, { prisma, out: (l) => lines.push(l) });
  expect(await run('set', '--tenant', 'no-such-tenant-slug', '--url', 'https://x.test/h', '--secret', secret)).toBe(1);
  expect(await run('set', '--tenant', `${slug}-bare`, '--url', 'ftp://x.test/h', '--secret', secret)).toBe(2);
  expect(await run('set', '--tenant', `${slug}-bare`, '--url', 'https://x.test/h', '--secret', 'short')).toBe(2);
  expect(await run('set', '--tenant', `${slug}-bare`, '--url', 'https://x.test/h', '--secret', 'whsec_not base64!!')).toBe(2);
  expect(await run('set', '--tenant', `${slug}-bare`, '--url', 'https://x.test/h')).toBe(2);
  expect(await run('set', '--tenant', `${slug}-bare`, '--url', 'https://x.test/h', '--secret', secret)).toBe(0);
  lines.length = 0;
  expect(await run('show', '--tenant', `${slug}-bare`)).toBe(0);
  expect(lines[0]).toContain('https://x.test/h');
  expect(lines[0]).not.toContain(secret.slice(6, 14));
  expect(await run('clear', '--tenant', `${slug}-bare`)).toBe(0);
  const { rows } = await db.query('SELECT webhook_url, webhook_secret FROM tenants WHERE id = $1', [bareTenantId]);
  expect(rows).toEqual([{ webhook_url: null, webhook_secret: null }]);
});
