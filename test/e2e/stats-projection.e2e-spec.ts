// The second consumer built on the kit: the per-tenant statistics projection, fed by the real path
// (POST → outbox → relay → Kafka → stats consumer), served at GET /v1/stats and compared with a SQL
// count over `tickets` after a normal run, after two full replays (nothing may change), and after a
// rebuild (projection emptied, topic re-read from earliest).
import { randomUUID } from 'node:crypto';
import type { INestMicroservice } from '@nestjs/common';
import type { TicketEventsServer } from '@tickets/event-consumer';
import { createLogger } from '@tickets/logger';
import { createStatsConsumer } from '../../apps/stats-consumer/src/stats-consumer.app';
import { resetStatsGroup } from '../../apps/stats-consumer/src/rebuild';
import { RelayService } from '../../apps/ticket-api/src/relay/relay.service';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from '../support/env';
import { eventually, kafkaFixture, uniqueName } from '../support/events-factory';
import { kitOptions } from '../support/kit-options';
import { get, post, startTestStack, type TestStack, type TestTenant } from '../support/stack';

jest.setTimeout(180_000);

const PRIORITIES = ['low', 'normal', 'high', 'urgent'] as const;

describe('stats projection consumer and GET /v1/stats', () => {
  const topic = uniqueName('stats');
  const groupId = uniqueName('stats-group');
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  let stack: TestStack;
  let tenants: TestTenant[];
  let consumer: { app: INestMicroservice; server: TicketEventsServer } | undefined;
  let totalEvents = 0;

  const start = async () => {
    consumer = await createStatsConsumer(kitOptions(topic, groupId), createLogger('silent', 'stats-test'));
  };
  const stop = async () => {
    await consumer?.app.close();
    consumer = undefined;
  };
  const counter = async (name: 'processed' | 'duplicates') =>
    (await consumer!.server.metrics[name].get()).values.reduce((s, v) => s + v.value, 0);
  /** The topic's end and the group's committed offsets, summed over the partitions (shown when a wait times out). */
  const offsets = async () => {
    const high = (await fx.admin.fetchTopicOffsets(topic)).reduce((s, p) => s + Number(p.high), 0);
    const done = (await fx.admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions.reduce(
      (s, p) => s + Math.max(0, Number(p.offset)),
      0,
    );
    return { totalEvents, high, done };
  };
  const caughtUp = (o: { totalEvents: number; high: number; done: number }) =>
    o.high === o.totalEvents && o.done === o.high;

  /** The ground truth: a SQL count over the tenant's tickets, shaped like GET /v1/stats. */
  const truth = async (tenantId: string) => {
    const q = (sql: string) => stack.db.query(sql, [tenantId]).then((r) => r.rows);
    const byStatus: Record<string, number> = { open: 0, cancelled: 0 };
    for (const r of await q('SELECT status, count(*)::int AS n FROM tickets WHERE tenant_id = $1 GROUP BY status'))
      byStatus[r.status] = r.n;
    const byPriority: Record<string, number> = Object.fromEntries(PRIORITIES.map((p) => [p, 0]));
    for (const r of await q('SELECT priority, count(*)::int AS n FROM tickets WHERE tenant_id = $1 GROUP BY priority'))
      byPriority[r.priority] = r.n;
    const perDay = await q(`
      SELECT day::text AS day, sum(c)::int AS created, sum(k)::int AS cancelled FROM (
        SELECT (created_at AT TIME ZONE 'UTC')::date AS day, 1 AS c, 0 AS k FROM tickets WHERE tenant_id = $1
        UNION ALL
        SELECT (cancelled_at AT TIME ZONE 'UTC')::date, 0, 1 FROM tickets WHERE tenant_id = $1 AND cancelled_at IS NOT NULL) x
      GROUP BY day ORDER BY day`);
    return { source: groupId, byStatus, byPriority, perDay };
  };
  const served = async (t: TestTenant) => {
    const res = await get(stack.baseUrl, '/v1/stats', t.apiKey);
    expect(res.status).toBe(200);
    return JSON.parse(res.text);
  };
  const expectTruth = async () => {
    for (const t of tenants) expect(await served(t)).toEqual(await truth(t.tenantId));
  };

  beforeAll(async () => {
    process.env.STATS_GROUP_ID = groupId; // the stats consumer's group (it reads the process environment)
    fx = await kafkaFixture(topic, 3);
    stack = await startTestStack({
      // STATS_GROUP_ID: the API serves this group's projection.
      env: {
        KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
        TICKET_EVENTS_TOPIC: topic,
        RELAY_ENABLED: 'true',
        RELAY_POLL_INTERVAL: '200ms',
        STATS_GROUP_ID: groupId,
      },
    });
    tenants = [stack, await stack.newTenant('stats')];
    for (const [ti, t] of tenants.entries()) {
      for (let i = 0; i < 24 + ti * 7; i++) {
        const created = await post(
          stack.baseUrl,
          '/v1/tickets',
          t.apiKey,
          { title: `t${i}`, priority: PRIORITIES[(i * (ti + 1)) % 4] },
          randomUUID(),
        );
        expect(created.status).toBe(201);
        totalEvents++;
        if (i % 3 === 0) {
          const id = JSON.parse(created.text).id;
          expect((await post(stack.baseUrl, `/v1/tickets/${id}/cancel`, t.apiKey, {}, randomUUID())).status).toBe(200);
          totalEvents++;
          // A second cancel changes nothing and publishes nothing.
          expect((await post(stack.baseUrl, `/v1/tickets/${id}/cancel`, t.apiKey, {}, randomUUID())).status).toBe(200);
        }
      }
    }
    const ours = tenants.map((t) => t.tenantId);
    await eventually(
      async () =>
        (
          await stack.db.query(
            'SELECT count(*)::int AS n FROM outbox_pending p JOIN outbox_events o ON o.seq = p.seq WHERE o.tenant_id = ANY($1::uuid[])',
            [ours],
          )
        ).rows[0].n,
      (n) => n === 0,
      60_000,
      'the relay to publish every event of our tenants',
    );
    // The relay publishes every pending outbox row of the database, so rows other tests left behind
    // may be on the topic too: the consumer counts those as well (they are other tenants' events).
    // Stopped now, so that no row written or released later (another test's, a parked row whose backoff
    // ends) reaches the topic after its end is counted: every wait below compares with totalEvents.
    await stack.app.get(RelayService).stop();
    const onTopic = (await fx.admin.fetchTopicOffsets(topic)).reduce((s, p) => s + Number(p.high), 0);
    expect(onTopic).toBeGreaterThanOrEqual(totalEvents);
    totalEvents = onTopic;
  });

  afterAll(async () => {
    await stop();
    await stack?.db.query('DELETE FROM ticket_stats_counts WHERE group_id = $1', [groupId]);
    await stack?.db.query('DELETE FROM ticket_stats_daily WHERE group_id = $1', [groupId]);
    await stack?.db.query('DELETE FROM ticket_events.inbox_events WHERE group_id = $1', [groupId]);
    await stack?.stop();
    await fx?.close();
    delete process.env.STATS_GROUP_ID;
  });

  it('answers 401 problem+json without an API key', async () => {
    const res = await fetch(`${stack.baseUrl}/v1/stats`);
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(await res.text())).toMatchObject({ code: 'unauthorized', retryable: false });
    const doc = (await (await fetch(`${stack.baseUrl}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(doc.paths['/v1/stats']).toBeDefined();
  });

  it('equals the SQL count over tickets after a normal run', async () => {
    await start();
    await eventually(offsets, caughtUp, 60_000, 'the stats consumer to commit every offset');
    expect(await counter('processed')).toBe(totalEvents);
    await expectTruth();
    // Not vacuous: both tenants have open and cancelled tickets.
    expect((await served(tenants[1])).byStatus.cancelled).toBeGreaterThan(0);
  });

  it('is unchanged by two full replays from earliest (every event skipped by the inbox)', async () => {
    for (let round = 1; round <= 2; round++) {
      await stop();
      await resetStatsGroup(
        { brokers: TEST_KAFKA_BROKERS, topic, groupId, databaseUrl: TEST_DATABASE_URL },
        { clear: false },
      );
      await start();
      await eventually(offsets, caughtUp, 60_000, `replay ${round} to finish`);
      expect(await counter('duplicates')).toBe(totalEvents);
      expect(await counter('processed')).toBe(0);
      await expectTruth();
    }
  });

  it('refuses to rebuild while a member of the group is running', async () => {
    await expect(
      resetStatsGroup({ brokers: TEST_KAFKA_BROKERS, topic, groupId, databaseUrl: TEST_DATABASE_URL }, { clear: true }),
    ).rejects.toThrow(/live members/);
    await expectTruth();
  });

  it('equals the SQL count again after rebuild (projection emptied, topic re-read from earliest)', async () => {
    await stop();
    const r = await resetStatsGroup(
      { brokers: TEST_KAFKA_BROKERS, topic, groupId, databaseUrl: TEST_DATABASE_URL },
      { clear: true },
    );
    expect(r).toEqual({ cleared: true, inboxRowsForgotten: totalEvents });
    expect((await served(tenants[0])).perDay).toEqual([]);
    await start();
    await eventually(offsets, caughtUp, 60_000, 'the rebuild to finish');
    expect(await counter('processed')).toBe(totalEvents);
    await expectTruth();
  });
});
