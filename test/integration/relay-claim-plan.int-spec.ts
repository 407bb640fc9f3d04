// The relay's claim in the first minutes of a fresh database, on the real PostgreSQL: the tables' statistics
// are still those db-migrate took of the empty tables, while outbox_events holds 60,000 rows, 100 of them
// still queued, and the queue's (outbox_pending's) primary key holds the deleted entries of all the others
// until a vacuum removes them. From those statistics PostgreSQL plans the claim with sequential scans (of
// outbox_events for each claimed row, and of the queue), and a bitmap scan would visit the queue's heap
// for every deleted entry on every claim without ever marking them dead. The relay's sessions turn both
// scans off (RELAY_SESSION_SQL on the lock's connection, withRelaySessionOptions on the claims' pool): the
// claim walks the queue's primary key in seq order and reads each row by its key. Measured by PostgreSQL
// itself: the buffers of the claim's own prepared statement, run on connections set up as the relay's are.
import { Client } from 'pg';
import { OutboxRepository, RELAY_SESSION_SQL, withRelaySessionOptions } from '../../libs/outbox/src/outbox.repository';
import { createRelayTestDatabase, type RelayTestDatabase } from '../support/outbox-factory';

jest.setTimeout(120_000);

const ROWS = 60_000;
const repo = new OutboxRepository();
let database: RelayTestDatabase;
let setup: Client;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
  Plans?: PlanNode[];
}

const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

/** EXPLAIN (ANALYZE, BUFFERS) of EXECUTE of one of the connection's prepared statements, run twice: the second run's plan. */
async function explain(c: Client, execute: string): Promise<{ buffers: number; scans: string[] }> {
  let plan: PlanNode | undefined;
  for (let i = 0; i < 2; i++) {
    const { rows } = await c.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE ${execute}`,
    );
    plan = rows[0]['QUERY PLAN'][0].Plan;
  }
  return {
    buffers: plan!['Shared Hit Blocks'] + plan!['Shared Read Blocks'],
    scans: nodes(plan!)
      .filter((n) => n['Relation Name'])
      .map((n) => `${n['Node Type']} on ${n['Relation Name']}`),
  };
}

async function session(url: string, sql?: string): Promise<Client> {
  const c = new Client({ connectionString: url });
  await c.connect();
  if (sql) await c.query(sql);
  return c;
}

beforeAll(async () => {
  database = await createRelayTestDatabase('claim_plan');
  setup = new Client({ connectionString: database.url });
  await setup.connect();
  // No vacuum and no ANALYZE behind the test's back: the deleted entries and the statistics stay as set below.
  await setup.query('ALTER TABLE outbox_pending SET (autovacuum_enabled = false)');
  await setup.query('ALTER TABLE outbox_events SET (autovacuum_enabled = false)');
  await setup.query(
    `INSERT INTO outbox_events (event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers)
     SELECT gen_random_uuid(), gen_random_uuid(), 'ticket', gen_random_uuid(), 'ticket.created.v1',
            '{}'::jsonb, '{}'::jsonb
       FROM generate_series(1, $1)`,
    [ROWS],
  );
  // Published in several passes, not in seq order (as batches, retries and parked rows do), but for 100 rows.
  for (const pass of ['seq % 7 = 0', 'seq % 5 = 0', 'seq % 3 = 0', 'seq % 2 = 0', 'true']) {
    await setup.query(`DELETE FROM outbox_pending WHERE ${pass} AND seq % 600 <> 1`);
  }
});

afterAll(async () => {
  await setup?.end();
  await database?.drop();
});

/**
 * What a claim by key may read: the queue's primary key (its deleted entries stay there until a vacuum), and
 * per claimed row a few buffers (outbox_events' primary key and heap, the dead letters' index).
 */
const bound = async () => (await pages('outbox_pending_pkey')) + 100 * 8;

/** The relation's size in pages (a table's heap, or an index). */
const pages = async (table: string) =>
  (await setup.query<{ n: number }>('SELECT pg_relation_size($1::regclass)::int / 8192 AS n', [table])).rows[0].n;

it('the claims pool: walks the queue by its key, reading its index pages and not its heap', async () => {
  const c = await session(withRelaySessionOptions(database.url));
  try {
    expect((await repo.claim(c, 500, [])).length).toBe(100); // prepares the named statement, as the relay's first claim does
    const { buffers, scans } = await explain(c, "outbox_claim(500, '{}'::bigint[])");
    expect(await pages('outbox_pending')).toBeGreaterThan(300);
    expect(scans).not.toContainEqual(expect.stringMatching(/^(Seq Scan|Bitmap Heap Scan) on outbox_(pending|events)/));
    expect(scans).toContain('Index Scan on outbox_pending');
    expect(scans).toContain('Index Scan on outbox_events');
    expect(buffers).toBeLessThan(await bound());
  } finally {
    await c.end();
  }
});

it('the lock connection: the claim folded into a mark does the same', async () => {
  const c = await session(database.url, RELAY_SESSION_SQL);
  try {
    const mark = { seqs: [], kafkaTimestampMs: Date.now() };
    expect((await repo.markPublishedAndClaim(c, mark, 500, [])).length).toBe(100);
    const { buffers, scans } = await explain(
      c,
      `outbox_mark_and_claim(500, '{}'::bigint[], '{}'::bigint[], ${Date.now()})`,
    );
    expect(scans).not.toContainEqual(expect.stringMatching(/^(Seq Scan|Bitmap Heap Scan) on outbox_(pending|events)/));
    expect(buffers).toBeLessThan(await bound());
  } finally {
    await c.end();
  }
});

it('without the settings, the same claim scans the tables (what the settings prevent)', async () => {
  const c = await session(database.url);
  try {
    expect((await repo.claim(c, 500, [])).length).toBe(100);
    const { buffers, scans } = await explain(c, "outbox_claim(500, '{}'::bigint[])");
    expect(scans).toContainEqual(expect.stringMatching(/^(Seq Scan|Bitmap Heap Scan) on outbox_(pending|events)/));
    expect(buffers).toBeGreaterThan(await pages('outbox_events'));
  } finally {
    await c.end();
  }
});
