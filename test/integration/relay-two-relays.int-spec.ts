// Two relays on one database, rows arriving while they run, and a hand-over in the middle:
// per-ticket order in the topic is created-before-cancelled and every event appears exactly once.
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { Registry } from 'prom-client';
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
  type OutboxRowSpec,
  type RelayTestDatabase,
} from '../support/outbox-factory';

const TICKETS = 300;
const topic = `relay-two-${randomUUID().slice(0, 8)}`;
const tenantId = randomUUID();
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent', 'relay-test');
let database: RelayTestDatabase;
let db: Pool;
const relays: OutboxRelay[] = [];

function newRelay(name: string): OutboxRelay {
  const relay = new OutboxRelay({
    databaseUrl: database.url,
    kafka: { brokers: TEST_KAFKA_BROKERS, clientId: `relay-test-${name}`, topic, partitions: 6 },
    logger: logger.child({ relay: name }),
    registry: new Registry(),
    // Small batches so that the hand-over lands between batches of one ticket's events.
    batchSize: 50,
    pollIntervalMs: 200,
    leaderRetryMs: 100,
    retryBaseMs: 50,
    retryMaxMs: 500,
  });
  relays.push(relay);
  return relay;
}

beforeAll(async () => {
  database = await createRelayTestDatabase('two');
  db = new Pool({ connectionString: database.url, max: 4 });
});

afterAll(async () => {
  await Promise.all(relays.map((r) => r.stop()));
  await db?.end();
  await database?.drop();
  await deleteTopic(TEST_KAFKA_BROKERS, topic);
});

it(`keeps created-before-cancelled per ticket and publishes each event once, with two relays and a hand-over (${TICKETS} tickets)`, async () => {
  const a = newRelay('a');
  const b = newRelay('b');
  await Promise.all([a.start(), b.start()]);
  await waitFor('a leader', async () => (await a.stats()).isLeader || (await b.stats()).isLeader);

  const lifecycles = Array.from({ length: TICKETS }, () => ticketLifecycle(tenantId));
  const all: OutboxRowSpec[] = lifecycles.flat();
  // Ten waves, each a few concurrent transactions: the creates of 30 new tickets and the cancels
  // of the previous wave's 30 tickets. A cancel is committed only after its create (as in the API).
  const waves = 10;
  const perWave = TICKETS / waves;
  let handedOver: OutboxRelay | undefined;
  for (let w = 0; w <= waves; w++) {
    const creates = lifecycles.slice(w * perWave, (w + 1) * perWave).map(([c]) => c);
    const cancels = w > 0 ? lifecycles.slice((w - 1) * perWave, w * perWave).map(([, x]) => x) : [];
    await Promise.all([
      insertOutboxRows(db, creates.slice(0, perWave / 2)),
      insertOutboxRows(db, creates.slice(perWave / 2)),
      insertOutboxRows(db, cancels),
    ]);
    await new Promise((r) => setTimeout(r, 30));
    if (w === waves / 2) {
      // Hand-over: stop whichever relay leads (graceful: finishes its batch, releases the lock).
      handedOver = (await a.stats()).isLeader ? a : b;
      await handedOver.stop();
    }
  }
  const survivor = handedOver === a ? b : a;
  await waitFor(
    'every row published',
    async () => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox_pending')).rows[0].n === 0,
    60_000,
  );
  expect((await survivor.stats()).isLeader).toBe(true);
  const byA = (await a.stats()).published;
  const byB = (await b.stats()).published;
  expect(byA + byB).toBe(all.length);
  expect(byA).toBeGreaterThan(0); // both took part: the hand-over happened mid-stream
  expect(byB).toBeGreaterThan(0);

  const messages = await readTopic(TEST_KAFKA_BROKERS, topic);
  // Exactly once each: no relay published what the other did.
  expect(messages).toHaveLength(all.length);
  expect(new Set(messages.map((m) => m.headers['event-id'])).size).toBe(all.length);
  // Per ticket: same partition, created at a lower offset than cancelled.
  const byTicket = new Map<string, typeof messages>();
  for (const m of messages) byTicket.set(m.key, [...(byTicket.get(m.key) ?? []), m]);
  expect(byTicket.size).toBe(TICKETS);
  for (const [created, cancelled] of lifecycles) {
    const events = byTicket.get(created.aggregateId)!;
    expect(events.map((m) => m.headers['event-id'])).toEqual([created.eventId, cancelled.eventId]);
    expect(events[0].partition).toBe(events[1].partition);
  }
});
