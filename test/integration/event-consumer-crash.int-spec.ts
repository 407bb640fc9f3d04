// A consumer process SIGKILLed after its transaction committed and before its offset commit: the
// next process of the group gets the redelivery, and the inbox turns it into skips (no second effect).
// The processes are real: the kit example compiled and run with node (needs `npm run build`).
import { Pool } from 'pg';
import { randomUUID } from 'node:crypto';
import { TEST_DATABASE_URL } from '../support/env';
import { eventually, kafkaFixture, ticketCreated, toMessage, uniqueName } from '../support/events-factory';
import { EFFECTS_DDL } from '../support/kit-example';
import { spawnKitChild, type KitChild } from '../support/kit-child-process';

jest.setTimeout(120_000);

describe('event consumer kit: killed between transaction and offset commit', () => {
  const topic = uniqueName('kit-crash');
  const groupId = uniqueName('kit-crash-group');
  let fx: Awaited<ReturnType<typeof kafkaFixture>>;
  let db: Pool;
  const children: KitChild[] = [];

  beforeAll(async () => {
    db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
    await db.query(EFFECTS_DDL);
    fx = await kafkaFixture(topic, 1);
  });

  afterAll(async () => {
    for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
    await db.query('DELETE FROM kit_test_effects WHERE group_id = $1', [groupId]);
    await db.query('DELETE FROM ticket_events.inbox_events WHERE group_id = $1', [groupId]);
    await db.end();
    await fx?.close();
  });

  it('redelivers the chunk to the next process, which skips every event of it: one effect per event', async () => {
    const tenantId = randomUUID();
    const events = Array.from({ length: 30 }, () => ticketCreated(tenantId));
    await fx.producer.send({ topic, messages: events.map((e) => toMessage(e, 0)) });

    const first = spawnKitChild({ topic, groupId, killAfterTx: true });
    children.push(first);
    const [, , lastOffset] = (await first.line('TX_COMMITTED')).split(' ');
    first.proc.kill('SIGKILL');
    await first.exited;
    expect(first.proc.signalCode).toBe('SIGKILL');

    const handledBeforeKill = Number(lastOffset) + 1;
    const effects = async () =>
      (
        await db.query<{ n: number; distinct: number }>(
          'SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS distinct FROM kit_test_effects WHERE group_id = $1',
          [groupId],
        )
      ).rows[0];
    // The transaction committed: its effects are there. Its offset never was.
    expect(await effects()).toEqual({ n: handledBeforeKill, distinct: handledBeforeKill });
    const [before] = await fx.admin.fetchOffsets({ groupId, topics: [topic] });
    expect(before.partitions[0].offset).toBe('-1');

    const second = spawnKitChild({ topic, groupId });
    children.push(second);
    await eventually(
      async () => (await fx.admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions[0].offset,
      (o) => o === '30',
      90_000,
      'the second process to commit offset 30',
    );
    expect(await effects()).toEqual({ n: 30, distinct: 30 });
    // Every event the killed process had handled came again and was skipped by the inbox.
    const dup = await db.query<{ d: number }>(
      'SELECT sum(duplicates)::int AS d FROM ticket_events.inbox_events WHERE group_id = $1',
      [groupId],
    );
    expect(dup.rows[0].d).toBe(handledBeforeKill);
    // SIGTERM: a graceful stop leaves the group at once (a killed member would stay for the session timeout).
    second.proc.kill('SIGTERM');
    await second.exited;
    const { groups } = await fx.admin.describeGroups([groupId]);
    expect(groups[0].members).toEqual([]);
  });
});
