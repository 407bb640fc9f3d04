// Rebalances while events flow: two members of one group, a third joining mid-stream and the first
// leaving, 10,000 events on 6 partitions. Every event's effect exactly once, none lost.
import { randomUUID } from 'node:crypto';
import type { INestMicroservice } from '@nestjs/common';
import { Pool } from 'pg';
import type { TicketEventsServer } from '@tickets/event-consumer';
import { TEST_DATABASE_URL } from '../support/env';
import { eventually, kafkaFixture, ticketCreated, toMessage, uniqueName } from '../support/events-factory';
import { EFFECTS_DDL, startExample } from '../support/kit-example';
import { kitOptions } from '../support/kit-options';

jest.setTimeout(300_000);

const TOTAL = 10_000;

describe('event consumer kit: rebalances while 10,000 events flow', () => {
  const topic = uniqueName('kit-rebalance');
  const groupId = uniqueName('kit-rebalance-group');
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  let db: Pool;
  const members: { app: INestMicroservice; server: TicketEventsServer; closed?: boolean }[] = [];

  beforeAll(async () => {
    db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await db.query(EFFECTS_DDL);
    fx = await kafkaFixture(topic, 6);
  });

  afterAll(async () => {
    for (const m of members) if (!m.closed) await m.app.close();
    await db.query('DELETE FROM kit_test_effects WHERE group_id = $1', [groupId]);
    await db.query('DELETE FROM ticket_events.inbox_events WHERE group_id = $1', [groupId]);
    await db.end();
    await fx?.close();
  });

  it('applies every event exactly once across a join and a leave', async () => {
    const started = Date.now();
    const options = kitOptions(topic, groupId, { chunkSize: 200, partitionsConcurrency: 2, metrics: false });
    members.push(await startExample(options), await startExample(options));
    const effects = async () =>
      (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM kit_test_effects WHERE group_id = $1', [groupId]))
        .rows[0].n;

    const tenantId = randomUUID();
    const ids = new Set<string>();
    let sent = 0;
    /** Sends `n` more events in batches of 250 while the group works (a join or a leave may be under way). */
    const produce = async (n: number) => {
      for (const stop = sent + n; sent < stop; sent += 250) {
        const events = Array.from({ length: 250 }, () => ticketCreated(tenantId));
        events.forEach((e) => ids.add(e.id));
        await fx.producer.send({ topic, messages: events.map((e) => toMessage(e)) });
      }
    };
    /** The group is settled with `n` members, each holding partitions. */
    const settledWith = (n: number) =>
      eventually(
        async () => (await fx.admin.describeGroups([groupId])).groups[0],
        (g) => g.state === 'Stable' && g.members.length === n,
        120_000,
        `the group to settle with ${n} members`,
      );

    // The events flow in three parts, each started while the group is changing, and each part's tail sent
    // only once the change has settled, so every member, however fast the machine, gets events of its own.
    await settledWith(2);
    await produce(3_000);
    await eventually(effects, (n) => n >= 2_000, 120_000, 'the first effects');
    const joining = startExample(options); // a third member joins: rebalance while events flow
    await produce(1_500);
    members.push(await joining);
    await settledWith(3);
    await produce(1_500);
    await eventually(effects, (n) => n >= 5_000, 120_000, 'the effects before the leave');
    const leaving = members[0].app.close(); // the first leaves: rebalance while events flow
    members[0].closed = true;
    await produce(2_000);
    await leaving;
    await settledWith(2);
    await produce(TOTAL - sent);

    await eventually(effects, (n) => n >= TOTAL, 180_000, 'every effect');
    const committed = async () =>
      (await fx.admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions.reduce(
        (s, p) => s + Math.max(0, Number(p.offset)),
        0,
      );
    await eventually(committed, (n) => n === TOTAL, 60_000, 'every offset committed');

    const rows = await db.query<{ event_id: string; n: number }>(
      'SELECT event_id, count(*)::int AS n FROM kit_test_effects WHERE group_id = $1 GROUP BY event_id',
      [groupId],
    );
    expect(rows.rowCount).toBe(TOTAL);
    expect(rows.rows.filter((r) => r.n !== 1)).toEqual([]);
    expect(rows.rows.every((r) => ids.has(r.event_id))).toBe(true);
    // The stream really was shared: each of the three members handled events.
    const processed = await Promise.all(
      members.map(async (m) => (await m.server.metrics.processed.get()).values.reduce((s, v) => s + v.value, 0)),
    );
    expect(processed.every((n) => n > 0)).toBe(true);
    expect(processed.reduce((a, b) => a + b, 0)).toBe(TOTAL);
    process.stdout.write(
      `rebalance test: ${TOTAL} events through 3 members in ${Math.round((Date.now() - started) / 1000)} s\n`,
    );
  });
});
