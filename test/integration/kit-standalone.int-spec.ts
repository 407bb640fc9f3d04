// The consumer kit as a downstream team uses it: its own database holding nothing but the kit's
// schema, created by the compiled `ticket-events` bin (run as a child process), a consumer applying
// each event once through duplicate publishes and a replay, and the bin's replay and dead-letters
// commands on that database. Also the kit's own error for a taken metrics port.

import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Pool } from 'pg';
import { MetricsPortError } from '@tickets/event-consumer';
import { TEST_KAFKA_BROKERS } from '../support/env';
import { eventually, kafkaFixture, ticketCreated, toMessage, uniqueName } from '../support/events-factory';
import { runKitBin, scratchDatabase, type ScratchDatabase } from '../support/kit-databases';
import { EFFECTS_DDL, startExample } from '../support/kit-example';

jest.setTimeout(180_000);

const topic = uniqueName('kit-standalone');
const groupId = uniqueName('kit-standalone');
let fx: Awaited<ReturnType<typeof kafkaFixture>>;
let database: ScratchDatabase;
let db: Pool;
let example: Awaited<ReturnType<typeof startExample>> | undefined;

const bin = (...args: string[]) =>
  runKitBin(args, {
    DATABASE_URL: database.url,
    KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
    TICKET_EVENTS_TOPIC: topic,
  });
const effects = async () =>
  (
    await db.query<{ n: number; d: number }>(
      'SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS d FROM kit_test_effects WHERE group_id = $1',
      [groupId],
    )
  ).rows[0];
const committed = async () =>
  (await fx.admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions.reduce(
    (a, p) => a + Math.max(0, Number(p.offset)),
    0,
  );
const options = () => ({
  brokers: TEST_KAFKA_BROKERS,
  topic,
  groupId,
  databaseUrl: database.url,
  metrics: false as const,
});

beforeAll(async () => {
  fx = await kafkaFixture(topic, 2);
  database = await scratchDatabase('standalone');
  db = new Pool({ connectionString: database.url, max: 2 });
});

afterAll(async () => {
  await example?.app.close();
  await fx?.admin.deleteGroups([groupId]).catch(() => undefined);
  await Promise.allSettled([fx?.close(), db?.end()]);
  await database?.drop();
});

it('the bin: --help on itself and on each command; a missing database says how to give one', async () => {
  const top = await runKitBin(['--help']);
  expect(top.code).toBe(0);
  for (const c of ['migrate', 'replay', 'dead-letters']) expect(top.out).toContain(`  ${c}`);
  for (const [c, usage] of [
    ['migrate', 'ticket-events migrate [--database-url'],
    ['replay', 'ticket-events replay --group <group> --from earliest'],
    ['dead-letters', 'ticket-events dead-letters list --group <group>'],
  ]) {
    const h = await runKitBin([c, '--help']);
    expect(h.code).toBe(0);
    expect(h.out).toContain(usage);
    expect(h.out).toContain('--database-url <url>');
    // migrate acts on the database alone: its help lists no broker or topic.
    expect([h.out.includes('--brokers <'), h.out.includes('--topic <')]).toEqual(
      c === 'migrate' ? [false, false] : [true, true],
    );
  }
  const { version } = JSON.parse(
    readFileSync(join(__dirname, '..', '..', 'libs/event-consumer/package.json'), 'utf8'),
  ) as {
    version: string;
  };
  for (const flag of ['--version', '-v']) {
    expect(await runKitBin([flag])).toEqual({ code: 0, out: `@tickets/event-consumer ${version}\n`, err: '' });
  }
  const missing = await runKitBin(['migrate']);
  expect(missing.code).toBe(2);
  expect(missing.err).toContain('no database: pass --database-url postgresql://user@host:5432/db or set DATABASE_URL');
  const unknown = await runKitBin(['replay', '--group', 'g', '--from', 'yesterday']);
  expect(unknown.code).toBe(2);
  expect(unknown.err).toContain('--from must be "earliest" or an ISO-8601 time');
  const id = randomUUID();
  for (const [args, says] of [
    [['discard', '--id', id, '--follow'], '--follow goes only with requeue'],
    [
      ['requeue', '--id', id, '--follow', '--dry-run'],
      '--follow follows copies a requeue produced: not with --dry-run',
    ],
    [['requeue', '--id', id, '--timeout', '5m'], '--timeout goes only with requeue --follow'],
    [['requeue', '--id', id, '--follow', '--timeout', 'soon'], '--timeout "soon" is not a duration'],
  ] as [string[], string][]) {
    const wrong = await runKitBin(['dead-letters', ...args, '--group', 'g'], { DATABASE_URL: database.url });
    expect({ code: wrong.code, err: wrong.err }).toEqual({ code: 2, err: expect.stringContaining(says) });
  }
});

it('migrates a database of its own that then holds only the kit schema, and a consumer applies each event once', async () => {
  const first = await bin('migrate');
  expect(first).toMatchObject({
    code: 0,
    out: 'migrated schema ticket_events to version 5: applied 1 kit_tables, 2 replay_pauses, 3 dead_letter_holds, 4 requeued_holds, 5 replay_dead_letters\n',
  });
  // The --database-url flag wins over DATABASE_URL.
  const again = await runKitBin(['migrate', '--database-url', database.url], {
    DATABASE_URL: 'postgresql://nobody@127.0.0.1:1/nothing',
  });
  expect(again).toMatchObject({ code: 0, out: 'schema ticket_events is up to date (version 5); nothing to do\n' });
  const schemas = await db.query<{ s: string; t: string }>(
    "SELECT table_schema AS s, table_name AS t FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2",
  );
  expect(schemas.rows.map((r) => `${r.s}.${r.t}`)).toEqual([
    'ticket_events.consumer_dead_letters',
    'ticket_events.dead_letter_actions',
    'ticket_events.inbox_events',
    'ticket_events.kit_migrations',
    'ticket_events.replay_partitions',
    'ticket_events.replay_pauses',
    'ticket_events.replays',
  ]);

  await db.query(EFFECTS_DDL);
  const events = Array.from({ length: 8 }, () => ticketCreated(randomTenant));
  // Each event published twice (a relay retry), and one message that is no event at all.
  const messages = [...events, ...events].map((e, i) => toMessage(e, i % 2));
  await fx.producer.send({ topic, acks: -1, messages: [...messages, { partition: 0, key: 'k', value: '{"broken":' }] });
  example = await startExample(options());
  await eventually(committed, (n) => n === messages.length + 1, 30_000, 'every message read');
  expect(await effects()).toEqual({ n: 8, d: 8 });
});

it('dead-letters list, requeue (refused: still invalid) and discard on the consumer database, audited', async () => {
  const list = await bin('dead-letters', 'list', '--group', groupId);
  expect(list.code).toBe(0);
  const id = list.out.split(/\s+/)[0];
  expect(list.out).toContain('reason: not JSON');
  const refused = await bin('dead-letters', 'requeue', '--group', groupId, '--id', id);
  expect(refused.code).toBe(1);
  expect(refused.out).toContain(`refused: consumer dead letter ${id} still does not parse (not JSON)`);
  const dry = await bin('dead-letters', 'discard', '--group', groupId, '--id', id, '--dry-run');
  expect(dry).toMatchObject({ code: 0, out: `would-discard: would mark consumer dead letter ${id} discarded\n` });
  const done = await bin(
    'dead-letters',
    'discard',
    '--group',
    groupId,
    '--id',
    id,
    '--by',
    'ops-test',
    '--note',
    'garbage',
  );
  expect(done).toMatchObject({ code: 0, out: `discarded: consumer dead letter ${id} discarded (kept, marked)\n` });
  expect(
    (
      await db.query(
        'SELECT action, actor, note, group_id FROM ticket_events.dead_letter_actions WHERE dead_letter_id = $1',
        [id],
      )
    ).rows,
  ).toEqual([{ action: 'discard', actor: 'ops-test', note: 'garbage', group_id: groupId }]);
  expect((await bin('dead-letters', 'list', '--group', groupId)).out).toBe(
    `dead-letters: none match for group ${groupId}\n`,
  );
  const show = await bin('dead-letters', 'show', '--id', id, '--json');
  expect(JSON.parse(show.out)).toMatchObject({
    item: { id, state: 'discarded' },
    history: [{ action: 'discard', actor: 'ops-test' }],
  });
});

it('replay from earliest with --no-pause: refused while the group has a live member; then every event is re-read and skipped, no second effect', async () => {
  const busy = await bin('replay', '--group', groupId, '--from', 'earliest', '--no-pause');
  expect(busy.code).toBe(3);
  expect(busy.out).toContain('live member(s)');
  await example!.app.close();
  example = undefined;
  const moved = await runKitBin(
    [
      'replay',
      '--group',
      groupId,
      '--from',
      'earliest',
      '--no-pause',
      '--wait',
      '--timeout',
      '60s',
      '--brokers',
      TEST_KAFKA_BROKERS.join(','),
      '--topic',
      topic,
    ],
    { DATABASE_URL: database.url },
  );
  expect(moved.code).toBe(0);
  expect(moved.out).toContain('17 message(s) to re-read');
  example = await startExample(options());
  const followed = await bin('replay', '--group', groupId, '--follow', '--timeout', '60s');
  expect(followed.code).toBe(0);
  expect(followed.out).toMatch(/re-read\s+17 of 17/);
  expect(followed.out).toMatch(/processed as new\s+0\n/);
  expect(await effects()).toEqual({ n: 8, d: 8 });
});

it('a taken metrics port is an error naming the port and the setting (0 = any free port)', async () => {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const port = (taken.address() as AddressInfo).port;
  try {
    const err = await startExample({ ...options(), groupId: `${groupId}-port`, metrics: { port } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect({ name: (err as Error).name, message: (err as Error).message }).toEqual({
      name: MetricsPortError.name,
      message: `metrics port 127.0.0.1:${port} is already in use (another consumer on this host?): set metrics.port to a free port, 0 = any free port, or turn the endpoint off (metrics: false / -1)`,
    });
  } finally {
    taken.close();
  }
});

const randomTenant = '00000000-0000-4000-8000-000000000001';
