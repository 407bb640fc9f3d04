// Plans that do not depend on a fresh database's statistics (FIXED_PLANS_OPTION and GENERIC_PLANS_OPTION,
// libs/db). The hot paths' statements are named, so each connection can keep a plan per statement. Planned
// while `notifications` was empty, the dispatcher's record statement (UPDATE ... FROM unnest(...)) became a hash
// join over a sequential scan, and its claim an update walking the whole primary key, each kept while the table
// grew. The notifier's inbox statement, on the kit's pool, probed the inbox with a sequential scan per event the
// same way. And left to choose between a generic and a custom plan, PostgreSQL planned the inbox statement with a
// lease afresh on every call once the tables had statistics. Measured through PostgreSQL's own counters: blocks
// a statement reads after the table has grown, on a connection whose plan was made while it was empty or held a
// few rows, and the plans each connection ran (pg_prepared_statements). The pools are the notifier's own, built
// as the consumer builds them, with one connection each (the one that caches the plans).
import { randomUUID } from 'node:crypto';
import { Client, Pool } from 'pg';
import { loadConfig, loadEventConsumerConfig } from '@tickets/config';
import type { PrismaClient } from '@tickets/db';
import { createLogger } from '@tickets/logger';
import { Database } from '../../apps/ticket-api/src/infra/database';
import { LeaderLockRepository } from '../../libs/outbox/src/leader-lock.repository';
import { withRelaySessionOptions } from '../../libs/outbox/src/outbox.repository';
import { notifierOptions } from '../../apps/consumer/src/consumer.app';
import { NotifierDispatcherService } from '../../apps/consumer/src/notifier-dispatcher.service';
import { InboxRepository } from '../../apps/consumer/src/inbox/inbox.repository';
import { NotificationsRepository, type AttemptRecord } from '../../libs/notifications/src/notifications.repository';
import { ticketCreated } from '../support/events-factory';
import { createRelayTestDatabase, waitFor, type RelayTestDatabase } from '../support/outbox-factory';

jest.setTimeout(120_000);

const ROWS = 5_000;
let database: RelayTestDatabase;
let db: Client;
let prisma: PrismaClient | undefined;
/** The kit's pool for the notifier, one connection (the one that caches the plan). */
let inboxSession: Pool | undefined;

/** The notifier's configuration on the test database, its pools one connection each. */
const notifierConfig = (groupId: string) =>
  loadConfig({ DATABASE_URL: database.url, NOTIFIER_GROUP_ID: groupId, DB_POOL_MAX: '1' });

/** The dispatcher's Prisma client, as the consumer creates it (no dispatcher running). */
const dispatcherClient = (groupId: string): PrismaClient =>
  new NotifierDispatcherService(notifierConfig(groupId), groupId, false).prisma;

/**
 * Runs the notifier's inbox statement on `pool` for a chunk of events of partition 0, at the next offsets; with
 * `leased`, the shape that leases the new notifications to the dispatcher (its usual one), else the other; with
 * `records`, the shape that also records the dispatcher's finished deliveries.
 */
function chunkRecorder(pool: Pool, groupId: string) {
  const repo = new InboxRepository();
  let offset = 0;
  return (events: ReturnType<typeof ticketCreated>[], leased: boolean, records?: AttemptRecord[]) =>
    repo.recordBatch(pool, {
      groupId,
      topic: 'ticket-events',
      partition: 0,
      defaultWebhookUrl: 'http://127.0.0.1:9/hooks',
      events,
      offsets: events.map(() => String(offset++)),
      values: events.map((e) => Buffer.from(JSON.stringify(e))),
      invalid: [],
      lease: leased ? { token: randomUUID(), limit: 10, leaseMs: 30_000 } : undefined,
      records,
    });
}

/** The kit's pool of the notifier, with the URL the consumer app gives it. */
const kitPool = (groupId: string): Pool =>
  new Pool({
    connectionString: notifierOptions(notifierConfig(groupId), loadEventConsumerConfig({})).databaseUrl,
    max: 1,
    idleTimeoutMillis: 0,
  });

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

/** The sum of the `counted` columns of pg_stat_user_tables for `table`: rows written to it so far. */
async function tuples(table: string, counted: Array<'n_tup_ins' | 'n_tup_upd'>): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT (${counted.join(' + ')})::int AS n FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2`,
    relation(table),
  );
  return rows[0].n;
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
  await waitFor(`${n} rows written to ${table} in the statistics`, async () => (await tuples(table, counted)) >= n);
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
  // No automatic ANALYZE during the test: it would replace the cached plans (what autovacuum does, later).
  for (const table of ['notifications', 'notification_attempts', 'tenants', 'ticket_events.inbox_events'])
    await db.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
});

afterAll(async () => {
  await inboxSession?.end();
  await prisma?.$disconnect();
  await db?.end();
  await database?.drop();
});

it("the dispatcher's record statement reads by key on a connection that planned it while the table was empty, alone and in the inbox statement", async () => {
  prisma = dispatcherClient('g');
  const repo = new NotificationsRepository(prisma);
  // The inbox statement carrying the dispatcher's results, on the kit's connection: its shape without a lease (a
  // dispatcher with no free slot; the shape with one is in the generic-plans case below), planned by chunks with
  // results.
  const kit = kitPool('g');
  try {
    const chunkWithResults = chunkRecorder(kit, 'g');
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
    // Runs while the table holds a few rows (a fresh database's first deliveries, four per statement): the one
    // connection caches its generic plan now. (At about 20 rows, the plan that joins by hash walked the whole
    // primary key: 5,400 blocks per call a few seconds later, in the POST -> webhook bench.)
    const first = await insert(24);
    await db.query('ANALYZE notifications'); // as autovacuum does once the first rows arrived
    for (let i = 0; i < first.length; i += 4)
      await repo.record(first.slice(i, i + 4).map((row) => ({ ...record(row.id), attemptNo: 1 })));
    for (let i = 0; i < 3; i++)
      await chunkWithResults([ticketCreated(randomUUID())], false, [{ ...record(first[i].id), attemptNo: 2 }]);

    const rows = await insert(ROWS);
    const pages = (await db.query<{ pages: number }>(`SELECT pg_relation_size('notifications') / 8192 AS pages`))
      .rows[0].pages;
    expect(Number(pages)).toBeGreaterThan(500); // what a sequential scan would read

    // Statistics flushed from both sessions (each backend reports its own).
    const flush = async (sql: string) => {
      await kit.query(sql);
      await prisma!.$executeRawUnsafe(sql);
    };
    let attempts = first.length + 3;
    await settled('notifications', ROWS + first.length + 3, flush);
    await settled('notification_attempts', attempts, flush);
    for (const via of ['record statement', 'inbox statement'] as const) {
      const before = await blocksRead('notifications');
      const results = [
        { ...record(rows[via === 'record statement' ? 0 : 2].id), attemptNo: 1 },
        { ...record(rows[via === 'record statement' ? 1 : 3].id), attemptNo: 1 },
      ];
      if (via === 'record statement') await repo.record(results);
      else expect((await chunkWithResults([ticketCreated(randomUUID())], false, results)).processed).toBe(1);
      attempts += 2;
      await settled('notification_attempts', attempts, flush);
      const read = (await blocksRead('notifications')) - before;
      // Two index lookups (and the rows' updates; the inbox statement also inserts its notification): a handful
      // of blocks, not the table.
      expect(read).toBeLessThan(50);
    }
  } finally {
    await kit.end();
  }
});

it("the notifier's inbox statement probes the inbox by key on a kit connection that planned it while the inbox was empty", async () => {
  const groupId = 'fixed-plans-notifier';
  inboxSession = kitPool(groupId);
  const tenantId = randomUUID();
  // The statement has two shapes, each a statement of its own: with a lease (the dispatcher takes the new
  // notifications at once, the usual case) and without one.
  const record = chunkRecorder(inboxSession, groupId);
  // Ten chunks, five of each shape, while the inbox holds a few rows (a fresh database's first events): the
  // generic plans, made on the first of them, are cached now.
  const early = Array.from({ length: 10 }, () => ticketCreated(tenantId));
  for (const [i, e] of early.entries()) expect((await record([e], i % 2 === 1)).processed).toBe(1);

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
  for (const [leased, copy] of [
    [false, early[3]],
    [true, early[4]],
  ] as const) {
    // Two new events and a copy of an early one (the duplicate path updates its inbox row).
    const before = await blocksRead(inbox, true);
    const r = await record([ticketCreated(tenantId), ticketCreated(tenantId), copy], leased);
    expect(r).toMatchObject({ processed: 2, skippedDuplicate: 1 });
    expect(r.leased).toHaveLength(leased ? 2 : 0);
    written += 3;
    await settled(inbox, written, flush, counted);
    const read = (await blocksRead(inbox, true)) - before;
    // Three probes, two inserts and one update through the primary key (33 blocks, measured), not the
    // table: one sequential scan alone reads every page (more than 300), the index walk 20,000 blocks.
    expect(read).toBeLessThan(100);
  }
});

it("the dispatcher's claim updates by key on a connection that planned it while the table was empty", async () => {
  // Empty again, and analysed so: what `db-migrate` leaves on a fresh database (it analyses the tables that have no
  // statistics yet), where the dispatcher's first claims run.
  await db.query('TRUNCATE notifications CASCADE');
  await db.query('ANALYZE notifications');
  const groupId = 'fixed-plans-claim';
  const session = dispatcherClient(groupId);
  try {
    const repo = new NotificationsRepository(session);
    const inserted = await tuples('notifications', ['n_tup_ins']);
    const ins = (status: string, n: number, due: string | null) =>
      db.query(
        `INSERT INTO notifications (group_id, tenant_id, event_id, ticket_id, event_type, payload, status, next_attempt_at)
         SELECT $1, gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'ticket.created.v1', repeat('x', 1500), $2, $4::timestamptz
           FROM generate_series(1, $3::int)`,
        [groupId, status, n, due],
      );
    const due = () => ins('pending', 1, new Date(Date.now() - 1000).toISOString());
    const delivered = (n: { id: string; lease_token: string }) => ({ ...record(n.id), leaseToken: n.lease_token });
    // The claim's two shapes, each a statement of its own: alone, and with the deliveries it records in the same
    // statement (the dispatcher's usual round). Planned now, while the table is empty or holds one row.
    for (let i = 0; i < 3; i++) expect(await repo.claim(groupId, 10, 30_000)).toEqual([]);
    await due();
    const [first] = await repo.claim(groupId, 10, 30_000);
    expect(await repo.claim(groupId, 10, 30_000, [delivered(first)])).toEqual([]);

    await ins('delivered', ROWS, null);
    await due();
    const pages = (await db.query<{ pages: number }>(`SELECT pg_relation_size('notifications') / 8192 AS pages`))
      .rows[0].pages;
    expect(Number(pages)).toBeGreaterThan(500);

    const flush = (sql: string) => session.$executeRawUnsafe(sql);
    await settled('notifications', inserted + ROWS + 2, flush);
    const claimed: Array<{ id: string; lease_token: string }> = [];
    for (const shape of ['alone', 'with a delivery'] as const) {
      const updated = await tuples('notifications', ['n_tup_upd']);
      const before = await blocksRead('notifications', true);
      if (shape === 'alone') claimed.push(...(await repo.claim(groupId, 10, 30_000)));
      else expect(await repo.claim(groupId, 10, 30_000, [delivered(claimed[0])])).toEqual([]);
      expect(claimed).toHaveLength(1);
      await settled('notifications', updated + 1, flush, ['n_tup_upd']);
      const read = (await blocksRead('notifications', true)) - before;
      // The due entry, the row by its key and its update (about 10 blocks), not the primary key's walk over
      // every row (more than 5,000).
      expect(read).toBeLessThan(100);
    }
  } finally {
    await session.$disconnect();
  }
});

it("the notifier's statements run on generic plans, also after the tables' statistics change", async () => {
  const groupId = 'fixed-plans-generic';
  const kit = kitPool(groupId);
  const dispatcher = dispatcherClient(groupId);
  try {
    const recordChunk = chunkRecorder(kit, groupId);
    const notifications = new NotificationsRepository(dispatcher);
    const tenantId = randomUUID();
    // What the notifier does per chunk: the inbox statement leases the new notifications to the dispatcher
    // (the statement's shape with a lease), which records their deliveries: in a statement of their own (a
    // flush) every other round, else in the next chunk's inbox statement (its shape with a lease and records).
    let pending: AttemptRecord[] = [];
    const round = async (i: number) => {
      const r = await recordChunk([ticketCreated(tenantId), ticketCreated(tenantId)], true, pending);
      expect(r.leased).toHaveLength(2);
      const done = r.leased.map((n) => ({ ...record(n.id), leaseToken: n.lease_token }));
      pending = i % 2 === 1 ? done : [];
      if (i % 2 === 0) await notifications.record(done);
    };
    for (let i = 0; i < 6; i++) await round(i);
    // The tables' statistics change (autovacuum's ANALYZE does this on a live database): PostgreSQL makes the
    // generic plan again, and under plan_cache_mode = auto decides again between it and custom plans, which the
    // inbox statement with a lease and the record statement lost for good in the POST -> webhook bench.
    await db.query('ANALYZE notifications, notification_attempts, ticket_events.inbox_events');
    for (let i = 6; i < 12; i++) await round(i);
    await notifications.record(pending); // the last round's, as the dispatcher's flush would

    const plans = async (q: (sql: string) => Promise<Array<{ statement: string; generic: number; custom: number }>>) =>
      q(`SELECT statement, generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements`);
    const kitPlans = await plans(async (sql) => (await kit.query(sql)).rows);
    // One statement whether or not a chunk carries the dispatcher's results (its recording CTEs are always there).
    const leaseShape = kitPlans.filter((p) => p.statement.includes('row_number() OVER'));
    expect(leaseShape).toHaveLength(1);
    expect(leaseShape[0].statement).toContain('INSERT INTO notification_attempts');
    expect(leaseShape[0]).toMatchObject({ custom: 0 });
    expect(leaseShape[0].generic).toBeGreaterThanOrEqual(1);
    // And each result was written where it was carried: delivered, the lease cleared.
    const states = await kit.query(
      `SELECT status, lease_token IS NULL AS released, count(*)::int AS n FROM notifications WHERE group_id = $1 GROUP BY 1, 2`,
      [groupId],
    );
    expect(states.rows).toEqual([{ status: 'delivered', released: true, n: 24 }]);
    // Every delivery recorded, whichever statement carried it.
    const unrecorded = await kit.query(
      `SELECT count(*)::int AS n FROM notifications n WHERE n.group_id = $1
         AND NOT EXISTS (SELECT 1 FROM notification_attempts a WHERE a.notification_id = n.id)`,
      [groupId],
    );
    expect(unrecorded.rows[0].n).toBe(0);
    const dispatcherPlans = await plans((sql) => dispatcher.$queryRawUnsafe(sql));
    const recordStatement = dispatcherPlans.filter((p) => p.statement.includes('INSERT INTO notification_attempts'));
    expect(recordStatement).toHaveLength(1);
    expect(recordStatement[0]).toMatchObject({ custom: 0 });
    expect(recordStatement[0].generic).toBeGreaterThanOrEqual(1);
  } finally {
    await kit.end();
    await dispatcher.$disconnect();
  }
});

it('no session that prices sequential scans out JIT-compiles a statement that has to scan', async () => {
  // enable_seqscan=off adds 10^10 to a sequential scan's cost, far above jit_above_cost (100,000): with JIT on,
  // PostgreSQL compiled such a statement at every execution, 100-340 ms for the API's one-row migration check.
  // The statement here is that check, verbatim: _prisma_migrations has no index it could use.
  const check =
    'SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL';
  const explained = async (q: (sql: string) => Promise<Array<Record<string, unknown>>>) => {
    const [{ jit }] = (await q(`SELECT current_setting('jit') AS jit`)) as Array<{ jit: string }>;
    const [row] = await q(`EXPLAIN (ANALYZE, FORMAT JSON) ${check}`);
    const raw = row['QUERY PLAN'];
    const [plan] = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Array<{
      Plan: { 'Node Type': string };
      JIT?: unknown;
    }>;
    return { jit, scan: plan.Plan['Node Type'], compiled: plan.JIT !== undefined };
  };
  const groupId = 'fixed-plans-jit';
  // Each session as the shipped code builds it: the API's Database, the notifier's two pools, the relay's claims
  // pool and its lock connection (configured by the leader lock's own session set-up).
  const api = new Database(notifierConfig(groupId), createLogger('silent', 'fixed-plans-jit'));
  const kit = kitPool(groupId);
  const dispatcher = dispatcherClient(groupId);
  const relayPool = new Pool({ connectionString: withRelaySessionOptions(database.url), max: 1 });
  const relayLock = new Client({ connectionString: database.url });
  try {
    await relayLock.connect();
    await new LeaderLockRepository().configureSession(relayLock);
    const sessions = {
      api: await explained((sql) => api.prisma.$queryRawUnsafe(sql)),
      notifierKit: await explained(async (sql) => (await kit.query(sql)).rows),
      dispatcher: await explained((sql) => dispatcher.$queryRawUnsafe(sql)),
      relayPool: await explained(async (sql) => (await relayPool.query(sql)).rows),
      relayLock: await explained(async (sql) => (await relayLock.query(sql)).rows),
    };
    const expected = { jit: 'off', scan: 'Seq Scan', compiled: false };
    expect(sessions).toEqual({
      api: expected,
      notifierKit: expected,
      dispatcher: expected,
      relayPool: expected,
      relayLock: expected,
    });
  } finally {
    await Promise.allSettled([
      relayLock.end(),
      relayPool.end(),
      kit.end(),
      dispatcher.$disconnect(),
      api.onApplicationShutdown(),
    ]);
  }
});
