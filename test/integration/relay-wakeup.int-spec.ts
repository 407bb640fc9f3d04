// How a write wakes the relay now that outbox_events has no NOTIFY trigger (migration outbox_wakeup), on
// the real API (Nest + Fastify, in this process), the real PostgreSQL and the real Kafka broker:
//   - a relay the API does not host (as in apps/relay or another API instance) is woken by the API's
//     coalesced pg_notify, with a fallback poll far longer than the test;
//   - the API's own relay, when it leads, is woken directly (and the API sends no NOTIFY at all);
//   - a burst of creates sends far fewer NOTIFYs than creates (at most one per RELAY_NOTIFY_INTERVAL).
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { Registry } from 'prom-client';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { loadConfig } from '@tickets/config';
import { createPrismaClient } from '@tickets/db';
import { createLogger } from '@tickets/logger';
import { OUTBOX_NOTIFY_CHANNEL, OutboxRelay } from '@tickets/outbox';
import { createApiKey } from '@tickets/tenants';
import { createApiApp } from '../../apps/ticket-api/src/app.factory';
import { RelayService } from '../../apps/ticket-api/src/relay/relay.service';
import { TEST_KAFKA_BROKERS } from '../support/env';
import { createRelayTestDatabase, deleteTopic, waitFor, type RelayTestDatabase } from '../support/outbox-factory';
import { post } from '../support/stack';

jest.setTimeout(120_000);

const topic = `relay-wakeup-${randomUUID().slice(0, 8)}`;
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent', 'relay-wakeup-test');
const LONG_POLL = '10m';
let database: RelayTestDatabase;
let listener: Client;
/** Arrival times (ms) of every NOTIFY on the relay's channel. */
let notifications: number[] = [];
const cleanups: Array<() => Promise<unknown>> = [];

async function startApi(
  env: Record<string, string>,
): Promise<{ app: NestFastifyApplication; baseUrl: string; apiKey: string }> {
  const config = loadConfig({
    DATABASE_URL: database.url,
    PORT: '0',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DB_POOL_MAX: '10',
    KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
    TICKET_EVENTS_TOPIC: topic,
    RELAY_POLL_INTERVAL: LONG_POLL,
    ...env,
  });
  const app = await createApiApp(config, createLogger(config.logLevel, 'ticket-api-test'));
  await app.listen(0, '127.0.0.1');
  cleanups.push(() => app.close());
  const prisma = createPrismaClient(database.url, 1, 'tests');
  try {
    const { apiKey } = await createApiKey(prisma, `wakeup-${randomUUID().slice(0, 8)}`);
    return { app, baseUrl: (await app.getUrl()).replace('[::1]', '127.0.0.1'), apiKey };
  } finally {
    await prisma.$disconnect();
  }
}

async function unpublished(): Promise<number> {
  const c = new Client({ connectionString: database.url });
  await c.connect();
  try {
    return (await c.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox_pending')).rows[0].n;
  } finally {
    await c.end();
  }
}

async function create(api: { baseUrl: string; apiKey: string }, title: string) {
  const res = await post(api.baseUrl, '/v1/tickets', api.apiKey, { title }, randomUUID());
  expect(res.status).toBe(201);
  return JSON.parse(res.text) as { id: string };
}

beforeAll(async () => {
  database = await createRelayTestDatabase('wakeup');
  listener = new Client({ connectionString: database.url });
  await listener.connect();
  listener.on('notification', (n) => n.channel === OUTBOX_NOTIFY_CHANNEL && notifications.push(Date.now()));
  await listener.query(`LISTEN ${OUTBOX_NOTIFY_CHANNEL}`);
});

beforeEach(() => {
  notifications = [];
});

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

afterAll(async () => {
  await listener?.end();
  await database?.drop();
  await deleteTopic(TEST_KAFKA_BROKERS, topic);
});

describe('waking the outbox relay after a commit', () => {
  it('the outbox table has no NOTIFY trigger any more: its one trigger queues the rows and notifies nobody', async () => {
    const c = new Client({ connectionString: database.url });
    await c.connect();
    try {
      const { rows } = await c.query<{ tgname: string; prosrc: string }>(
        `SELECT t.tgname, p.prosrc FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
          WHERE t.tgrelid = 'outbox_events'::regclass AND NOT t.tgisinternal`,
      );
      expect(rows.map((r) => r.tgname)).toEqual(['outbox_events_enqueue']);
      expect(rows[0].prosrc).not.toMatch(/notify/i);
    } finally {
      await c.end();
    }
  });

  it('a relay outside the API process publishes a create and a cancel without waiting for its poll', async () => {
    const api = await startApi({ RELAY_ENABLED: 'false' });
    const relay = new OutboxRelay({
      databaseUrl: database.url,
      kafka: {
        brokers: TEST_KAFKA_BROKERS,
        clientId: 'relay-wakeup-test',
        topic,
        partitions: 3,
        retentionMs: 86_400_000,
      },
      logger,
      registry: new Registry(),
      pollIntervalMs: 600_000, // longer than the test's deadline: only a NOTIFY can wake it in time
      leaderRetryMs: 200,
    });
    cleanups.push(() => relay.stop());
    await relay.start();
    await waitFor('leadership', async () => (await relay.stats()).isLeader);
    await waitFor('the relay drained what was there', async () => (await unpublished()) === 0);

    const ticket = await create(api, 'wake the other relay');
    await waitFor('the create published by the other relay', async () => (await unpublished()) === 0, 30_000);
    const cancel = await post(api.baseUrl, `/v1/tickets/${ticket.id}/cancel`, api.apiKey, {}, randomUUID());
    expect(cancel.status).toBe(200);
    await waitFor('the cancel published by the other relay', async () => (await unpublished()) === 0, 30_000);
    expect((await relay.stats()).published).toBeGreaterThanOrEqual(2);
    expect(notifications.length).toBeGreaterThanOrEqual(2);
  });

  it("the API's own relay, when it leads, is woken directly: published without its poll and without a NOTIFY", async () => {
    const api = await startApi({ RELAY_ENABLED: 'true' });
    const relay = api.app.get(RelayService);
    await waitFor('the in-process relay leads', async () => (await relay.stats())!.isLeader);
    await waitFor('the relay drained what was there', async () => (await unpublished()) === 0);
    notifications = [];

    for (let i = 0; i < 3; i++) {
      await create(api, `wake my own relay ${i}`);
      await waitFor('the create published by the in-process relay', async () => (await unpublished()) === 0, 30_000);
    }
    expect(notifications).toEqual([]);
  });

  it('a burst of creates sends far fewer NOTIFYs than creates: at most one per RELAY_NOTIFY_INTERVAL, and one after the last', async () => {
    const intervalMs = 200;
    const api = await startApi({ RELAY_ENABLED: 'false', RELAY_NOTIFY_INTERVAL: `${intervalMs}ms` });
    const n = 80;
    const t0 = Date.now();
    const tickets = await Promise.all(Array.from({ length: n }, (_, i) => create(api, `burst ${i}`)));
    expect(new Set(tickets.map((t) => t.id)).size).toBe(n);
    // The trailing NOTIFY (the one that starts after the last commit) comes within one interval.
    await waitFor(
      'the NOTIFY after the last create',
      () => notifications.length > 0 && Date.now() - notifications[notifications.length - 1] > 3 * intervalMs,
    );
    const elapsed = Date.now() - t0;
    expect(notifications.length).toBeGreaterThanOrEqual(1);
    expect(notifications.length).toBeLessThanOrEqual(Math.floor(elapsed / intervalMs) + 1);
    expect(notifications.length).toBeLessThan(n / 2);
  });
});
