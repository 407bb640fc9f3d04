// A database outage does not end the relay: it loses its lock connection (and with it the
// leadership), says so once and in health(), reconnects every second or so, leads again when
// PostgreSQL answers, and publishes what was written meanwhile, exactly once and in order.
//
// The outage is a TcpCutProxy between the relay (lock connection and pool) and PostgreSQL; the test
// writes its rows directly, as the API on another host would.
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { Registry } from 'prom-client';
import { TcpCutProxy } from '@tickets/fault-proxy';
import { createLogger } from '@tickets/logger';
import { OutboxRelay } from '@tickets/outbox';
import { TEST_KAFKA_BROKERS } from '../support/env';
import {
  createRelayTestDatabase,
  deleteTopic,
  insertOutboxRows,
  readTopic,
  ticketLifecycle,
  waitFor,
  type RelayTestDatabase,
} from '../support/outbox-factory';

jest.setTimeout(120_000);

const topic = `relay-db-outage-${randomUUID().slice(0, 8)}`;
const tenantId = randomUUID();
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent', 'relay-test');
let database: RelayTestDatabase;
let db: Pool;
let proxy: TcpCutProxy;
let relay: OutboxRelay | undefined;

const pending = async () => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox_pending')).rows[0].n;

beforeAll(async () => {
  database = await createRelayTestDatabase('db_outage');
  db = new Pool({ connectionString: database.url, max: 2 });
  // An idle connection ended by the server (another job terminating sessions) is replaced; not this test's subject.
  db.on('error', () => undefined);
  const target = new URL(database.url);
  proxy = new TcpCutProxy({ host: target.hostname, port: Number(target.port || 5432) });
  await proxy.listen();
});

afterAll(async () => {
  await relay?.stop();
  await proxy.cut();
  await db?.end();
  await database?.drop();
  await deleteTopic(TEST_KAFKA_BROKERS, topic);
});

it('loses the lock with the database, leads again when it is back, and publishes everything once', async () => {
  const viaProxy = new URL(database.url);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  relay = new OutboxRelay({
    databaseUrl: viaProxy.toString(),
    kafka: { brokers: TEST_KAFKA_BROKERS, clientId: 'relay-db-outage-test', topic, partitions: 3 },
    logger,
    registry: new Registry(),
    pollIntervalMs: 200,
  });
  const tickets = Array.from({ length: 60 }, () => ticketLifecycle(tenantId));
  await relay.start();
  await insertOutboxRows(db, tickets.slice(0, 30).flat());
  await waitFor('the first wave published', async () => (await pending()) === 0);

  await proxy.cut();
  await waitFor('the relay to see the database unreachable', () => relay!.health().database.state === 'unreachable');
  expect(relay.health().isLeader).toBe(false);
  await insertOutboxRows(
    db,
    tickets.slice(30, 60).map(([c]) => c),
  );
  await insertOutboxRows(
    db,
    tickets.slice(30, 60).map(([, x]) => x),
  );
  await waitFor('an outage of a few reconnect attempts', () => relay!.health().database.unreachableForMs >= 3_000);
  expect(await pending()).toBe(60);

  await proxy.listen();
  await waitFor('everything published after the outage', async () => (await pending()) === 0, 60_000);
  expect(relay.health()).toMatchObject({ isLeader: true, database: { state: 'up' } });

  const messages = await readTopic(TEST_KAFKA_BROKERS, topic);
  expect(messages).toHaveLength(120);
  expect(new Set(messages.map((m) => m.headers['event-id'])).size).toBe(120);
  for (const [created, cancelled] of tickets) {
    expect(messages.filter((m) => m.key === created.aggregateId).map((m) => m.headers['event-id'])).toEqual([
      created.eventId,
      cancelled.eventId,
    ]);
  }
});
