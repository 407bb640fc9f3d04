// A database outage does not end the webhook dispatcher: its claims fail while PostgreSQL is
// unreachable (it says so once, and in `databaseReachable`), and once the database answers again
// it delivers what was waiting and what arrived meanwhile, each notification once.
//
// The outage is a TcpCutProxy between the dispatcher's Prisma client and PostgreSQL: connection
// refused and open sockets reset, while the shared server keeps serving everyone else.
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import { TcpCutProxy } from '@tickets/fault-proxy';
import { WebhookDispatcher } from '@tickets/notifications';
import { TEST_DATABASE_URL } from '../support/env';
import { newWebhookSecret, ticketCreated, uniqueName } from '../support/events-factory';
import { waitFor } from '../support/outbox-factory';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

jest.setTimeout(120_000);

const groupId = uniqueName('notifier-db-outage-it');
const secret = newWebhookSecret();
const target = new URL(TEST_DATABASE_URL);
const proxy = new TcpCutProxy({ host: target.hostname, port: Number(target.port || 5432) });
let prisma: PrismaClient;
let db: Pool;
let receiver: WebhookReceiver;
let dispatcher: WebhookDispatcher | undefined;

beforeAll(async () => {
  await proxy.listen();
  const viaProxy = new URL(TEST_DATABASE_URL);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  prisma = createPrismaClient(viaProxy.toString(), 4, 'dispatcher-db-outage-it');
  db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  // An idle connection ended by the server (another job terminating sessions) is replaced; not this test's subject.
  db.on('error', () => undefined);
  receiver = await startWebhookReceiver({ secret });
});

afterAll(async () => {
  await dispatcher?.stop();
  await proxy.cut();
  await db.query('DELETE FROM notifications WHERE group_id = $1', [groupId]);
  await Promise.allSettled([prisma?.$disconnect(), db?.end(), receiver?.close()]);
});

async function addNotifications(n: number): Promise<string[]> {
  const events = Array.from({ length: n }, () => ticketCreated(randomUUID()));
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO notifications (group_id, tenant_id, event_id, ticket_id, event_type, target_url, target_source, status, next_attempt_at, payload)
     SELECT $1, e.tenant_id, e.id, e.ticket_id, e.type, $2, 'default', 'pending', now(), e.payload
     FROM jsonb_to_recordset($3::jsonb) AS e(id uuid, tenant_id uuid, ticket_id uuid, type text, payload jsonb)
     RETURNING id`,
    [
      groupId,
      receiver.url,
      JSON.stringify(
        events.map((e) => ({ id: e.id, tenant_id: e.tenantId, ticket_id: e.ticketId, type: e.type, payload: e })),
      ),
    ],
  );
  return rows.map((r) => r.id);
}

const delivered = async () =>
  (
    await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM notifications WHERE group_id = $1 AND status = 'delivered'`,
      [groupId],
    )
  ).rows[0].n;

it('keeps claiming through a database outage and delivers everything once when it is back', async () => {
  const before = await addNotifications(5);
  dispatcher = new WebhookDispatcher({
    prisma,
    groupId,
    defaultSecret: secret,
    pollIntervalMs: 100,
    leaseMs: 60_000,
    timeoutMs: 5_000,
  });
  dispatcher.start();
  await waitFor('the first five delivered', async () => (await delivered()) === 5);
  expect(dispatcher.databaseReachable).toBe(true);

  await proxy.cut();
  const during = await addNotifications(5); // written by someone else while the dispatcher cannot reach the database
  await waitFor('the dispatcher to notice', () => !dispatcher!.databaseReachable);
  // Several more failed claims: still running, nothing sent.
  await new Promise((r) => setTimeout(r, 1_000));
  expect(receiver.deliveries.filter((d) => during.includes(d.id))).toHaveLength(0);

  await proxy.listen();
  await waitFor('everything delivered after the outage', async () => (await delivered()) === 10, 60_000);
  expect(dispatcher.databaseReachable).toBe(true);
  const ids = receiver.deliveries.map((d) => d.id);
  expect(new Set(ids)).toEqual(new Set([...before, ...during]));
  expect(ids).toHaveLength(10);
});
