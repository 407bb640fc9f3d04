// Plans that do not depend on a fresh database's statistics (FIXED_PLANS_OPTION, libs/db). The hot paths'
// statements are named: each connection plans them once as a generic plan (after five runs) and keeps it
// until the table's statistics change. Planned while `notifications` is empty, the dispatcher's record
// statement (UPDATE ... FROM unnest(...)) became a hash join over a sequential scan, kept while the table
// grew, until autovacuum's first ANALYZE. Measured through PostgreSQL's own counters: heap blocks the
// statement reads after the table has grown, on a connection whose plan was made while it was empty.
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { createPrismaClient, withSessionOption, type PrismaClient } from '@tickets/db';
import { NotificationsRepository } from '../../libs/notifications/src/notifications.repository';
import { createRelayTestDatabase, waitFor, type RelayTestDatabase } from '../support/outbox-factory';

jest.setTimeout(120_000);

const ROWS = 5_000;
let database: RelayTestDatabase;
let db: Client;
let prisma: PrismaClient | undefined;

async function heapBlocks(): Promise<number> {
  const { rows } = await db.query<{ blocks: number }>(
    `SELECT (heap_blks_hit + coalesce(heap_blks_read, 0))::int AS blocks FROM pg_statio_user_tables WHERE relname = 'notifications'`,
  );
  return rows[0].blocks;
}

/** Rows inserted into `table` as the statistics show them (a backend reports its counts when it goes idle). */
async function inserted(table: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT n_tup_ins::int AS n FROM pg_stat_user_tables WHERE relname = $1',
    [table],
  );
  return rows[0].n;
}

/** Until the statistics show `n` rows inserted into `table` (both backends asked to report at once). */
async function settled(table: string, n: number): Promise<void> {
  await db.query('SELECT pg_stat_force_next_flush()');
  await prisma!.$executeRawUnsafe('SELECT pg_stat_force_next_flush()');
  await waitFor(`${n} inserts into ${table} in the statistics`, async () => (await inserted(table)) >= n);
}

const record = (id: string) => ({
  id,
  leaseToken: randomUUID(),
  status: 'delivered' as const,
  delayMs: 0,
  lastError: null,
  attemptNo: 1,
  statusCode: 204,
  error: null,
  durationMs: 3,
});

beforeAll(async () => {
  database = await createRelayTestDatabase('fixed_plans');
  db = new Client({ connectionString: database.url });
  await db.connect();
  // No automatic ANALYZE during the test: it would replace the cached plan (what autovacuum does, later).
  await db.query('ALTER TABLE notifications SET (autovacuum_enabled = false)');
});

afterAll(async () => {
  await prisma?.$disconnect();
  await db?.end();
  await database?.drop();
});

it("the dispatcher's record statement reads by key on a connection that planned it while the table was empty", async () => {
  // The generic plan from the first run on (PostgreSQL's plan cache switches to it after five runs when it
  // does not look costlier than the custom ones: with several ids per call, it does not).
  const url = withSessionOption(database.url, '-c plan_cache_mode=force_generic_plan');
  prisma = createPrismaClient(url, 1, 'fixed-plans-test', { fixedPlans: true });
  const repo = new NotificationsRepository(prisma);
  const insert = async (n: number) =>
    (
      await db.query<{ id: string }>(
        `INSERT INTO notifications (group_id, tenant_id, event_id, ticket_id, event_type, payload, status)
         SELECT 'g', gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'ticket.created.v1', repeat('x', 1500), 'pending'
           FROM generate_series(1, $1::int)
         RETURNING id`,
        [n],
      )
    ).rows;
  // Ten runs while the table holds a few rows (a fresh database's first deliveries): the one connection
  // caches its generic plan now.
  const first = await insert(10);
  for (const [i, row] of first.entries()) await repo.record([{ ...record(row.id), attemptNo: i + 1 }]);

  const rows = await insert(ROWS);
  const pages = (await db.query<{ pages: number }>(`SELECT pg_relation_size('notifications') / 8192 AS pages`)).rows[0]
    .pages;
  expect(Number(pages)).toBeGreaterThan(500); // what a sequential scan would read

  await settled('notifications', ROWS + first.length);
  await settled('notification_attempts', first.length);
  const before = await heapBlocks();
  await repo.record([
    { ...record(rows[0].id), attemptNo: 1 },
    { ...record(rows[1].id), attemptNo: 1 },
  ]);
  await settled('notification_attempts', first.length + 2);
  const read = (await heapBlocks()) - before;
  // Two index lookups (and the rows' updates): a handful of blocks, not the table.
  expect(read).toBeLessThan(50);
});
