// Plans that do not depend on a fresh database's statistics (FIXED_PLANS_OPTION, libs/db). The hot paths'
// statements are named: each connection plans them once as a generic plan (after five runs) and keeps it
// until the table's statistics change. Planned while `notifications` is empty, the dispatcher's record
// statement (UPDATE ... FROM unnest(...)) became a hash join over a sequential scan, kept while the table
// grew, until autovacuum's first ANALYZE. The notifier's inbox statement, on the kit's pool, probed the
// inbox with a sequential scan per event the same way. Measured through PostgreSQL's own counters: blocks
// the statement reads after the table has grown, on a connection whose plan was made while it was empty.
import { randomUUID } from 'node:crypto';
import { Client, Pool } from 'pg';
import { loadConfig, loadEventConsumerConfig } from '@tickets/config';
import { createPrismaClient, withSessionOption, type PrismaClient } from '@tickets/db';
import { notifierOptions } from '../../apps/consumer/src/consumer.app';
import { InboxRepository } from '../../apps/consumer/src/inbox/inbox.repository';
import { NotificationsRepository } from '../../libs/notifications/src/notifications.repository';
import { ticketCreated } from '../support/events-factory';
import { createRelayTestDatabase, waitFor, type RelayTestDatabase } from '../support/outbox-factory';

jest.setTimeout(120_000);

const ROWS = 5_000;
let database: RelayTestDatabase;
let db: Client;
let prisma: PrismaClient | undefined;
/** The kit's pool for the notifier, one connection (the one that caches the plan). */
let inboxSession: Pool | undefined;

/** `schema.table` (default schema public) as the statistics views name it. */
function relation(qualified: string): [schema: string, table: string] {
  const [schema, table] = qualified.includes('.') ? qualified.split('.') : ['public', qualified];
  return [schema, table];
}

/** Blocks of `table` read so far: its heap, and with `indexes` its indexes too (a full index scan counts then). */
async function blocksRead(table: string, indexes = false): Promise<number> {
  const idx = indexes ? ' + coalesce(idx_blks_hit, 0) + coalesce(idx_blks_read, 0)' : '';
  const { rows } = await db.query<{ blocks: number }>(
    `SELECT (heap_blks_hit + coalesce(heap_blks_read, 0)${idx})::int AS blocks
       FROM pg_statio_user_tables WHERE schemaname = $1 AND relname = $2`,
    relation(table),
  );
  return rows[0].blocks;
}

/**
 * Until the statistics show `n` rows written to `table` (the sum of the `counted` columns of
 * pg_stat_user_tables): this backend and the statement's (`flush` runs on it) are asked to report at
 * once; a backend otherwise reports its counts when it goes idle.
 */
async function settled(
  table: string,
  n: number,
  flush: (sql: string) => Promise<unknown>,
  counted: Array<'n_tup_ins' | 'n_tup_upd'> = ['n_tup_ins'],
): Promise<void> {
  await db.query('SELECT pg_stat_force_next_flush()');
  await flush('SELECT pg_stat_force_next_flush()');
  await waitFor(`${n} rows written to ${table} in the statistics`, async () => {
    const { rows } = await db.query<{ n: number }>(
      `SELECT (${counted.join(' + ')})::int AS n FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2`,
      relation(table),
    );
    return rows[0].n >= n;
  });
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
  await db.query('ALTER TABLE ticket_events.inbox_events SET (autovacuum_enabled = false)');
});

afterAll(async () => {
  await inboxSession?.end();
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

  const flush = (sql: string) => prisma!.$executeRawUnsafe(sql);
  await settled('notifications', ROWS + first.length, flush);
  await settled('notification_attempts', first.length, flush);
  const before = await blocksRead('notifications');
  await repo.record([
    { ...record(rows[0].id), attemptNo: 1 },
    { ...record(rows[1].id), attemptNo: 1 },
  ]);
  await settled('notification_attempts', first.length + 2, flush);
  const read = (await blocksRead('notifications')) - before;
  // Two index lookups (and the rows' updates): a handful of blocks, not the table.
  expect(read).toBeLessThan(50);
});

it("the notifier's inbox statement probes the inbox by key on a kit connection that planned it while the inbox was empty", async () => {
  const groupId = 'fixed-plans-notifier';
  // The URL the notifier's kit pool connects with, as the consumer app builds it; the generic plan from the first run on.
  const config = loadConfig({ DATABASE_URL: database.url, NOTIFIER_GROUP_ID: groupId });
  const kitUrl = notifierOptions(config, loadEventConsumerConfig({})).databaseUrl;
  inboxSession = new Pool({
    connectionString: withSessionOption(kitUrl, '-c plan_cache_mode=force_generic_plan'),
    max: 1,
    idleTimeoutMillis: 0,
  });
  const repo = new InboxRepository();
  const tenantId = randomUUID();
  let offset = 0;
  const record = (events: ReturnType<typeof ticketCreated>[]) =>
    repo.recordBatch(inboxSession!, {
      groupId,
      topic: 'ticket-events',
      partition: 0,
      defaultWebhookUrl: 'http://127.0.0.1:9/hooks',
      events,
      offsets: events.map(() => String(offset++)),
      values: events.map((e) => Buffer.from(JSON.stringify(e))),
      invalid: [],
    });
  // Ten chunks while the inbox holds a few rows (a fresh database's first events): the generic plan,
  // made on the first of them, is cached now.
  const early = Array.from({ length: 10 }, () => ticketCreated(tenantId));
  for (const e of early) expect((await record([e])).processed).toBe(1);

  const ROWS_INBOX = 20_000;
  await db.query(
    `INSERT INTO ticket_events.inbox_events (group_id, event_id, event_type, ticket_id, topic, partition, "offset", duplicates)
     SELECT $1, gen_random_uuid(), 'ticket.created.v1', gen_random_uuid(), 'ticket-events', 1, i, 0 FROM generate_series(1, $2::int) i`,
    [groupId, ROWS_INBOX],
  );
  const pages = (
    await db.query<{ pages: string }>(`SELECT pg_relation_size('ticket_events.inbox_events') / 8192 AS pages`)
  ).rows[0].pages;
  expect(Number(pages)).toBeGreaterThan(300); // what a sequential scan would read

  const inbox = 'ticket_events.inbox_events';
  const flush = (sql: string) => inboxSession!.query(sql);
  const counted: Array<'n_tup_ins' | 'n_tup_upd'> = ['n_tup_ins', 'n_tup_upd'];
  let written = ROWS_INBOX + early.length;
  await settled(inbox, written, flush, counted);
  // Two new events and a copy of an early one (the duplicate path updates its inbox row).
  const before = await blocksRead(inbox, true);
  const r = await record([ticketCreated(tenantId), ticketCreated(tenantId), early[3]]);
  expect(r).toMatchObject({ processed: 2, skippedDuplicate: 1 });
  written += 3;
  await settled(inbox, written, flush, counted);
  const read = (await blocksRead(inbox, true)) - before;
  // Three probes, two inserts and one update through the primary key (33 blocks, measured), not the
  // table: one sequential scan alone reads every page (more than 300), the index walk 20,000 blocks.
  expect(read).toBeLessThan(100);
});
