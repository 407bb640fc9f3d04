// The relay's claim after a burst, on the real PostgreSQL: thousands of rows published since the last
// vacuum leave their old versions in the claim's index. A bitmap scan (what the planner picks when it
// expects a handful of unpublished rows, i.e. in steady state) re-reads every one of them in the heap on
// every claim; the relay's sessions turn bitmap scans off (RELAY_SESSION_SQL), so the first claim marks
// those entries dead and the next ones skip them. Measured through PostgreSQL's own counters for the
// table: heap blocks read per index scan while a relay polls an outbox with nothing to publish.
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { Registry } from 'prom-client';
import { createLogger } from '@tickets/logger';
import { OutboxRelay } from '@tickets/outbox';
import { TEST_KAFKA_BROKERS } from '../support/env';
import { createRelayTestDatabase, deleteTopic, waitFor, type RelayTestDatabase } from '../support/outbox-factory';

jest.setTimeout(120_000);

const topic = `relay-claim-plan-${randomUUID().slice(0, 8)}`;
const ROWS = 5_000;
let database: RelayTestDatabase;
let db: Client;

interface TableCounters {
  heapHits: number;
  indexScans: number;
  pages: number;
}

async function counters(): Promise<TableCounters> {
  const { rows } = await db.query<TableCounters>(
    `SELECT (s.heap_blks_hit + s.heap_blks_read)::int AS "heapHits", t.idx_scan::int AS "indexScans", c.relpages AS pages
       FROM pg_statio_user_tables s JOIN pg_stat_user_tables t USING (relid) JOIN pg_class c ON c.oid = s.relid
      WHERE s.relname = 'outbox_events'`,
  );
  return rows[0];
}

beforeAll(async () => {
  database = await createRelayTestDatabase('claim_plan');
  db = new Client({ connectionString: database.url });
  await db.connect();
  // The state a busy outbox is in between two vacuums: every row published, each by an UPDATE that
  // left its old version (and that version's entry in the unpublished-rows index) behind.
  await db.query('ALTER TABLE outbox_events SET (autovacuum_enabled = false)');
  await db.query(
    `INSERT INTO outbox_events (event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers)
     SELECT gen_random_uuid(), gen_random_uuid(), 'ticket', gen_random_uuid(), 'ticket.created.v1',
            jsonb_build_object('filler', repeat('x', 900)), '{}'::jsonb
       FROM generate_series(1, $1)`,
    [ROWS],
  );
  // Published in several passes, not in seq order (as batches, retries and parked rows do): the live rows'
  // heap order no longer follows seq, which with few unpublished rows makes the planner prefer a bitmap.
  for (const pass of ['seq % 7 = 0', 'seq % 5 = 0', 'seq % 3 = 0', 'seq % 2 = 0', 'seq % 23 <> 0']) {
    await db.query(`UPDATE outbox_events SET published_at = now() WHERE ${pass} AND published_at IS NULL`);
  }
  // Statistics as autovacuum leaves them in steady state: a few percent of the rows unpublished.
  await db.query('ANALYZE outbox_events');
  await db.query('UPDATE outbox_events SET published_at = now() WHERE published_at IS NULL');
});

afterAll(async () => {
  await db?.end();
  await database?.drop();
  await deleteTopic(TEST_KAFKA_BROKERS, topic);
});

it('polling an outbox whose index holds thousands of old versions reads them once, not on every claim', async () => {
  const relay = new OutboxRelay({
    databaseUrl: database.url,
    kafka: {
      brokers: TEST_KAFKA_BROKERS,
      clientId: 'relay-claim-plan-test',
      topic,
      partitions: 1,
      retentionMs: 86_400_000,
    },
    logger: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent', 'relay-claim-plan-test'),
    registry: new Registry(),
    pollIntervalMs: 20,
    leaderRetryMs: 200,
  });
  try {
    await relay.start();
    await waitFor('leadership', async () => (await relay.stats()).isLeader);
    // The first claims mark the dead entries; measure the ones after.
    const start = await counters();
    await waitFor('the first claims counted', async () => (await counters()).indexScans >= start.indexScans + 10);
    const from = await counters();
    await waitFor(
      '40 more index scans by the polling relay',
      async () => (await counters()).indexScans >= from.indexScans + 40,
      60_000,
    );
    const to = await counters();
    const perScan = (to.heapHits - from.heapHits) / (to.indexScans - from.indexScans);
    // A bitmap claim reads the heap page of every old version: ~the whole table per claim.
    expect(to.pages).toBeGreaterThan(300);
    expect(perScan).toBeLessThan(to.pages / 20);
  } finally {
    await relay.stop();
  }
});
