// The relay's first outcome after start() (whenSettled), which the API waits for before it listens: a leader
// settles only once its producer is connected (its first send then goes out without a connect), a second relay
// on the same lock settles as a standby, and one whose broker does not answer settles as retrying instead of
// holding the start. Real PostgreSQL and broker.
import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { createLogger } from '@tickets/logger';
import { OutboxRelay } from '@tickets/outbox';
import { TEST_KAFKA_BROKERS } from '../support/env';
import { createRelayTestDatabase, deleteTopic, type RelayTestDatabase } from '../support/outbox-factory';

const topic = `relay-start-${randomUUID().slice(0, 8)}`;
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent', 'relay-test');
let database: RelayTestDatabase;
const relays: OutboxRelay[] = [];

function newRelay(name: string, over: { brokers?: string[]; lockKey?: string } = {}): OutboxRelay {
  const relay = new OutboxRelay({
    databaseUrl: database.url,
    kafka: { brokers: over.brokers ?? TEST_KAFKA_BROKERS, clientId: `relay-start-${name}`, topic, partitions: 3 },
    logger: logger.child({ relay: name }),
    registry: new Registry(),
    pollIntervalMs: 200,
    leaderRetryMs: 100,
    retryBaseMs: 50,
    retryMaxMs: 500,
    ...(over.lockKey ? { lockKey: over.lockKey } : {}),
  });
  relays.push(relay);
  return relay;
}

/** The producer the leader's publisher holds, or undefined before it connected (KafkaPublisher's own field). */
const producerOf = (relay: OutboxRelay) =>
  (relay as unknown as { publisher: { producer?: unknown } }).publisher.producer;

beforeAll(async () => {
  database = await createRelayTestDatabase('start');
});

afterAll(async () => {
  await Promise.all(relays.map((r) => r.stop()));
  await database?.drop();
  await deleteTopic(TEST_KAFKA_BROKERS, topic);
});

it('settles as leading once the leader holds a connected producer, and a second relay on the lock as standby', async () => {
  const leader = newRelay('leader');
  expect(producerOf(leader)).toBeUndefined();
  await leader.start();
  expect(await leader.whenSettled()).toBe('leading');
  expect(leader.health().isLeader).toBe(true);
  expect(producerOf(leader)).toBeDefined();

  const standby = newRelay('standby');
  await standby.start();
  expect(await standby.whenSettled()).toBe('standby');
  expect(standby.health().isLeader).toBe(false);
});

it('settles as retrying when its broker does not answer, and keeps retrying', async () => {
  const relay = newRelay('no-broker', { brokers: ['127.0.0.1:1'], lockKey: '8317001' });
  await relay.start();
  expect(await relay.whenSettled()).toBe('retrying');
  expect(relay.health().isLeader).toBe(true); // it leads its own lock and retries the broker in the background
  expect(producerOf(relay)).toBeUndefined();
});
