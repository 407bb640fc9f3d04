// The broker becomes unreachable under load and comes back: the relay backs off, marks nothing it
// could not get acknowledged, and catches up without losing an event. And while idle, the relay's
// broker state (health) follows the broker too.
//
// The outage is a real TCP cut, not a stopped broker: every relay connection to the broker goes
// through a node:net proxy (kafkajs `socketFactory`), and the test closes the proxy (connection
// refused) and destroys its open sockets mid-stream. The shared broker keeps running, so other test
// files are not disturbed and the test takes seconds instead of a broker restart.
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { Pool } from 'pg';
import { Registry } from 'prom-client';
import { TcpCutProxy } from '@tickets/fault-proxy';
import { createLogger } from '@tickets/logger';
import { OutboxRelay, type OutboxRelayOptions } from '@tickets/outbox';
import { TEST_KAFKA_BROKERS } from '../support/env';
import {
  createRelayTestDatabase,
  deleteTopic,
  insertOutboxRows,
  readTopic,
  ticketEventRow,
  ticketLifecycle,
  waitFor,
  type RelayTestDatabase,
} from '../support/outbox-factory';

const topic = `relay-outage-${randomUUID().slice(0, 8)}`;
const tenantId = randomUUID();
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent', 'relay-test');
const [brokerHost, brokerPort] = TEST_KAFKA_BROKERS[0].split(':');
let database: RelayTestDatabase;
let db: Pool;
let relay: OutboxRelay | undefined;
const proxy = new TcpCutProxy({ host: brokerHost, port: Number(brokerPort) });

beforeAll(async () => {
  database = await createRelayTestDatabase('outage');
  db = new Pool({ connectionString: database.url, max: 4 });
  await proxy.listen();
});

afterAll(async () => {
  await relay?.stop();
  await proxy.cut();
  await db?.end();
  await database?.drop();
  await deleteTopic(TEST_KAFKA_BROKERS, topic);
});

async function pending(): Promise<number> {
  return (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox_pending')).rows[0].n;
}

/** A relay whose every broker connection goes through the proxy. */
function proxiedRelay(settings: Partial<OutboxRelayOptions> = {}): OutboxRelay {
  return new OutboxRelay({
    databaseUrl: database.url,
    // Single-broker cluster: every connection (seed and advertised address alike) goes via the proxy.
    kafka: {
      brokers: TEST_KAFKA_BROKERS,
      clientId: 'relay-test',
      topic,
      partitions: 6,
      client: {
        socketFactory: ({ onConnect }) => connect({ host: '127.0.0.1', port: proxy.port }, onConnect),
        connectionTimeout: 1_000,
      },
    },
    logger,
    registry: new Registry(),
    batchSize: 100,
    pollIntervalMs: 200,
    retryBaseMs: 100,
    retryMaxMs: 1_000,
    stopTimeoutMs: 3_000,
    ...settings,
  });
}

it('loses nothing while the broker is unreachable under load, backs off, and catches up when it returns', async () => {
  const registry = new Registry();
  relay = proxiedRelay({ registry });
  await relay.start();

  const tickets = Array.from({ length: 150 }, () => ticketLifecycle(tenantId));
  const creates = tickets.map(([c]) => c);
  const cancels = tickets.map(([, x]) => x);

  // Phase 1: broker reachable.
  await insertOutboxRows(db, creates.slice(0, 50));
  await waitFor('first wave published', async () => (await pending()) === 0);

  // Phase 2: cut while rows keep arriving in several transactions.
  await proxy.cut();
  const cutAt = Date.now();
  const whileDown = [creates.slice(50, 100), cancels.slice(0, 50), creates.slice(100, 150), cancels.slice(50, 100)];
  for (const wave of whileDown) {
    await insertOutboxRows(db, wave);
    await new Promise((r) => setTimeout(r, 300));
  }
  const transientFailures = async () =>
    (await registry.getMetricsAsJSON())
      .find((m) => m.name === 'outbox_publish_failures_total')
      ?.values.find((v) => v.labels.kind === 'transient')?.value ?? 0;
  await waitFor('the relay to report failed sends', async () => (await transientFailures()) >= 2, 30_000);
  await new Promise((r) => setTimeout(r, Math.max(0, 6_000 - (Date.now() - cutAt)))); // several backoff rounds
  // Nothing was acknowledged, so nothing was marked.
  expect(await pending()).toBe(200);
  expect((await relay.stats()).isLeader).toBe(true);
  expect(await transientFailures()).toBeLessThan(50); // backing off, not spinning

  // Phase 3: back up, with one more wave arriving.
  await proxy.listen();
  await insertOutboxRows(db, cancels.slice(100, 150));
  const t0 = Date.now();
  await waitFor('caught up after the outage', async () => (await pending()) === 0, 60_000);
  const catchUpMs = Date.now() - t0;
  expect(catchUpMs).toBeLessThan(20_000);

  const messages = await readTopic(TEST_KAFKA_BROKERS, topic);
  const ids = messages.map((m) => m.headers['event-id']);
  // Every event arrived; the idempotent producer resent the very same batches, so no duplicates either.
  expect(new Set(ids).size).toBe(300);
  expect(ids).toHaveLength(300);
  for (const [created, cancelled] of tickets) {
    const events = messages.filter((m) => m.key === created.aggregateId).map((m) => m.headers['event-id']);
    expect(events).toEqual([created.eventId, cancelled.eventId]);
  }
});

// An idle leader (nothing to publish) still knows whether the broker answers: /health/outbox reads
// relay.stats().broker, which the sends alone would leave `up` until a row waits.
it('an idle leader reports the broker unreachable soon after it goes away, and up once it is back', async () => {
  await relay?.stop();
  relay = proxiedRelay({ pollIntervalMs: 500 });
  await relay.start();
  const broker = async () => (await relay!.stats()).broker.state;
  // One row published: the topic is set up and the producer connected; then the relay idles.
  await insertOutboxRows(db, [ticketEventRow({ tenantId, kind: 'created' })]);
  await waitFor('the row published', async () => (await pending()) === 0, 30_000);
  expect(await broker()).toBe('up');

  await proxy.cut();
  await waitFor('the idle relay to see the broker unreachable', async () => (await broker()) === 'unreachable', 20_000);
  const stats = await relay.stats();
  expect(stats.pending).toBe(0); // nothing was sent: the probe found it out
  expect(stats.isLeader).toBe(true);

  await proxy.listen();
  await waitFor('the idle relay to see the broker back', async () => (await broker()) === 'up', 20_000);
});
