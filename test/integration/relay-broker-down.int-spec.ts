// A broker outage of any length never ends the relay: it starts while the broker is unreachable
// (topic set-up included), survives a cut far longer than kafkajs's own retries, says so in
// health(), and once the broker answers publishes everything exactly once, in order per ticket.
//
// The broker is cut with a TcpCutProxy between the relay and the shared broker (kafkajs
// socketFactory): connection refused and open sockets reset, while the broker keeps serving the
// other test files.
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
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

jest.setTimeout(180_000);

const topic = `relay-down-${randomUUID().slice(0, 8)}`;
const tenantId = randomUUID();
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent', 'relay-test');
const [brokerHost, brokerPort] = TEST_KAFKA_BROKERS[0].split(':');
const proxy = new TcpCutProxy({ host: brokerHost, port: Number(brokerPort) });
const registry = new Registry();
/** kafkajs client retries of the relay (3 retries, 100 ms doubling up to 1 s): about 1.5 s. The cut lasts ten times that. */
const LONG_CUT_MS = 15_000;
let database: RelayTestDatabase;
let db: Pool;
let relay: OutboxRelay;

const pending = async () => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox_pending')).rows[0].n;
const transientFailures = async () =>
  (await registry.getMetricsAsJSON())
    .find((m) => m.name === 'outbox_publish_failures_total')
    ?.values.find((v) => v.labels.kind === 'transient')?.value ?? 0;

beforeAll(async () => {
  database = await createRelayTestDatabase('down');
  db = new Pool({ connectionString: database.url, max: 4 });
  // An idle connection ended by the server (another job terminating sessions) is replaced; not this test's subject.
  db.on('error', () => undefined);
  await proxy.reservePort(); // the broker is "down" from the start
  relay = new OutboxRelay({
    databaseUrl: database.url,
    kafka: {
      brokers: TEST_KAFKA_BROKERS,
      clientId: 'relay-down-test',
      topic,
      partitions: 6,
      client: {
        socketFactory: ({ onConnect }) => connect({ host: '127.0.0.1', port: proxy.port }, onConnect),
        connectionTimeout: 1_000,
      },
    },
    logger,
    registry,
    batchSize: 40,
    pollIntervalMs: 200,
    // The production caps: a 30 s backoff cap for rejected rows, 1 s while the broker is unreachable.
    retryMaxMs: 30_000,
    outageRetryMaxMs: 1_000,
  });
});

afterAll(async () => {
  await relay?.stop();
  await proxy.cut();
  await db?.end();
  await database?.drop();
  await deleteTopic(TEST_KAFKA_BROKERS, topic);
});

const tickets = Array.from({ length: 120 }, () => ticketLifecycle(tenantId));
const creates = tickets.map(([c]) => c);
const cancels = tickets.map(([, x]) => x);

it('starts while the broker is unreachable, keeps the outbox, and publishes once the broker answers', async () => {
  await relay.start();
  await insertOutboxRows(db, creates.slice(0, 40));
  await waitFor(
    'the relay to lead and see the broker unreachable',
    () => relay.health().isLeader && relay.health().broker.state === 'unreachable',
  );
  // Past kafkajs's own retries, several relay attempts later: still retrying, nothing marked.
  await waitFor('several failed attempts', async () => (await transientFailures()) >= 4, 60_000);
  expect(relay.health().broker.unreachableForMs).toBeGreaterThan(0);
  expect(await pending()).toBe(40);

  await proxy.listen();
  await waitFor('the first wave published', async () => (await pending()) === 0, 60_000);
  expect(relay.health().broker).toEqual({ state: 'up', unreachableForMs: 0 });
});

it(`survives a cut far longer than kafkajs's retries, then publishes everything exactly once and in order`, async () => {
  await insertOutboxRows(db, [...creates.slice(40, 80), ...cancels.slice(0, 40)]);
  await waitFor('the second wave published', async () => (await pending()) === 0, 60_000);

  await proxy.cut();
  const failuresBefore = await transientFailures();
  // Rows keep arriving during the outage, in several transactions.
  for (const wave of [creates.slice(80, 120), cancels.slice(40, 80), cancels.slice(80, 100)])
    await insertOutboxRows(db, wave);
  await waitFor(
    "an outage ten times kafkajs's retry budget",
    () => relay.health().broker.unreachableForMs >= LONG_CUT_MS,
    120_000,
  );
  await insertOutboxRows(db, cancels.slice(100, 120));
  expect(await pending()).toBe(120);
  expect(relay.health().isLeader).toBe(true);
  // Still trying throughout (not given up), at about one attempt per second or less.
  expect((await transientFailures()) - failuresBefore).toBeGreaterThanOrEqual(5);

  await proxy.listen();
  await waitFor('everything published after the outage', async () => (await pending()) === 0, 60_000);
  expect(relay.health().broker.state).toBe('up');

  const messages = await readTopic(TEST_KAFKA_BROKERS, topic);
  const ids = messages.map((m) => m.headers['event-id']);
  expect(ids).toHaveLength(240);
  expect(new Set(ids).size).toBe(240);
  for (const [created, cancelled] of tickets) {
    expect(messages.filter((m) => m.key === created.aggregateId).map((m) => m.headers['event-id'])).toEqual([
      created.eventId,
      cancelled.eventId,
    ]);
  }
  expect((await relay.stats()).published).toBe(240);
});
