// Upgrading a deployment of the ticket service whose kit tables were made by the earlier Prisma
// migrations (in public): `npm run db:migrate` (Prisma's migrations, then the kit's) moves them into
// the ticket_events schema with every row, and replaying the topic from earliest afterwards sends
// nothing again: the notifier creates no notification, the kit example applies no second effect.
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { loadConfig, loadEventConsumerConfig } from '@tickets/config';
import { createLogger } from '@tickets/logger';
import { createConsumerApp, type NotifierApp } from '../../apps/consumer/src/consumer.app';
import { TEST_KAFKA_BROKERS } from '../support/env';
import { eventually, kafkaFixture, ticketCreated, toMessage, uniqueName } from '../support/events-factory';
import { scratchDatabase, serviceMigrate, type ScratchDatabase } from '../support/kit-databases';
import { EFFECTS_DDL, startExample } from '../support/kit-example';
import { kitOptions } from '../support/kit-options';

jest.setTimeout(120_000);

const topic = uniqueName('kit-upgrade');
const notifierGroup = uniqueName('kit-upgrade-notifier');
const kitGroup = uniqueName('kit-upgrade-kit');
const tenantId = randomUUID();
const events = Array.from({ length: 6 }, () => ticketCreated(tenantId));

let fx: Awaited<ReturnType<typeof kafkaFixture>>;
let database: ScratchDatabase;
let db: Pool;
let notifier: NotifierApp | undefined;
let example: Awaited<ReturnType<typeof startExample>> | undefined;

const count = async (sql: string, params: unknown[] = []) => (await db.query<{ n: number }>(sql, params)).rows[0].n;
const committed = async (group: string) =>
  (await fx.admin.fetchOffsets({ groupId: group, topics: [topic] }))[0].partitions.reduce(
    (a, p) => a + Math.max(0, Number(p.offset)),
    0,
  );

beforeAll(async () => {
  fx = await kafkaFixture(topic, 2);
  database = await scratchDatabase('upgrade', { prismaOnly: true });
  db = new Pool({ connectionString: database.url, max: 2 });
  await db.query(EFFECTS_DDL);
  await db.query('INSERT INTO tenants (id, slug) VALUES ($1, $2)', [tenantId, `kit-upgrade-${tenantId.slice(0, 8)}`]);
  // The deployment as it was: both groups have handled every event (inbox rows in public, the kit
  // example's effects), and one consumer dead letter was discarded (audited in public.dead_letter_actions).
  for (const group of [notifierGroup, kitGroup]) {
    await db.query(
      `INSERT INTO public.inbox_events (group_id, event_id, event_type, ticket_id, topic, partition, "offset")
       SELECT $1, e.id, 'ticket.created.v1', e.ticket, $2, 0, e.n FROM unnest($3::uuid[], $4::uuid[]) WITH ORDINALITY AS e(id, ticket, n)`,
      [group, topic, events.map((e) => e.id), events.map((e) => e.ticketId)],
    );
  }
  await db.query(
    'INSERT INTO kit_test_effects (group_id, event_id, ticket_id, partition) SELECT $1, e, e, 0 FROM unnest($2::uuid[]) AS e',
    [kitGroup, events.map((e) => e.id)],
  );
  const dead = await db.query<{ id: string }>(
    `INSERT INTO public.consumer_dead_letters (group_id, topic, partition, "offset", value, reason, resolution, resolved_at)
     VALUES ($1, $2, 0, 99, '{"broken":', 'not JSON', 'discarded', now()) RETURNING id`,
    [notifierGroup, topic],
  );
  await db.query(
    `INSERT INTO public.dead_letter_actions (kind, action, target_id, dead_reason, actor, note) VALUES ('consumer', 'discard', $1, 'not JSON', 'ops', 'before the upgrade'),
            ('notification', 'discard', $2, 'gone', 'ops', NULL)`,
    [dead.rows[0].id, randomUUID()],
  );
  await fx.producer.send({ topic, acks: -1, messages: events.map((e, i) => toMessage(e, i % 2)) });
});

afterAll(async () => {
  await notifier?.app.close();
  await example?.app.close();
  await fx?.admin.deleteGroups([notifierGroup, kitGroup]).catch(() => undefined);
  await Promise.allSettled([fx?.close(), db?.end()]);
  await database?.drop();
});

it('moves the kit tables into ticket_events with every row, and a replay from earliest sends nothing again', async () => {
  const out = serviceMigrate(database.url);
  expect(out).toContain(
    'consumer kit schema ticket_events: applied 1 kit_tables, 2 replay_pauses, 3 dead_letter_holds, 4 requeued_holds, 5 replay_dead_letters',
  );
  expect((await db.query('SELECT version, name FROM ticket_events.kit_migrations ORDER BY version')).rows).toEqual([
    { version: 1, name: 'kit_tables' },
    { version: 2, name: 'replay_pauses' },
    { version: 3, name: 'dead_letter_holds' },
    { version: 4, name: 'requeued_holds' },
    { version: 5, name: 'replay_dead_letters' },
  ]);
  expect(
    await count(
      "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public' AND table_name IN ('inbox_events', 'consumer_dead_letters', 'replays', 'replay_partitions')",
    ),
  ).toBe(0);
  expect(
    await count('SELECT count(*)::int AS n FROM ticket_events.inbox_events WHERE group_id = ANY($1)', [
      [notifierGroup, kitGroup],
    ]),
  ).toBe(12);
  expect(
    await count(
      "SELECT count(*)::int AS n FROM ticket_events.consumer_dead_letters WHERE group_id = $1 AND resolution = 'discarded'",
      [notifierGroup],
    ),
  ).toBe(1);
  // The consumer kind's audit moved to the kit's table; the service's other kinds stayed in public.
  expect((await db.query('SELECT actor, note, group_id FROM ticket_events.dead_letter_actions')).rows).toEqual([
    { actor: 'ops', note: 'before the upgrade', group_id: notifierGroup },
  ]);
  expect((await db.query('SELECT kind FROM public.dead_letter_actions')).rows).toEqual([{ kind: 'notification' }]);
  expect(serviceMigrate(database.url)).toContain('consumer kit schema ticket_events is up to date (version 5)');

  // Both groups have no committed offset: they read the whole topic from earliest, as a replay would.
  const config = loadConfig({
    DATABASE_URL: database.url,
    KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
    TICKET_EVENTS_TOPIC: topic,
    NOTIFIER_GROUP_ID: notifierGroup,
  });
  notifier = await createConsumerApp(
    config,
    loadEventConsumerConfig({ NOTIFIER_METRICS_PORT: '-1' }),
    createLogger('silent', 'kit-upgrade'),
    { dispatch: false },
  );
  example = await startExample(kitOptions(topic, kitGroup, { databaseUrl: database.url, metrics: false }));
  await eventually(
    () => committed(notifierGroup),
    (n) => n === events.length,
    30_000,
    'the notifier to re-read every event',
  );
  await eventually(
    () => committed(kitGroup),
    (n) => n === events.length,
    30_000,
    'the kit example to re-read every event',
  );

  expect(await count('SELECT count(*)::int AS n FROM notifications WHERE group_id = $1', [notifierGroup])).toBe(0);
  expect(await count('SELECT count(*)::int AS n FROM kit_test_effects WHERE group_id = $1', [kitGroup])).toBe(
    events.length,
  );
  expect(
    await count(
      'SELECT count(*)::int AS n FROM ticket_events.inbox_events WHERE group_id = ANY($1) AND duplicates = 1',
      [[notifierGroup, kitGroup]],
    ),
  ).toBe(12);

  // And a new event is handled once by each: the consumers really run on the moved tables.
  const fresh = ticketCreated(tenantId);
  await fx.producer.send({ topic, acks: -1, messages: [toMessage(fresh, 0)] });
  await eventually(
    () => count('SELECT count(*)::int AS n FROM notifications WHERE group_id = $1', [notifierGroup]),
    (n) => n === 1,
    30_000,
    'one notification',
  );
  await eventually(
    () => count('SELECT count(*)::int AS n FROM kit_test_effects WHERE group_id = $1', [kitGroup]),
    (n) => n === events.length + 1,
    30_000,
    'one new effect',
  );
});
