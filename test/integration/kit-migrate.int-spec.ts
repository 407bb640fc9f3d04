// The consumer kit's own migration (`ticket-events migrate`, migrate() of @tickets/event-consumer/admin)
// on an empty database: two replicas migrating at once both succeed and every step is applied once,
// a second run changes nothing, a step applied with another text is refused, and a consumer refuses to
// start on an unmigrated schema, naming the command to run; SSL asked of a server without it, said as what to change.
import { createServer, type AddressInfo } from 'node:net';
import { Pool, type PoolClient } from 'pg';
import { KitDatabaseUnavailable, KitSchemaOutdated, TicketEventsServer } from '@tickets/event-consumer';
import { KIT_MIGRATIONS, KIT_SCHEMA_VERSION, checksumOf, migrate, replayTopic } from '@tickets/event-consumer/admin';
import { TEST_KAFKA_BROKERS } from '../support/env';
import { scratchDatabase, type ScratchDatabase } from '../support/kit-databases';

jest.setTimeout(60_000);

let database: ScratchDatabase;
let db: Pool;

beforeAll(async () => {
  database = await scratchDatabase('migrate');
  db = new Pool({ connectionString: database.url, max: 2 });
});

afterAll(async () => {
  await db?.end();
  await database?.drop();
});

const tables = async (schema: string) =>
  (
    await db.query<{ t: string }>(
      'SELECT table_name AS t FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1',
      [schema],
    )
  ).rows.map((r) => r.t);

it('two concurrent migrations of an empty database both succeed and apply each step once; a second run is a no-op', async () => {
  const [a, b] = await Promise.all([migrate({ databaseUrl: database.url }), migrate({ databaseUrl: database.url })]);
  expect(a.version).toBe(KIT_SCHEMA_VERSION);
  expect(b.version).toBe(KIT_SCHEMA_VERSION);
  // Every step was applied by exactly one of them (each step takes the lock on its own: one may apply
  // step 1 and the other step 2), the other found it recorded.
  const applied = [...a.applied, ...b.applied].sort((x, y) => x.version - y.version);
  expect(applied).toEqual(KIT_MIGRATIONS.map((m) => ({ version: m.version, name: m.name })));
  const steps = await db.query('SELECT version, name FROM ticket_events.kit_migrations ORDER BY version');
  expect(steps.rows).toEqual(KIT_MIGRATIONS.map((m) => ({ version: m.version, name: m.name })));
  expect(await tables('ticket_events')).toEqual([
    'consumer_dead_letters',
    'dead_letter_actions',
    'inbox_events',
    'kit_migrations',
    'replay_partitions',
    'replay_pauses',
    'replays',
  ]);
  // Nothing of the ticket service: the kit's tables only.
  expect(await tables('public')).toEqual([]);

  const again = await migrate({ databaseUrl: database.url });
  expect(again.applied).toEqual([]);
  const appliedAt = await db.query('SELECT applied_at FROM ticket_events.kit_migrations');
  expect(appliedAt.rowCount).toBe(KIT_MIGRATIONS.length);
});

it('puts the tables in the schema it is given, and refuses a schema name that is not a plain identifier', async () => {
  await migrate({ databaseUrl: database.url, schema: 'billing_events' });
  expect(await tables('billing_events')).toContain('inbox_events');
  await expect(
    migrate({ databaseUrl: database.url, schema: 'x"; DROP SCHEMA ticket_events CASCADE; --' }),
  ).rejects.toThrow(/not a valid schema name/);
  expect(await tables('ticket_events')).toContain('inbox_events');
});

it('refuses a schema whose recorded step has another checksum (migrated by a different kit)', async () => {
  await db.query("UPDATE billing_events.kit_migrations SET checksum = 'something-else' WHERE version = 1");
  await expect(migrate({ databaseUrl: database.url, schema: 'billing_events' })).rejects.toThrow(
    /step 1 \(kit_tables\) was applied with another text/,
  );
});

const EVENT = '5b0c1a8e-3f2d-4c6b-9a7e-1d2c3b4a5f60';

it('a schema at version 1 (an earlier kit) gets steps 2 to 5 alone; step 1 keeps the text and checksum it shipped with', async () => {
  // Step 1 as the first kit shipped it: a later kit never edits it (deployments recorded this checksum).
  expect(checksumOf(KIT_MIGRATIONS[0])).toBe('e3ad02dd431e2dfca039fb03341f571ee21f07c7cd05cf4b58a22d83e75dad37');
  expect(checksumOf(KIT_MIGRATIONS[1])).toBe('3d9495f4536b8932dbfabac0c0c5b33cc173b94451a843ba2bb841662b523a89');
  expect(checksumOf(KIT_MIGRATIONS[2])).toBe('c535088b502792f2298060d1ff7c44532cff3389bd92c810a43a7b2cd8e2a3ef');
  expect(checksumOf(KIT_MIGRATIONS[3])).toBe('29aaf9234fd652ddcb8bfae04bf949bf30bbc6c1c1efa4892fdec986cd267dae');
  expect(KIT_MIGRATIONS.map((m) => `${m.version} ${m.name}`)).toEqual([
    '1 kit_tables',
    '2 replay_pauses',
    '3 dead_letter_holds',
    '4 requeued_holds',
    '5 replay_dead_letters',
  ]);
  await migrate({ databaseUrl: database.url, schema: 'earlier_kit' });
  // What the first kit left: step 1 only, with a handler's dead letter and an invalid message in it.
  await db.query('DROP TABLE earlier_kit.replay_pauses');
  await db.query('DROP INDEX earlier_kit.consumer_dead_letters_holds_idx');
  await db.query('DROP TRIGGER consumer_dead_letters_cause ON earlier_kit.consumer_dead_letters');
  await db.query('DROP TRIGGER consumer_dead_letters_origin ON earlier_kit.consumer_dead_letters');
  await db.query('DROP FUNCTION earlier_kit.consumer_dead_letter_origin()');
  await db.query('DROP FUNCTION earlier_kit.consumer_dead_letter_cause()');
  await db.query(
    `ALTER TABLE earlier_kit.consumer_dead_letters DROP COLUMN cause, DROP COLUMN held_by, DROP COLUMN event_id,
       DROP COLUMN origin_partition, DROP COLUMN origin_offset, DROP COLUMN copy_partition, DROP COLUMN copy_offset`,
  );
  await db.query('ALTER TABLE earlier_kit.replay_partitions DROP COLUMN dead_lettered');
  await db.query('DELETE FROM earlier_kit.kit_migrations WHERE version > 1');
  await db.query(
    `INSERT INTO earlier_kit.consumer_dead_letters (group_id, topic, partition, "offset", key, value, headers, reason)
     VALUES ('g', 't', 0, 1, 'k', '{}', '{"event-id": "${EVENT}"}', 'handler failed 5 times (ticket.created.v1 x): boom'),
            ('g', 't', 0, 2, 'k', '{', '{}', 'not JSON: Unexpected end of JSON input')`,
  );
  const before = await db.query('SELECT version, checksum, applied_at FROM earlier_kit.kit_migrations');
  const options = {
    brokers: TEST_KAFKA_BROKERS,
    topic: 'kit-migrate-unused',
    groupId: 'kit-migrate-it',
    databaseUrl: database.url,
    metrics: false as const,
    schema: 'earlier_kit',
  };
  const refused = new TicketEventsServer(options);
  const err = await new Promise<unknown>((resolve) => void refused.listen((e) => resolve(e)));
  expect((err as Error).message).toContain(
    'in schema earlier_kit are at version 1, this kit needs 5: run `npx ticket-events migrate --schema earlier_kit`',
  );
  // So does a replay, before it pauses the group or moves an offset.
  const said: string[] = [];
  const replay = await replayTopic(
    {
      group: 'kit-migrate-it',
      topic: 'kit-migrate-unused',
      from: 'earliest',
      wait: true,
      follow: true,
      timeoutMs: 10_000,
    },
    {
      databaseUrl: database.url,
      schema: 'earlier_kit',
      kafka: { brokers: TEST_KAFKA_BROKERS, clientId: 'kit-migrate-it' },
      out: (l) => said.push(l),
    },
  );
  expect(replay).toEqual({ outcome: 'failed' });
  expect(said).toEqual([
    expect.stringMatching(
      /^replay: the kit's tables in schema earlier_kit are at version 1, this kit needs 5: .*; nothing moved$/,
    ),
  ]);

  const r = await migrate({ databaseUrl: database.url, schema: 'earlier_kit' });
  expect(r).toEqual({
    schema: 'earlier_kit',
    applied: [
      { version: 2, name: 'replay_pauses' },
      { version: 3, name: 'dead_letter_holds' },
      { version: 4, name: 'requeued_holds' },
      { version: 5, name: 'replay_dead_letters' },
    ],
    version: 5,
  });
  expect(await tables('earlier_kit')).toContain('replay_pauses');
  const after = await db.query('SELECT version, checksum, applied_at FROM earlier_kit.kit_migrations ORDER BY version');
  expect(after.rows[0]).toEqual(before.rows[0]);
  expect(after.rows[1]).toMatchObject({ version: 2, checksum: checksumOf(KIT_MIGRATIONS[1]) });
  expect(after.rows[2]).toMatchObject({ version: 3, checksum: checksumOf(KIT_MIGRATIONS[2]) });
  expect(after.rows[3]).toMatchObject({ version: 4, checksum: checksumOf(KIT_MIGRATIONS[3]) });
  expect(after.rows[4]).toMatchObject({ version: 5, checksum: checksumOf(KIT_MIGRATIONS[4]) });
  // Step 5: a replay's count of the events it dead-lettered, 0 on rows from before it.
  const counter = await db.query(
    "SELECT column_default, is_nullable FROM information_schema.columns WHERE table_schema = 'earlier_kit' AND table_name = 'replay_partitions' AND column_name = 'dead_lettered'",
  );
  expect(counter.rows).toEqual([{ column_default: '0', is_nullable: 'NO' }]);
  // The dead letters stored before step 3 get the cause their reason gives: the handler's holds its ticket.
  const causes = await db.query(
    'SELECT "offset"::int AS o, cause, held_by, event_id FROM earlier_kit.consumer_dead_letters ORDER BY "offset"',
  );
  expect(causes.rows).toEqual([
    { o: 1, cause: 'handler_failed', held_by: null, event_id: EVENT },
    { o: 2, cause: 'invalid', held_by: null, event_id: null },
  ]);
  // Step 3's text runs again without error on a schema that has it (a lost bookkeeping row, a hand-applied step).
  await db.query(KIT_MIGRATIONS[2].sql.replaceAll('{{schema}}', '"earlier_kit"').replaceAll('{{name}}', 'earlier_kit'));
  // So do the rows a replica of the earlier kit writes (it names no cause) while the upgrade rolls out.
  await db.query(
    `INSERT INTO earlier_kit.consumer_dead_letters (group_id, topic, partition, "offset", key, value, reason)
     VALUES ('g', 't', 0, 3, 'k', '{}', 'handler failed 2 times (ticket.cancelled.v1 y): boom'),
            ('g', 't', 0, 4, 'k', 'x', 'not JSON: Unexpected token')`,
  );
  const later = await db.query(
    'SELECT "offset"::int AS o, cause FROM earlier_kit.consumer_dead_letters WHERE "offset" > 2 ORDER BY "offset"',
  );
  expect(later.rows).toEqual([
    { o: 3, cause: 'handler_failed' },
    { o: 4, cause: 'invalid' },
  ]);
});

it("a schema at version 3 gets steps 4 and 5: requeued dead letters get their copy's place from the audit row, a dead letter at that place its original's, the claim's index covers them, and the step re-runs", async () => {
  await migrate({ databaseUrl: database.url, schema: 'kit_v3' });
  // What a kit of schema version 3 left: no places, the step 3 index.
  await db.query('DROP INDEX kit_v3.consumer_dead_letters_holds_idx');
  await db.query('DROP TRIGGER consumer_dead_letters_origin ON kit_v3.consumer_dead_letters');
  await db.query('DROP FUNCTION kit_v3.consumer_dead_letter_origin()');
  await db.query(
    `ALTER TABLE kit_v3.consumer_dead_letters DROP COLUMN origin_partition, DROP COLUMN origin_offset,
       DROP COLUMN copy_partition, DROP COLUMN copy_offset`,
  );
  await db.query(`CREATE INDEX consumer_dead_letters_holding_idx ON kit_v3.consumer_dead_letters
    (group_id, topic, lower(key), partition, "offset") WHERE resolution IS NULL AND cause IN ('handler_failed', 'held')`);
  await db.query('DELETE FROM kit_v3.kit_migrations WHERE version > 3');
  // Two requeued dead letters (the second's copy place unknown to the broker's answer), one still dead, and the
  // first one's copy dead again at 42.
  const rows = await db.query<{ id: string; o: number }>(
    `INSERT INTO kit_v3.consumer_dead_letters (group_id, topic, partition, "offset", key, value, reason, cause, event_id, resolution)
     VALUES ('g', 't', 0, 1, 'k', '{}', 'handler failed 2 times', 'handler_failed', $1, 'requeued'),
            ('g', 't', 0, 2, 'k', '{}', 'held behind', 'held', gen_random_uuid(), 'requeued'),
            ('g', 't', 0, 3, 'k', '{}', 'handler failed 2 times', 'handler_failed', gen_random_uuid(), NULL),
            ('g', 't', 0, 42, 'k', '{}', 'handler failed 2 times', 'handler_failed', $1, NULL)
     RETURNING id::text, "offset"::int AS o`,
    [EVENT],
  );
  await db.query(
    `INSERT INTO kit_v3.dead_letter_actions (dead_letter_id, group_id, action, dead_reason, actor, detail)
     VALUES ($1::uuid, 'g', 'requeue', 'handler failed 2 times', 'ops', '{"topic": "t", "partition": 0, "offset": "42"}'),
            ($2::uuid, 'g', 'requeue', 'held behind', 'ops', '{"topic": "t", "partition": 0, "offset": "?"}')`,
    [rows.rows[0].id, rows.rows[1].id],
  );

  const r = await migrate({ databaseUrl: database.url, schema: 'kit_v3' });
  expect(r.applied).toEqual([
    { version: 4, name: 'requeued_holds' },
    { version: 5, name: 'replay_dead_letters' },
  ]);
  const places = await db.query(
    `SELECT "offset"::int AS o, copy_partition, copy_offset::int AS copy_offset, origin_offset::text AS origin_offset
       FROM kit_v3.consumer_dead_letters ORDER BY "offset"`,
  );
  expect(places.rows).toEqual([
    { o: 1, copy_partition: 0, copy_offset: 42, origin_offset: null },
    { o: 2, copy_partition: null, copy_offset: null, origin_offset: null },
    { o: 3, copy_partition: null, copy_offset: null, origin_offset: null },
    { o: 42, copy_partition: null, copy_offset: null, origin_offset: '1' },
  ]);
  const indexes = await db.query<{ name: string }>(
    "SELECT indexname AS name FROM pg_indexes WHERE schemaname = 'kit_v3' AND tablename = 'consumer_dead_letters' ORDER BY 1",
  );
  expect(indexes.rows.map((i) => i.name)).toContain('consumer_dead_letters_holds_idx');
  expect(indexes.rows.map((i) => i.name)).not.toContain('consumer_dead_letters_holding_idx');
  // The claim of a kit at step 3 (open rows only) and this kit's (requeued ones whose copy is to come, too)
  // both use the new index.
  for (const resolution of [
    'd.resolution IS NULL',
    "(d.resolution IS NULL OR (d.resolution = 'requeued' AND d.copy_offset IS NOT NULL))",
  ]) {
    const plan = await inTransaction(async (c) => {
      await c.query('SET LOCAL enable_seqscan = off');
      return c.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT d.id FROM kit_v3.consumer_dead_letters d WHERE d.group_id = 'g' AND d.topic = 't'
           AND ${resolution} AND d.cause IN ('handler_failed', 'held') AND lower(d.key) = ANY(ARRAY['k'])`,
      );
    });
    expect(plan.rows.map((p) => p['QUERY PLAN']).join('\n')).toContain('consumer_dead_letters_holds_idx');
  }
  // Step 4's text runs again without error on a schema that has it.
  await db.query(KIT_MIGRATIONS[3].sql.replaceAll('{{schema}}', '"kit_v3"').replaceAll('{{name}}', 'kit_v3'));
});

async function inTransaction<T>(work: (c: PoolClient) => Promise<T>): Promise<T> {
  const c = await db.connect();
  try {
    await c.query('BEGIN');
    return await work(c);
  } finally {
    await c.query('ROLLBACK');
    c.release();
  }
}

it('a consumer on an unmigrated schema refuses to start and names the command; with migrate: true it migrates itself', async () => {
  const options = {
    brokers: TEST_KAFKA_BROKERS,
    topic: 'kit-migrate-unused',
    groupId: 'kit-migrate-it',
    databaseUrl: database.url,
    metrics: false as const,
  };
  const refused = new TicketEventsServer({ ...options, schema: 'never_migrated' });
  const err = await new Promise<unknown>((resolve) => void refused.listen((e) => resolve(e)));
  expect(err).toBeInstanceOf(KitSchemaOutdated);
  expect((err as Error).message).toContain('run `npx ticket-events migrate --schema never_migrated`');

  const self = new TicketEventsServer({ ...options, schema: 'self_migrated', migrate: true });
  // It migrates, then waits for the (absent) topic: stop it once the schema is there.
  const listening = new Promise<unknown>((resolve) => void self.listen((e) => resolve(e)));
  for (let i = 0; i < 100 && !(await tables('self_migrated')).includes('kit_migrations'); i++)
    await new Promise((r) => setTimeout(r, 100));
  await self.close();
  await listening;
  const v = await db.query('SELECT max(version)::int AS v FROM self_migrated.kit_migrations');
  expect(v.rows[0].v).toBe(KIT_SCHEMA_VERSION);
});

it('a consumer whose database cannot be reached or does not exist refuses to start and says what to check', async () => {
  // A port nothing listens on: one the OS just handed out, closed again.
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as AddressInfo).port;
  await new Promise((r) => probe.close(r));
  const missing = new URL(database.url);
  missing.pathname = '/kit_no_such_database';
  for (const [databaseUrl, where, code] of [
    [`postgresql://postgres@127.0.0.1:${port}/tickets`, `127.0.0.1:${port}/tickets`, 'ECONNREFUSED'],
    // localhost has two addresses here (::1, 127.0.0.1): pg fails with an AggregateError whose own message is empty.
    [`postgresql://postgres@localhost:${port}/tickets`, `localhost:${port}/tickets`, 'ECONNREFUSED'],
    [missing.toString(), `${missing.hostname}:${missing.port || 5432}/kit_no_such_database`, '3D000'],
  ]) {
    const server = new TicketEventsServer({
      brokers: TEST_KAFKA_BROKERS,
      topic: 'kit-migrate-unused',
      groupId: 'kit-migrate-it',
      databaseUrl,
      metrics: false,
    });
    const err = await new Promise<unknown>((resolve) => void server.listen((e) => resolve(e)));
    expect(err).toBeInstanceOf(KitDatabaseUnavailable);
    expect((err as Error).message).toMatch(
      new RegExp(
        `^the consumer kit cannot use PostgreSQL at ${where.replace(/[.]/g, '\\.')} \\(${code}: .*\\): check its databaseUrl option \\(DATABASE_URL\\)`,
      ),
    );
    expect((err as Error).message).not.toContain('postgres@');
    expect((err as Error).message).toMatch(
      /\(ECONNREFUSED: connect ECONNREFUSED|\(3D000: database "kit_no_such_database" does not exist/,
    );
    expect((err as { cause?: { code?: string } }).cause?.code).toBe(code);
  }
});

it('a consumer whose databaseUrl asks for SSL that the server does not offer says what to change', async () => {
  const url = new URL(database.url);
  url.searchParams.set('sslmode', 'require');
  // The test server runs without SSL (SHOW ssl: off), as many local and in-cluster servers do.
  expect((await db.query<{ ssl: string }>('SHOW ssl')).rows[0].ssl).toBe('off');
  const server = new TicketEventsServer({
    brokers: TEST_KAFKA_BROKERS,
    topic: 'kit-migrate-unused',
    groupId: 'kit-migrate-it',
    databaseUrl: url.toString(),
    metrics: false,
  });
  const err = await new Promise<unknown>((resolve) => void server.listen((e) => resolve(e)));
  expect(err).toBeInstanceOf(KitDatabaseUnavailable);
  expect((err as Error).message).toBe(
    `the consumer kit cannot use PostgreSQL at ${url.hostname}:${url.port || 5432}${url.pathname} does not accept SSL connections, and its databaseUrl option (DATABASE_URL) asks for them (sslmode=require): remove sslmode=require or use sslmode=disable there, or turn SSL on at the server`,
  );
  expect((err as { cause?: Error }).cause?.message).toBe('The server does not support SSL connections');
});
