// Consumer dead letters with `dead-letters requeue|discard --kind consumer`, with the real consumer on a
// real topic: a message the consumer dead-lettered for real is refused (it still does not parse) and
// discarded; a stored message that parses now (dead-lettered by an older consumer) is produced again,
// byte for byte with its key, and the consumer processes it once; a second requeue produces nothing.
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import { deadLettersCommand } from '../support/dead-letters-cli';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from '../support/env';
import { eventually, kafkaFixture, ticketCreated, uniqueName } from '../support/events-factory';
import { startTestNotifier, type TestNotifier } from '../support/notifier';
import { readTopic } from '../support/outbox-factory';

jest.setTimeout(60_000);

const topic = uniqueName('dl-consumer-it');
const groupId = uniqueName('dl-consumer-it');
const tenantId = randomUUID();
let fx: Awaited<ReturnType<typeof kafkaFixture>>;
let prisma: PrismaClient;
let db: Pool;
let consumer: TestNotifier;

const cli = (...argv: string[]) => deadLettersCommand(prisma, ...argv);
const high = async () => Number((await fx.admin.fetchTopicOffsets(topic))[0].high);
const deadLetter = async (id: string) =>
  (
    await db.query<{ resolution: string | null }>(
      'SELECT resolution FROM ticket_events.consumer_dead_letters WHERE id = $1',
      [id],
    )
  ).rows[0];

/** Waits until this test's consumer has applied the event (its inbox row). */
const processed = (eventId: string) =>
  eventually(
    async () =>
      (
        await db.query('SELECT 1 FROM ticket_events.inbox_events WHERE group_id = $1 AND event_id = $2', [
          groupId,
          eventId,
        ])
      ).rowCount,
    (n) => n === 1,
    20_000,
    'the consumer processes the requeued event',
  );

beforeAll(async () => {
  fx = await kafkaFixture(topic, 1);
  prisma = createPrismaClient(TEST_DATABASE_URL, 4, 'dl-consumer-it');
  db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  consumer = await startTestNotifier({ topic, groupId });
});

afterAll(async () => {
  await consumer?.stop();
  await db.query('DELETE FROM ticket_events.dead_letter_actions WHERE group_id = $1', [groupId]);
  await db.query('DELETE FROM ticket_events.consumer_dead_letters WHERE group_id = $1', [groupId]);
  await db.query('DELETE FROM notifications WHERE group_id = $1', [groupId]);
  await db.query('DELETE FROM ticket_events.inbox_events WHERE group_id = $1', [groupId]);
  await fx?.admin.deleteGroups([groupId]).catch(() => undefined);
  await Promise.allSettled([fx?.close(), prisma?.$disconnect(), db?.end()]);
});

it('a message that still does not parse is refused, and discarded with the audit', async () => {
  const key = randomUUID();
  await fx.producer.send({ topic, acks: -1, messages: [{ key, value: '{"not":"an event"' }] });
  const { id } = await eventually(
    async () =>
      (
        await db.query<{ id: string }>(
          'SELECT id FROM ticket_events.consumer_dead_letters WHERE group_id = $1 AND key = $2',
          [groupId, key],
        )
      ).rows[0],
    (r) => r !== undefined,
    20_000,
    'the consumer dead-letters the message',
  );
  const refused = await cli('requeue', '--kind', 'consumer', '--id', id);
  expect(refused.code).toBe(1);
  expect(refused.out).toBe(
    `refused: consumer dead letter ${id} still does not parse (not JSON): the consumer would dead-letter it again; discard it`,
  );
  expect(await high()).toBe(1);

  expect((await cli('list', '--kind', 'consumer', '--ticket', key, '--json')).json().items).toEqual([
    expect.objectContaining({ id, state: 'dead', reason: expect.stringMatching(/^not JSON/) }),
  ]);
  expect(
    (
      await cli(
        'discard',
        '--kind',
        'consumer',
        '--id',
        id,
        '--by',
        'ops-test',
        '--reason-note',
        'garbage from a test producer',
      )
    ).out,
  ).toBe(`discarded: consumer dead letter ${id} discarded (kept, marked)`);
  expect(await deadLetter(id)).toEqual({ resolution: 'discarded' });
  expect((await cli('list', '--kind', 'consumer', '--ticket', key, '--json')).json().items).toEqual([]);
  expect((await cli('list', '--kind', 'consumer', '--ticket', key, '--all', '--json')).json().items).toEqual([
    expect.objectContaining({ id, state: 'discarded' }),
  ]);
  expect((await cli('discard', '--kind', 'consumer', '--id', id)).out).toMatch(
    /is discarded \(last discard by ops-test at .*\); nothing done$/,
  );
});

it('a stored message that parses now is produced again with its key and processed once; a second requeue produces nothing', async () => {
  const event = ticketCreated(tenantId);
  const value = JSON.stringify(event);
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO ticket_events.consumer_dead_letters (group_id, topic, partition, "offset", key, value, headers, reason)
     VALUES ($1, $2, 0, 9999, $3, $4, $5, 'not a TicketEvent: type: Invalid input (an older consumer)') RETURNING id`,
    [groupId, topic, event.ticketId, value, JSON.stringify({ 'event-id': event.id, 'event-type': event.type })],
  );
  const id = rows[0].id;
  const before = await high();

  const dry = await cli('requeue', '--kind', 'consumer', '--id', id, '--dry-run');
  expect(dry.out).toBe(
    `would-requeue: would produce the stored message (event ${event.id}) to ${topic} with key ${event.ticketId}`,
  );
  expect(await high()).toBe(before);
  expect(await deadLetter(id)).toEqual({ resolution: null });

  // show of the dead one: its own requeue is the next step, with what its dry run found; no copy yet.
  const requeueCmd = `npm run cli -- dead-letters requeue --kind consumer --id ${id} --follow`;
  const dead = await cli('show', '--kind', 'consumer', '--id', id);
  expect(dead.code).toBe(0);
  expect(dead.out).toContain(`next: ${requeueCmd} (would produce 1 message(s), in their order)`);
  expect(dead.out).not.toContain('copy:');
  const deadJson = (await cli('show', '--kind', 'consumer', '--id', id, '--json')).json();
  expect(deadJson.consumer).toEqual({
    groupId,
    next: { id, dryRun: [expect.objectContaining({ id, outcome: 'would-requeue' })] },
  });
  expect(await high()).toBe(before);

  const done = await cli(
    'requeue',
    '--kind',
    'consumer',
    '--id',
    id,
    '--by',
    'ops-test',
    '--reason-note',
    'consumer upgraded',
  );
  expect(done.code).toBe(0);
  expect(done.out).toMatch(
    new RegExp(
      `^requeued: produced the stored message \\(event ${event.id}\\) to ${topic}\\[0\\]@${before} with key ${event.ticketId}`,
    ),
  );
  expect(await high()).toBe(before + 1);
  const produced = (await readTopic(TEST_KAFKA_BROKERS, topic)).find((m) => m.offset === before)!;
  expect(produced).toMatchObject({
    key: event.ticketId,
    value,
    headers: { 'event-id': event.id, 'event-type': event.type },
  });
  await processed(event.id);
  expect(await deadLetter(id)).toEqual({ resolution: 'requeued' });
  // show of the requeued one: its copy handled by the group, and nothing left to run.
  const shown = await cli('show', '--kind', 'consumer', '--id', id);
  expect(shown.out).toContain(`copy: handled by group ${groupId}`);
  expect(shown.out).not.toContain('next:');
  expect((await cli('show', '--kind', 'consumer', '--id', id, '--json')).json().consumer).toEqual({
    groupId,
    copy: expect.objectContaining({ id, state: 'handled', eventId: event.id }),
  });
  const { rows: audit } = await db.query(
    'SELECT actor, note, event_id, detail FROM ticket_events.dead_letter_actions WHERE dead_letter_id = $1',
    [id],
  );
  expect(audit).toEqual([
    {
      actor: 'ops-test',
      note: 'consumer upgraded',
      event_id: event.id,
      detail: { topic, partition: 0, offset: String(before), from: { groupId, partition: 0, offset: '9999' } },
    },
  ]);

  const again = await cli('requeue', '--kind', 'consumer', '--id', id);
  expect(again.out).toMatch(/is requeued \(last requeue by ops-test at .*\); nothing done$/);
  expect(await high()).toBe(before + 1);
  const { rows: inbox } = await db.query(
    'SELECT duplicates FROM ticket_events.inbox_events WHERE group_id = $1 AND event_id = $2',
    [groupId, event.id],
  );
  expect(inbox).toEqual([{ duplicates: 0 }]);
});

it("--group takes one group's dead letters: a requeue of one group's copy leaves the other group's dead", async () => {
  const otherGroup = uniqueName('dl-consumer-it-other');
  const event = ticketCreated(tenantId);
  const value = JSON.stringify(event);
  const store = async (group: string, offset: number) =>
    (
      await db.query<{ id: string }>(
        `INSERT INTO ticket_events.consumer_dead_letters (group_id, topic, partition, "offset", key, value, headers, reason)
         VALUES ($1, $2, 0, $3, $4, $5, '{}', 'handler failed: mail_queue missing') RETURNING id`,
        [group, topic, offset, event.ticketId, value],
      )
    ).rows[0].id;
  const mine = await store(groupId, 9001);
  const theirs = await store(otherGroup, 9001);
  try {
    const ids = async (...argv: string[]) =>
      (await cli('list', '--ticket', event.ticketId, ...argv, '--json')).json().items.map((i: { id: string }) => i.id);
    expect((await ids()).sort()).toEqual([mine, theirs].sort());
    expect(await ids('--group', otherGroup)).toEqual([theirs]);
    expect(await ids('--kind', 'consumer', '--group', groupId)).toEqual([mine]);
    expect(await ids('--group', uniqueName('no-such-group'))).toEqual([]);

    const before = await high();
    const done = await cli(
      'requeue',
      '--kind',
      'consumer',
      '--group',
      otherGroup,
      '--ticket',
      event.ticketId,
      '--json',
    );
    expect(done.code).toBe(0);
    expect(done.json().results).toEqual([expect.objectContaining({ id: theirs, outcome: 'requeued' })]);
    expect(await high()).toBe(before + 1);
    expect(await deadLetter(theirs)).toEqual({ resolution: 'requeued' });
    expect(await deadLetter(mine)).toEqual({ resolution: null });
    // This test's consumer reads the copy too (every group reads the topic) and applies the event once.
    await processed(event.id);

    const discarded = await cli('discard', '--kind', 'consumer', '--group', groupId, '--ticket', event.ticketId);
    expect(discarded.code).toBe(0);
    expect(await deadLetter(mine)).toEqual({ resolution: 'discarded' });
  } finally {
    await db.query('DELETE FROM ticket_events.dead_letter_actions WHERE group_id = $1', [otherGroup]);
    await db.query('DELETE FROM ticket_events.consumer_dead_letters WHERE group_id = $1', [otherGroup]);
  }
});

it('requeue --follow returns once the group has handled the copy; with --json the progress is on stderr and the copy state in the result', async () => {
  const event = ticketCreated(tenantId);
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO ticket_events.consumer_dead_letters (group_id, topic, partition, "offset", key, value, headers, reason)
     VALUES ($1, $2, 0, 9998, $3, $4, $5, 'not a TicketEvent: type: Invalid input (an older consumer)') RETURNING id`,
    [
      groupId,
      topic,
      event.ticketId,
      JSON.stringify(event),
      JSON.stringify({ 'event-id': event.id, 'event-type': event.type }),
    ],
  );
  const id = rows[0].id;
  const wrong = await cli('requeue', '--kind', 'outbox', '--id', randomUUID(), '--follow');
  expect({ code: wrong.code, err: wrong.err }).toEqual({
    code: 2,
    err: expect.stringContaining('--follow goes only with requeue --kind consumer'),
  });

  const done = await cli('requeue', '--kind', 'consumer', '--id', id, '--follow', '--timeout', '1m', '--json');
  expect(done.code).toBe(0);
  expect(done.err).toMatch(
    /^follow: 1 of 1 copies handled by the group, 0 dead-lettered again, 0 not read yet \(\d+ s\)$/m,
  );
  expect(done.json()).toEqual({
    dryRun: false,
    results: [expect.objectContaining({ id, outcome: 'requeued' })],
    follow: {
      outcome: 'handled',
      copies: [{ id, groupId, eventId: event.id, ticketId: event.ticketId, state: 'handled' }],
      requeued: [],
    },
  });
  // Handled when the command returned: the group's inbox has the event.
  const { rowCount } = await db.query(
    'SELECT 1 FROM ticket_events.inbox_events WHERE group_id = $1 AND event_id = $2',
    [groupId, event.id],
  );
  expect(rowCount).toBe(1);
});
