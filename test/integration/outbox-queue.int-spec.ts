// The relay's queue (migration 20261203000000_outbox_pending_queue) on the real PostgreSQL, without a relay:
// every row inserted into outbox_events is queued in outbox_pending by the insert's own statement, whatever
// the writer and however it inserts, and only when that insert commits; and a database of the schema
// before (marks as published_at on the rows) is upgraded without losing a row or a mark.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { OutboxRepository } from '../../libs/outbox/src/outbox.repository';
import { ROOT } from '../support/stack';
import {
  createRelayTestDatabase,
  insertOutboxRows,
  ticketEventRow,
  type RelayTestDatabase,
} from '../support/outbox-factory';

jest.setTimeout(60_000);

const BEFORE = '20261201224006_api_key_lifecycle';
const tenantId = randomUUID();

async function connect(url: string): Promise<Client> {
  const c = new Client({ connectionString: url });
  await c.connect();
  return c;
}

/** The values of a row for `(event_id, tenant_id, aggregate_id, event_type, payload, headers)`. */
const columns = (row: ReturnType<typeof ticketEventRow>) => [
  row.eventId,
  row.tenantId,
  row.aggregateId,
  row.eventType,
  JSON.stringify(row.payload),
  JSON.stringify(row.headers),
];

const queued = async (db: Client, seqs: string[]) =>
  (
    await db.query<{ seq: string }>('SELECT seq::text FROM outbox_pending WHERE seq = ANY($1::bigint[]) ORDER BY seq', [
      seqs,
    ])
  ).rows.map((r) => r.seq);

describe('the outbox queue', () => {
  let database: RelayTestDatabase;
  let db: Client;

  beforeAll(async () => {
    database = await createRelayTestDatabase('queue');
    db = await connect(database.url);
  });

  afterAll(async () => {
    await db?.end();
    await database?.drop();
  });

  it('queues every inserted row in the inserting statement: one row, several, an insert inside a CTE as the API writes', async () => {
    const [one] = await insertOutboxRows(db, [ticketEventRow({ tenantId, kind: 'created' })]);
    const three = await insertOutboxRows(
      db,
      [1, 2, 3].map(() => ticketEventRow({ tenantId, kind: 'created' })),
    );
    const row = ticketEventRow({ tenantId, kind: 'created' });
    const { rows } = await db.query<{ seq: string; queued: boolean }>(
      `WITH e AS (
         INSERT INTO outbox_events (event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers)
         VALUES ($1, $2, 'ticket', $3, $4, $5, $6) RETURNING seq)
       SELECT seq::text FROM e`,
      columns(row),
    );
    expect(await queued(db, [one, ...three, rows[0].seq])).toEqual([one, ...three, rows[0].seq]);
    const { rows: entry } = await db.query(
      'SELECT aggregate_id, attempts, last_error, next_attempt_at FROM outbox_pending WHERE seq = $1',
      [rows[0].seq],
    );
    expect(entry).toEqual([{ aggregate_id: row.aggregateId, attempts: 0, last_error: null, next_attempt_at: null }]);
  });

  it("queues a writer's rows whatever its search_path, and nothing of an insert that rolls back", async () => {
    await db.query('BEGIN');
    await db.query('SET LOCAL search_path = pg_catalog');
    const { rows } = await db.query<{ seq: string }>(
      `INSERT INTO public.outbox_events (event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers)
       VALUES (gen_random_uuid(), $1, 'ticket', gen_random_uuid(), 'ticket.created.v1', '{}', '{}') RETURNING seq::text`,
      [tenantId],
    );
    await db.query('COMMIT');
    expect(await queued(db, [rows[0].seq])).toEqual([rows[0].seq]);

    await db.query('BEGIN');
    const [gone] = await insertOutboxRows(db, [ticketEventRow({ tenantId, kind: 'created' })]);
    expect(await queued(db, [gone])).toEqual([gone]); // visible to its own transaction
    await db.query('ROLLBACK');
    expect(await queued(db, [gone])).toEqual([]);
  });

  it("keeps its emptied pages through the relay's vacuum: no ACCESS EXCLUSIVE lock to cut them off, which inserts would wait behind", async () => {
    const seqs = await insertOutboxRows(
      db,
      Array.from({ length: 2_000 }, () => ticketEventRow({ tenantId, kind: 'created' })),
    );
    const size = async () =>
      Number((await db.query<{ n: string }>(`SELECT pg_relation_size('outbox_pending')::text AS n`)).rows[0].n);
    const filled = await size();
    expect(filled).toBeGreaterThan(8192 * 4);
    // The marks of every row: the queue is empty, its pages free.
    await db.query('DELETE FROM outbox_pending WHERE seq = ANY($1::bigint[])', [seqs]);
    await new OutboxRepository().vacuumQueue(db);
    expect(await size()).toBe(filled);
    // The free pages are filled again before the table grows.
    await insertOutboxRows(
      db,
      Array.from({ length: 1_000 }, () => ticketEventRow({ tenantId, kind: 'created' })),
    );
    expect(await size()).toBe(filled);
  });
});

describe('queue entries left behind by a deleted row, or queued again', () => {
  let database: RelayTestDatabase;
  let db: Client;
  const repo = new OutboxRepository();

  beforeAll(async () => {
    database = await createRelayTestDatabase('queue_orphans');
    db = await connect(database.url);
  });

  afterAll(async () => {
    await db?.end();
    await database?.drop();
  });

  it('are claimed as orphans, and dropping them leaves every other entry queued', async () => {
    const seqs = await insertOutboxRows(
      db,
      [1, 2, 3].map(() => ticketEventRow({ tenantId, kind: 'created' })),
    );
    await db.query('DELETE FROM outbox_events WHERE seq = $1', [seqs[1]]);
    const claimed = await repo.claim(db, 10);
    expect(claimed.map((r) => [r.seq, r.orphan ?? false])).toEqual([
      [seqs[0], false],
      [seqs[1], true],
      [seqs[2], false],
    ]);
    // Only an entry whose row is really gone is dropped, whatever the caller passes.
    expect(await repo.dropOrphans(db, [seqs[0], seqs[1]])).toBe(1);
    expect(await queued(db, seqs)).toEqual([seqs[0], seqs[2]]);
  });

  it('is taken over, reset, by a row inserted again under its seq (a requeued dead letter keeps its seq)', async () => {
    const row = ticketEventRow({ tenantId, kind: 'created' });
    const [seq] = await insertOutboxRows(db, [row]);
    await db.query(
      `UPDATE outbox_pending SET attempts = 4, last_error = 'kafka_rejected', next_attempt_at = now() + interval '1 hour' WHERE seq = $1`,
      [seq],
    );
    await db.query('DELETE FROM outbox_events WHERE seq = $1', [seq]); // the entry stays behind
    await db.query(
      `INSERT INTO outbox_events (seq, event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers)
       VALUES ($1, $2, $3, 'ticket', $4, $5, $6, $7)`,
      [seq, ...columns(row)],
    );
    const { rows: entry } = await db.query(
      'SELECT aggregate_id, attempts, last_error, next_attempt_at FROM outbox_pending WHERE seq = $1',
      [seq],
    );
    expect(entry).toEqual([{ aggregate_id: row.aggregateId, attempts: 0, last_error: null, next_attempt_at: null }]);
    const claimed = await repo.claim(db, 100);
    expect(claimed.find((r) => r.seq === seq)).toMatchObject({ eventId: row.eventId });
    expect(claimed.find((r) => r.seq === seq)?.orphan ?? false).toBe(false);
  });

  it('is kept by retention, which deletes the rows of an old send but not one queued again since', async () => {
    const [sent, requeued] = await insertOutboxRows(
      db,
      [1, 2].map(() => ticketEventRow({ tenantId, kind: 'created' })),
    );
    // One old send of both; then `sent` leaves the queue as a mark does, `requeued` stays queued.
    await db.query(
      `INSERT INTO outbox_publications (seqs, first_seq, last_seq, rows, published_at)
       VALUES ($1::bigint[], $2, $3, 2, now() - interval '2 days')`,
      [[sent, requeued], sent, requeued],
    );
    await db.query('DELETE FROM outbox_pending WHERE seq = $1', [sent]);
    expect(await repo.purgePublished(db, 24 * 3600_000, 100)).toBe(1);
    const { rows } = await db.query<{ seq: string }>(
      'SELECT seq::text FROM outbox_events WHERE seq = ANY($1::bigint[]) ORDER BY seq',
      [[sent, requeued]],
    );
    expect(rows.map((r) => r.seq)).toEqual([requeued]);
    expect(await queued(db, [sent, requeued])).toEqual([requeued]);
    expect((await db.query('SELECT count(*)::int AS n FROM outbox_publications')).rows[0].n).toBe(0);
  });
});

describe('the upgrade of an outbox whose marks were published_at on the rows', () => {
  let database: RelayTestDatabase;
  let db: Client;

  afterAll(async () => {
    await db?.end();
    await database?.drop();
  });

  it('queues the unpublished rows with their retry state, records the published ones by mark, and drops the old columns', async () => {
    database = await createRelayTestDatabase('queue_upgrade', { until: BEFORE });
    db = await connect(database.url);
    const rows = [1, 2, 3, 4, 5].map(() => ticketEventRow({ tenantId, kind: 'created' }));
    const [a, b, c, parked, fresh] = await insertOutboxRows(db, rows);
    // Two marks as the relay of that schema wrote them (a and b in one, c in another), a parked row, a new one.
    await db.query(
      `UPDATE outbox_events SET published_at = '2026-12-01T10:00:00.123Z', kafka_timestamp = '2026-12-01T10:00:00.100Z', attempts = 1
        WHERE seq = ANY($1::bigint[])`,
      [[a, b]],
    );
    await db.query(
      `UPDATE outbox_events SET published_at = '2026-12-01T10:00:01.000Z', kafka_timestamp = NULL, attempts = 3 WHERE seq = $1`,
      [c],
    );
    await db.query(
      `UPDATE outbox_events SET attempts = 2, last_error = 'kafka_rejected: too large', next_attempt_at = '2030-01-01T00:00:00Z'
        WHERE seq = $1`,
      [parked],
    );

    execFileSync(process.execPath, [join(ROOT, 'scripts', 'db-migrate.mjs'), 'deploy'], {
      env: { ...process.env, DATABASE_URL: database.url },
      stdio: 'pipe',
    });

    const { rows: pending } = await db.query(
      'SELECT seq::text, aggregate_id, attempts, last_error, next_attempt_at FROM outbox_pending ORDER BY seq',
    );
    expect(pending).toEqual([
      {
        seq: parked,
        aggregate_id: rows[3].aggregateId,
        attempts: 2,
        last_error: 'kafka_rejected: too large',
        next_attempt_at: new Date('2030-01-01T00:00:00Z'),
      },
      { seq: fresh, aggregate_id: rows[4].aggregateId, attempts: 0, last_error: null, next_attempt_at: null },
    ]);
    const { rows: sends } = await db.query(
      `SELECT seqs::text[] AS seqs, first_seq::text, last_seq::text, rows, published_at, kafka_timestamp
         FROM outbox_publications ORDER BY published_at`,
    );
    expect(sends).toEqual([
      {
        seqs: [a, b],
        first_seq: a,
        last_seq: b,
        rows: 2,
        published_at: new Date('2026-12-01T10:00:00.123Z'),
        kafka_timestamp: new Date('2026-12-01T10:00:00.100Z'),
      },
      {
        seqs: [c],
        first_seq: c,
        last_seq: c,
        rows: 1,
        published_at: new Date('2026-12-01T10:00:01.000Z'),
        kafka_timestamp: null,
      },
    ]);
    const { rows: columns } = await db.query<{ column_name: string }>(
      "SELECT column_name FROM information_schema.columns WHERE table_name = 'outbox_events' ORDER BY ordinal_position",
    );
    expect(columns.map((r) => r.column_name)).toEqual([
      'seq',
      'event_id',
      'tenant_id',
      'aggregate_type',
      'aggregate_id',
      'event_type',
      'payload',
      'headers',
      'created_at',
    ]);
    // Rows written after the upgrade are queued.
    const [later] = await insertOutboxRows(db, [ticketEventRow({ tenantId, kind: 'created' })]);
    expect(await queued(db, [later])).toEqual([later]);
  });
});
