// Outbox dead letters requeued with `dead-letters requeue --kind outbox` against the real relay and a
// real broker: a row the broker rejected (too large for the topic) is requeued after the topic's limit
// is raised, together with the later rows of its ticket that were dead-lettered behind it, and the
// topic then holds the ticket's events in order, each once. Also: held-back and invalid rows are
// refused, --dry-run changes nothing, a second requeue does nothing, discard keeps the row in the audit.
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel, ConfigResourceTypes, type Admin } from 'kafkajs';
import { Pool } from 'pg';
import { Registry } from 'prom-client';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import { createLogger } from '@tickets/logger';
import { OutboxRelay } from '@tickets/outbox';
import { deadLettersCommand } from '../support/dead-letters-cli';
import { TEST_KAFKA_BROKERS } from '../support/env';
import {
  createRelayTestDatabase,
  deleteTopic,
  insertOutboxRows,
  readTopic,
  ticketEventRow,
  waitFor,
  type RelayTestDatabase,
} from '../support/outbox-factory';

jest.setTimeout(90_000);

const topic = `dl-requeue-${randomUUID().slice(0, 8)}`;
const tenantId = randomUUID();
const slug = `dl-requeue-${randomUUID().slice(0, 8)}`;
let database: RelayTestDatabase;
let db: Pool;
let prisma: PrismaClient;
let admin: Admin;
let relay: OutboxRelay;

const cli = (...argv: string[]) => deadLettersCommand(prisma, ...argv);
const count = async (sql: string, params: unknown[] = []) =>
  (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${sql}) x`, params)).rows[0].n;
const deadIds = async () =>
  (await db.query<{ event_id: string }>('SELECT event_id FROM outbox_dead_letters ORDER BY seq')).rows.map(
    (r) => r.event_id,
  );
const unpublished = () => count('SELECT 1 FROM outbox_pending');

function newRelay(): OutboxRelay {
  return new OutboxRelay({
    databaseUrl: database.url,
    kafka: { brokers: TEST_KAFKA_BROKERS, clientId: 'dl-requeue-relay', topic, partitions: 1 },
    logger: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent', 'dl-requeue'),
    registry: new Registry(),
    maxAttempts: 2,
    pollIntervalMs: 100,
    retryBaseMs: 100,
    retryMaxMs: 300,
  });
}

beforeAll(async () => {
  database = await createRelayTestDatabase('dead_letters');
  db = new Pool({ connectionString: database.url, max: 2 });
  prisma = createPrismaClient(database.url, 2, 'dead-letters-it');
  await db.query('INSERT INTO tenants (id, slug) VALUES ($1, $2)', [tenantId, slug]);
  admin = new Kafka({ brokers: TEST_KAFKA_BROKERS, clientId: 'dl-requeue-admin', logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  // One partition: the topic's offsets are the publishing order. 64 KiB records at most, so a
  // 100 KB envelope is rejected by the broker until the limit is raised.
  await admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'max.message.bytes', value: String(64 * 1024) }] }],
  });
  relay = newRelay();
  await relay.start();
});

afterAll(async () => {
  await relay?.stop();
  await admin?.disconnect();
  await Promise.allSettled([db?.end(), prisma?.$disconnect()]);
  await database?.drop();
  await deleteTopic(TEST_KAFKA_BROKERS, topic);
});

it('requeues a rejected row with the rows dead-lettered behind it: published after the earlier events of its ticket, in order, once', async () => {
  const created = ticketEventRow({ tenantId, kind: 'created' });
  const ticket = created.aggregateId;
  const big = ticketEventRow({
    tenantId,
    ticketId: ticket,
    kind: 'cancelled',
    metadata: { blob: 'x'.repeat(100_000) },
  });
  const behind = ticketEventRow({ tenantId, ticketId: ticket, kind: 'cancelled' });
  const other = ticketEventRow({ tenantId, kind: 'created' });
  await insertOutboxRows(db, [created, big, behind, other]);
  await waitFor(
    'the big row and the one behind it dead-lettered',
    async () => (await deadIds()).length === 2 && (await unpublished()) === 0,
  );
  expect(await deadIds()).toEqual([big.eventId, behind.eventId]);
  // A row of the ticket written later is dead-lettered behind it too.
  const late = ticketEventRow({ tenantId, ticketId: ticket, kind: 'cancelled' });
  await insertOutboxRows(db, [late]);
  await waitFor('the late row dead-lettered', async () => (await deadIds()).length === 3);

  const listed = await cli('list', '--kind', 'outbox', '--ticket', ticket, '--json');
  expect(listed.code).toBe(0);
  expect(
    listed
      .json()
      .items.map((i: { id: string }) => i.id)
      .sort(),
  ).toEqual([big.eventId, behind.eventId, late.eventId].sort());
  expect(
    (await cli('list', '--kind', 'outbox', '--tenant', slug, '--reason', 'KAFKA_REJECTED', '--json'))
      .json()
      .items.map((i: { id: string }) => i.id),
  ).toEqual([big.eventId]);
  expect((await cli('list', '--kind', 'outbox', '--until', '1h', '--json')).json().items).toEqual([]);

  // A row behind an earlier dead letter is refused: the relay would dead-letter it again at once.
  const heldBack = await cli('requeue', '--kind', 'outbox', '--id', behind.eventId);
  expect(heldBack.code).toBe(1);
  expect(heldBack.out).toContain(`refused: outbox event ${behind.eventId} is held back by ${big.eventId}`);

  // The fix: the topic accepts larger records now.
  await admin.alterConfigs({
    validateOnly: false,
    resources: [
      {
        type: ConfigResourceTypes.TOPIC,
        name: topic,
        configEntries: [{ name: 'max.message.bytes', value: String(1024 * 1024) }],
      },
    ],
  });

  const dry = await cli('requeue', '--kind', 'outbox', '--id', big.eventId, '--dry-run', '--json');
  expect(dry.code).toBe(0);
  expect(dry.json().results).toEqual([
    expect.objectContaining({ outcome: 'would-requeue', eventIds: [big.eventId, behind.eventId, late.eventId] }),
  ]);
  expect(await deadIds()).toEqual([big.eventId, behind.eventId, late.eventId]);
  expect(await count('SELECT 1 FROM dead_letter_actions')).toBe(0);
  expect(
    await count('SELECT 1 FROM outbox_events WHERE event_id = ANY($1)', [[big.eventId, behind.eventId, late.eventId]]),
  ).toBe(0);

  const done = await cli(
    'requeue',
    '--kind',
    'outbox',
    '--id',
    big.eventId,
    '--by',
    'ops-test',
    '--reason-note',
    'topic limit raised to 1 MiB',
  );
  expect(done.code).toBe(0);
  expect(done.out).toMatch(
    new RegExp(
      `^requeued: moved 3 event\\(s\\) of ticket ${ticket} back to the outbox with their original seq, in this order: ${big.eventId}, ${behind.eventId}, ${late.eventId}`,
    ),
  );
  await waitFor('the requeued rows published', async () => (await unpublished()) === 0);
  expect(await deadIds()).toEqual([]);

  const onTopic = (await readTopic(TEST_KAFKA_BROKERS, topic)).sort((a, b) => a.offset - b.offset);
  expect(onTopic.filter((m) => m.key === ticket).map((m) => m.headers['event-id'])).toEqual([
    created.eventId,
    big.eventId,
    behind.eventId,
    late.eventId,
  ]);

  // Every moved row is audited with who, why and the group it moved with.
  const { rows: audit } = await db.query(
    "SELECT target_id, action, actor, note, detail, snapshot FROM dead_letter_actions ORDER BY (detail->>'seq')::bigint",
  );
  expect(audit).toEqual(
    [big, behind, late].map((r) =>
      expect.objectContaining({
        target_id: r.eventId,
        action: 'requeue',
        actor: 'ops-test',
        note: 'topic limit raised to 1 MiB',
        detail: expect.objectContaining({ requeuedTogether: [big.eventId, behind.eventId, late.eventId] }),
        snapshot: expect.objectContaining({
          event_id: r.eventId,
          reason: r === big ? expect.stringMatching(/^kafka_rejected: /) : `blocked_by_dead_letter:${big.eventId}`,
        }),
      }),
    ),
  );

  // Requeued twice: the second does nothing and says where the event is; the topic still has it once.
  const again = await cli('requeue', '--kind', 'outbox', '--id', big.eventId, '--json');
  expect(again.code).toBe(0);
  expect(again.json().results[0]).toMatchObject({
    outcome: 'not-dead',
    message: expect.stringMatching(/is not dead-lettered: published at .* \(last requeue by ops-test at /),
  });
  const barrier = ticketEventRow({ tenantId, kind: 'created' });
  await insertOutboxRows(db, [barrier]);
  await waitFor('a later event published', async () => (await unpublished()) === 0);
  const finalTopic = await readTopic(TEST_KAFKA_BROKERS, topic);
  expect(finalTopic.filter((m) => m.headers['event-id'] === big.eventId)).toHaveLength(1);
  expect(finalTopic.map((m) => m.headers['event-id']).sort()).toEqual(
    [created, big, behind, other, late, barrier].map((r) => r.eventId).sort(),
  );
  expect(await count('SELECT 1 FROM dead_letter_actions')).toBe(3);
});

it('refuses an envelope that would fail again; discard keeps it in the audit and lets the ticket flow again', async () => {
  const poison = ticketEventRow({ tenantId, kind: 'created' });
  (poison.payload.data as Record<string, unknown>).priority = 'extreme';
  const next = ticketEventRow({ tenantId, ticketId: poison.aggregateId, kind: 'cancelled' });
  await insertOutboxRows(db, [poison, next]);
  await waitFor('the poison row and its follower dead-lettered', async () => (await deadIds()).length === 2);

  const refused = await cli('requeue', '--kind', 'outbox', '--id', poison.eventId);
  expect(refused.code).toBe(1);
  expect(refused.out).toMatch(/would be dead-lettered again at once \(.*invalid_envelope: data\.priority/);

  expect((await cli('discard', '--kind', 'outbox', '--id', poison.eventId, '--dry-run')).out).toMatch(
    /^would-discard: /,
  );
  expect(await deadIds()).toEqual([poison.eventId, next.eventId]);

  const discarded = await cli(
    'discard',
    '--kind',
    'outbox',
    '--id',
    poison.eventId,
    '--by',
    'ops-test',
    '--reason-note',
    'bad priority, re-sent by the owner',
  );
  expect(discarded.code).toBe(0);
  expect(discarded.out).toContain(
    `1 later event(s) of ticket ${poison.aggregateId} stay dead-lettered behind it: requeue them with --id ${next.eventId}`,
  );
  expect(await deadIds()).toEqual([next.eventId]);
  const { rows } = await db.query(
    "SELECT actor, note, snapshot FROM dead_letter_actions WHERE action = 'discard' AND target_id = $1",
    [poison.eventId],
  );
  expect(rows).toEqual([
    {
      actor: 'ops-test',
      note: 'bad priority, re-sent by the owner',
      snapshot: expect.objectContaining({ event_id: poison.eventId, payload: poison.payload }),
    },
  ]);

  const visible = (await cli('list', '--kind', 'outbox', '--ticket', poison.aggregateId, '--json')).json().items;
  expect(visible.map((i: { id: string }) => i.id)).toEqual([next.eventId]);
  const all = (await cli('list', '--kind', 'outbox', '--ticket', poison.aggregateId, '--all', '--json')).json().items;
  expect(all).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ id: poison.eventId, state: 'discarded' }),
      expect.objectContaining({ id: next.eventId, state: 'dead' }),
    ]),
  );
  const shown = (await cli('show', '--id', poison.eventId, '--json')).json();
  expect(shown).toMatchObject({ item: { state: 'discarded' }, history: [{ action: 'discard', actor: 'ops-test' }] });

  // With the poison row gone, its follower is no longer held back.
  expect((await cli('requeue', '--kind', 'outbox', '--id', next.eventId)).code).toBe(0);
  await waitFor('the follower published', async () => (await unpublished()) === 0 && (await deadIds()).length === 0);
  expect(
    (await readTopic(TEST_KAFKA_BROKERS, topic))
      .filter((m) => m.key === poison.aggregateId)
      .map((m) => m.headers['event-id']),
  ).toEqual([next.eventId]);
});

it('requeued rows keep their original seq, so a later event of the ticket still waiting in the outbox does not overtake them', async () => {
  // The relay is stopped while the ticket's later event waits unclaimed behind its dead letters (the
  // state a requeue can meet at any time). Dead letters moved with new seqs would be published after it.
  await relay.stop();
  const created = ticketEventRow({ tenantId, kind: 'created' });
  const ticket = created.aggregateId;
  const head = ticketEventRow({ tenantId, ticketId: ticket, kind: 'cancelled' });
  const behind = ticketEventRow({ tenantId, ticketId: ticket, kind: 'cancelled' });
  await insertOutboxRows(db, [created, head, behind]);
  // What the relay's mark writes (the queue entry gone, the send recorded) ...
  await db.query(
    `WITH d AS (DELETE FROM outbox_pending WHERE seq IN (SELECT seq FROM outbox_events WHERE event_id = $1) RETURNING seq)
     INSERT INTO outbox_publications (seqs, first_seq, last_seq, rows) SELECT array_agg(seq), min(seq), max(seq), count(*) FROM d`,
    [created.eventId],
  );
  // ... and its dead-letter move (one statement: out of the outbox and its queue, into the dead letters).
  await db.query(
    `WITH moved AS (DELETE FROM outbox_events WHERE event_id = ANY($1::uuid[]) RETURNING *),
          unqueued AS (DELETE FROM outbox_pending p USING moved m WHERE p.seq = m.seq)
     INSERT INTO outbox_dead_letters (seq, event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers, reason, attempts, outbox_created_at)
     SELECT seq, event_id, tenant_id, aggregate_type, aggregate_id, event_type, payload, headers,
            CASE WHEN event_id = $2::uuid THEN 'kafka_rejected: MESSAGE_TOO_LARGE' ELSE 'blocked_by_dead_letter:' || $2 END, 2, created_at
       FROM moved`,
    [[head.eventId, behind.eventId], head.eventId],
  );
  const later = ticketEventRow({ tenantId, ticketId: ticket, kind: 'cancelled' });
  await insertOutboxRows(db, [later]);

  const done = await cli('requeue', '--kind', 'outbox', '--id', head.eventId, '--json');
  expect(done.json().results).toEqual([
    expect.objectContaining({ outcome: 'requeued', eventIds: [head.eventId, behind.eventId] }),
  ]);
  const { rows } = await db.query<{ event_id: string }>(
    'SELECT o.event_id FROM outbox_pending p JOIN outbox_events o ON o.seq = p.seq WHERE o.aggregate_id = $1 ORDER BY p.seq',
    [ticket],
  );
  expect(rows.map((r) => r.event_id)).toEqual([head.eventId, behind.eventId, later.eventId]);

  relay = newRelay();
  await relay.start();
  await waitFor('the ticket published', async () => (await unpublished()) === 0);
  const onTopic = (await readTopic(TEST_KAFKA_BROKERS, topic)).sort((a, b) => a.offset - b.offset);
  expect(onTopic.filter((m) => m.key === ticket).map((m) => m.headers['event-id'])).toEqual([
    head.eventId,
    behind.eventId,
    later.eventId,
  ]);
});
