// Replay (`npm run cli -- replay`, the kit's replayTopic) against the real broker: the group's offsets
// really move back, the consumer really re-reads the topic, and the inbox turns every re-read event
// into a skip. The command is run as the CLI runs it: argument parsing, then the lib.
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { loadConfig } from '@tickets/config';
import { createPrismaClient, type PrismaClient } from '@tickets/db';
import { runCli } from '../../apps/cli/src/cli';
import { REPLAY_EXIT as EXIT, replayCli } from '../../apps/cli/src/replay.command';
import { TEST_DATABASE_URL, TEST_KAFKA_BROKERS } from '../support/env';
import {
  eventually,
  kafkaFixture,
  newWebhookSecret,
  ticketCreated,
  toMessage,
  uniqueName,
} from '../support/events-factory';
import { startTestNotifier, type TestNotifier } from '../support/notifier';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

jest.setTimeout(90_000);

const topic = uniqueName('replay-it');
const groupId = uniqueName('notifier-replay-it');
const secret = newWebhookSecret();
const tenantId = randomUUID();
const N = 12;

let fx: Awaited<ReturnType<typeof kafkaFixture>>;
let prisma: PrismaClient;
let db: Pool;
let receiver: WebhookReceiver;
let consumer: TestNotifier | undefined;

const startNotifier = async () =>
  (consumer = await startTestNotifier({
    topic,
    groupId,
    notifier: { webhookUrl: receiver.url, webhookSecret: secret },
  }));

async function stopNotifier() {
  await consumer?.stop();
  consumer = undefined;
}

function replay(args: string[]) {
  const out: string[] = [];
  const config = loadConfig({
    DATABASE_URL: TEST_DATABASE_URL,
    KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
    KAFKA_CLIENT_ID: 'replay-it',
    TICKET_EVENTS_TOPIC: topic,
  });
  const ctx = { prisma, config, out: (l: string) => out.push(l), err: (t: string) => out.push(t) };
  const done = runCli(['replay', '--group', groupId, ...args], [replayCli], {
    ...ctx,
    open: async () => ({ ctx, close: async () => undefined }),
  });
  return { out, done };
}

const notificationCount = async () =>
  (await db.query('SELECT count(*)::int AS n FROM notifications WHERE group_id = $1', [groupId])).rows[0].n as number;

beforeAll(async () => {
  fx = await kafkaFixture(topic, 3);
  prisma = createPrismaClient(TEST_DATABASE_URL, 6, 'replay-it');
  db = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
  receiver = await startWebhookReceiver({ secret });
  await fx.producer.send({
    topic,
    acks: -1,
    messages: Array.from({ length: N }, () => toMessage(ticketCreated(tenantId))),
  });
  await startNotifier();
  await receiver.waitForDeliveries(N, 30_000);
});

afterAll(async () => {
  await stopNotifier();
  await db.query('DELETE FROM ticket_events.replays WHERE group_id = $1', [groupId]);
  await db.query('DELETE FROM notifications WHERE group_id = $1', [groupId]);
  await db.query('DELETE FROM ticket_events.inbox_events WHERE group_id = $1', [groupId]);
  await fx?.admin.deleteGroups([groupId]).catch(() => undefined);
  await Promise.allSettled([fx?.close(), prisma?.$disconnect(), db?.end(), receiver?.close()]);
});

it('with --no-pause, refuses to move the offsets while the group has live members', async () => {
  const { out, done } = replay(['--from', 'earliest', '--no-pause']);
  expect(await done).toBe(EXIT.groupBusy);
  expect(out.join('\n')).toMatch(
    /has 1 live member\(s\).*\n.*without --no-pause to ask its members to pause, stop its consumers first, or pass --wait/,
  );
  const { rows } = await db.query('SELECT count(*)::int AS n FROM ticket_events.replays WHERE group_id = $1', [
    groupId,
  ]);
  expect(rows[0].n).toBe(0);
});

it('replays the whole topic from earliest: every event is skipped, no new webhook', async () => {
  // --no-pause --wait: the command waits for the running consumer to stop, then moves the offsets;
  // --follow: it stays until the restarted consumer has re-read everything.
  const { out, done } = replay(['--from', 'earliest', '--no-pause', '--wait', '--follow', '--timeout', '60s']);
  await eventually(
    () => out.join('\n'),
    (t) => t.includes('waiting for group'),
    10_000,
    'the wait message',
  );
  await stopNotifier();
  await eventually(
    () => out.join('\n'),
    (t) => t.includes('message(s) to re-read'),
    20_000,
    'the offsets to move',
  );
  await startNotifier();

  expect(await done).toBe(EXIT.ok);
  const text = out.join('\n');
  expect(text).toContain(`${N} message(s) to re-read`);
  expect(text).toMatch(new RegExp(`re-read\\s+${N} of ${N}`));
  expect(text).toMatch(new RegExp(`skipped \\(already processed\\)\\s+${N}\\n`));
  expect(text).toMatch(/processed as new\s+0\n/);
  expect(await consumer!.counts()).toMatchObject({ processed: 0, duplicates: N, deadLettered: 0, unknown: 0 });

  await new Promise((r) => setTimeout(r, 500));
  expect(receiver.requests).toHaveLength(N);
  expect(await notificationCount()).toBe(N);
  const { rows } = await db.query('SELECT status FROM ticket_events.replays WHERE group_id = $1', [groupId]);
  expect(rows).toEqual([{ status: 'completed' }]);
});

it('replays from a point in time: only the events after it are re-read; new events are processed as usual', async () => {
  const before = await notificationCount();
  await new Promise((r) => setTimeout(r, 20));
  const from = new Date().toISOString();
  const later = Array.from({ length: 4 }, () => ticketCreated(tenantId));
  await fx.producer.send({ topic, acks: -1, messages: later.map((e) => toMessage(e)) });
  await receiver.waitForDeliveries(N + 4, 20_000);

  await stopNotifier();
  const { out, done } = replay(['--from', from]);
  expect(await done).toBe(EXIT.ok);
  expect(out.join('\n')).toContain('4 message(s) to re-read');

  await startNotifier();
  const fresh = ticketCreated(tenantId);
  await fx.producer.send({ topic, acks: -1, messages: [toMessage(fresh)] });
  const follow = replay(['--follow', '--timeout', '60s']);
  expect(await follow.done).toBe(EXIT.ok);
  expect(follow.out.join('\n')).toMatch(/re-read\s+4 of 4\n\s+skipped \(already processed\)\s+4\n/);

  await receiver.waitForDeliveries(N + 5, 20_000);
  await new Promise((r) => setTimeout(r, 500));
  expect(receiver.requests).toHaveLength(N + 5);
  expect(await notificationCount()).toBe(before + 5);
});

it('replays the live group without stopping it: the notifier pauses, rejoins, re-reads everything and sends nothing again', async () => {
  const sent = receiver.requests.length;
  const before = await notificationCount();
  const { out, done } = replay(['--from', 'earliest', '--follow', '--timeout', '60s']);
  expect(await done).toBe(EXIT.ok);
  const text = out.join('\n');
  expect(text).toContain(`asking 1 member of ${groupId} to pause`);
  expect(text).toContain(`offsets moved; members rejoining (pause of ${groupId} released)`);
  expect(text).toMatch(new RegExp(`re-read\\s+${sent} of ${sent}\\n\\s+skipped \\(already processed\\)\\s+${sent}\\n`));
  expect(consumer!.server.readiness()).toMatchObject({ ready: true });
  await new Promise((r) => setTimeout(r, 500));
  expect(receiver.requests).toHaveLength(sent);
  expect(await notificationCount()).toBe(before);
});
