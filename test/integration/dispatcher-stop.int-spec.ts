// A stopping webhook dispatcher does not sit on its leases: deliveries still in flight after
// stopTimeoutMs are abandoned, recorded, and due again at once, so a second dispatcher sends them
// straight away (same webhook-id) instead of after NOTIFY_LEASE (10 minutes here).
import { randomUUID } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'pg';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import { WebhookDispatcher } from '@tickets/notifications';
import { TEST_DATABASE_URL } from '../support/env';
import { newWebhookSecret, ticketCreated, uniqueName } from '../support/events-factory';
import { waitFor } from '../support/outbox-factory';

const N = 12;
const groupId = uniqueName('notifier-stop-it');
const secret = newWebhookSecret();
let prisma: PrismaClient;
let db: Pool;
let server: Server;
let url: string;
/** While true the receiver holds every request without answering (a receiver that hangs). */
let hang = true;
const held: ServerResponse[] = [];
const requests: Array<{ id: string; answered: boolean }> = [];

beforeAll(async () => {
  prisma = createPrismaClient(TEST_DATABASE_URL, 4, 'dispatcher-stop-it');
  db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  // An idle connection ended by the server (another job terminating sessions) is replaced; not this test's subject.
  db.on('error', () => undefined);
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests.push({ id: String(req.headers['webhook-id']), answered: !hang });
      if (hang) held.push(res);
      else res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
});

afterAll(async () => {
  held.forEach((res) => res.destroy());
  await db.query('DELETE FROM notifications WHERE group_id = $1', [groupId]);
  await Promise.allSettled([prisma?.$disconnect(), db?.end(), new Promise((r) => server.close(r))]);
});

const dispatcher = () =>
  new WebhookDispatcher({
    prisma,
    groupId,
    defaultSecret: secret,
    concurrency: 32,
    pollIntervalMs: 100,
    timeoutMs: 300_000, // the hanging receiver never times out on its own
    leaseMs: 600_000,
    stopTimeoutMs: 300,
  });

it('stop() abandons the deliveries still in flight and releases their leases: a second dispatcher sends them at once', async () => {
  const events = Array.from({ length: N }, () => ticketCreated(randomUUID()));
  await db.query(
    `INSERT INTO notifications (group_id, tenant_id, event_id, ticket_id, event_type, target_url, target_source, status, next_attempt_at, payload)
     SELECT $1, e.tenant_id, e.id, e.ticket_id, e.type, $2, 'default', 'pending', now(), e.payload
     FROM jsonb_to_recordset($3::jsonb) AS e(id uuid, tenant_id uuid, ticket_id uuid, type text, payload jsonb)`,
    [
      groupId,
      url,
      JSON.stringify(
        events.map((e) => ({ id: e.id, tenant_id: e.tenantId, ticket_id: e.ticketId, type: e.type, payload: e })),
      ),
    ],
  );
  const { rows: ids } = await db.query<{ id: string }>('SELECT id FROM notifications WHERE group_id = $1', [groupId]);

  const first = dispatcher();
  first.start();
  await waitFor(`${N} requests held by the receiver`, () => held.length === N);
  await first.stop();

  const { rows: afterStop } = await db.query<{
    status: string;
    lease_token: string | null;
    due: boolean;
    attempts: number;
  }>('SELECT status, lease_token, next_attempt_at <= now() AS due, attempts FROM notifications WHERE group_id = $1', [
    groupId,
  ]);
  expect(afterStop).toHaveLength(N);
  expect(afterStop.every((r) => r.status === 'pending' && r.lease_token === null && r.due && r.attempts === 1)).toBe(
    true,
  );
  const { rows: abandoned } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM notification_attempts a JOIN notifications n ON n.id = a.notification_id
      WHERE n.group_id = $1 AND a.attempt_no = 1 AND a.status_code IS NULL AND a.error LIKE 'abandoned%'`,
    [groupId],
  );
  expect(abandoned[0].n).toBe(N);

  hang = false;
  const second = dispatcher();
  second.start();
  try {
    // Without the release this waits for the 10-minute lease and the test times out.
    await waitFor(`${N} deliveries by the second dispatcher`, async () => {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM notifications WHERE group_id = $1 AND status = 'delivered'`,
        [groupId],
      );
      return rows[0].n === N;
    });
  } finally {
    await second.stop();
  }
  // The same webhook-ids, each sent twice: once abandoned, once answered.
  const answered = requests.filter((r) => r.answered).map((r) => r.id);
  expect(new Set(answered)).toEqual(new Set(ids.map((r) => r.id)));
  expect(answered).toHaveLength(N);
  expect(second.stats().delivered).toBe(N);
});
