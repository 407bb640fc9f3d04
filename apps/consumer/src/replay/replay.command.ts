import { Kafka, logLevel, type Admin } from 'kafkajs';
import { parseDuration } from '@tickets/config';
import type { PrismaClient } from '@tickets/db';
import { ReplayRepository, type ReplayPartitionPlan, type ReplayProgress } from './replay.repository';

export const REPLAY_USAGE = `usage: npm run replay -- --group <group> [--topic <topic>] --from earliest|<ISO-8601 time> [--wait] [--follow] [--timeout 30m]
       npm run replay -- --group <group> [--topic <topic>] --follow      (follow the group's latest replay)
  Moves the consumer group's committed offsets back, so the consumers re-read the topic from there.
  The group must have no live members (stop the consumers first), or pass --wait to wait until it has none.
  --follow stays until the group's committed offsets pass the messages that existed at replay time and
  reports how many were re-read and how many were skipped as already processed (no new notification).`;

export interface ReplayDeps {
  prisma: PrismaClient;
  kafka: { brokers: string[]; clientId: string };
  /** TICKET_EVENTS_TOPIC, when --topic is not given. */
  defaultTopic: string;
  out: (line: string) => void;
  pollIntervalMs?: number;
}

/** Exit codes: 0 done, 1 failed, 2 usage, 3 the group has live members (no --wait), 4 timed out. */
export const EXIT = { ok: 0, failed: 1, usage: 2, groupBusy: 3, timeout: 4 } as const;

interface Args {
  group?: string;
  topic: string;
  from?: string;
  wait: boolean;
  follow: boolean;
  timeoutMs: number;
}

function parseArgs(argv: string[], defaultTopic: string): Args | string {
  const value = (name: string) => {
    const i = argv.indexOf(`--${name}`);
    const v = i >= 0 ? argv[i + 1] : undefined;
    return v === undefined || v.startsWith('--') ? undefined : v;
  };
  const known = new Set(['--group', '--topic', '--from', '--wait', '--follow', '--timeout']);
  const unknown = argv.filter((a) => a.startsWith('--') && !known.has(a));
  if (unknown.length) return `unknown option ${unknown[0]}`;
  let timeoutMs = 30 * 60_000;
  const t = value('timeout');
  if (t) {
    try {
      timeoutMs = parseDuration(t);
    } catch (e) {
      return `--timeout: ${(e as Error).message}`;
    }
  }
  const from = value('from');
  if (from && from !== 'earliest' && (!/^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(from) || Number.isNaN(Date.parse(from)))) {
    return `--from must be "earliest" or an ISO-8601 time such as 2026-11-30T08:00:00Z, got "${from}"`;
  }
  const args: Args = { group: value('group'), topic: value('topic') ?? defaultTopic, from, wait: argv.includes('--wait'), follow: argv.includes('--follow'), timeoutMs };
  if (!args.group) return '--group is required';
  if (!args.from && !args.follow) return '--from is required (or --follow to follow the latest replay)';
  return args;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/**
 * `npm run replay`: moves a consumer group's offsets to the earliest offset or to a point in time,
 * records the replay (start and end offset per partition) so the consumer counts what it re-reads,
 * and with --follow reports the outcome. Returns the exit code.
 */
export async function replayCommand(argv: string[], deps: ReplayDeps): Promise<number> {
  const args = parseArgs(argv, deps.defaultTopic);
  if (typeof args === 'string') {
    deps.out(`replay: ${args}\n${REPLAY_USAGE}`);
    return EXIT.usage;
  }
  const kafka = new Kafka({ clientId: deps.kafka.clientId, brokers: deps.kafka.brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  const repo = new ReplayRepository(deps.prisma);
  const deadline = Date.now() + args.timeoutMs;
  const poll = deps.pollIntervalMs ?? 1000;
  await admin.connect();
  try {
    if (!(await admin.listTopics()).includes(args.topic)) {
      deps.out(`replay: topic "${args.topic}" does not exist`);
      return EXIT.failed;
    }
    let replayId: string | undefined;
    if (args.from) {
      const empty = await awaitEmptyGroup(admin, args.group!, args.wait, deadline, poll, deps.out);
      if (empty !== EXIT.ok) return empty;
      const started = await moveOffsets(kafka, admin, repo, args as Required<Args>, deps.out);
      if (typeof started === 'number') return started;
      replayId = started;
      if (!args.follow) {
        deps.out(`start the consumers (npm run start:consumer), then follow the replay with: npm run replay -- --group ${args.group} --topic ${args.topic} --follow`);
        return EXIT.ok;
      }
    } else {
      replayId = await repo.latest(args.group!, args.topic);
      if (!replayId) {
        deps.out(`replay: group "${args.group}" has no replay on topic "${args.topic}"`);
        return EXIT.failed;
      }
    }
    return await follow(admin, repo, replayId, deadline, poll, deps.out);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

async function awaitEmptyGroup(admin: Admin, groupId: string, wait: boolean, deadline: number, poll: number, out: (l: string) => void): Promise<number> {
  const t0 = Date.now();
  let last = '';
  let lastAt = 0;
  for (;;) {
    const { groups } = await admin.describeGroups([groupId]);
    const g = groups[0];
    const members = g?.members ?? [];
    if (members.length === 0) {
      if (wait && last) out(`group ${groupId} is empty (${g?.state ?? 'unknown'}) after ${seconds(Date.now() - t0)}`);
      return EXIT.ok;
    }
    const who = members.map((m) => `${m.clientId}@${m.clientHost}`).join(', ');
    if (!wait) {
      out(
        `replay: consumer group "${groupId}" has ${members.length} live member(s) (state ${g.state}: ${who}).\n` +
          'Offsets can only be moved while the group is empty: stop its consumers and run this again, or pass --wait to wait for them to stop.',
      );
      return EXIT.groupBusy;
    }
    const line = `waiting for group ${groupId} to become empty: ${members.length} live member(s) (state ${g.state}: ${who})`;
    if (line !== last || Date.now() - lastAt > 10_000) {
      out(`${line}, ${seconds(Date.now() - t0)}`);
      last = line;
      lastAt = Date.now();
    }
    if (Date.now() > deadline) {
      out(`replay: timed out waiting for group ${groupId} to become empty`);
      return EXIT.timeout;
    }
    await sleep(poll);
  }
}

/**
 * What admin.setOffsets does (join the empty group with a paused consumer, seek, which commits, leave),
 * but with a short fetch wait: kafkajs' own admin consumer waits out a full 5 s idle fetch.
 */
async function commitGroupOffsets(kafka: Kafka, groupId: string, topic: string, plan: ReplayPartitionPlan[]): Promise<void> {
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100, allowAutoTopicCreation: false });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('timed out committing the offsets')), 30_000);
      consumer.on(consumer.events.FETCH, () => {
        clearTimeout(timer);
        resolve();
      });
      consumer.run({ autoCommit: true, eachBatchAutoResolve: false, eachBatch: async () => undefined }).catch(reject);
      consumer.pause([{ topic }]);
      for (const p of plan) consumer.seek({ topic, partition: p.partition, offset: p.start.toString() });
    });
  } finally {
    await consumer.disconnect();
  }
}

async function moveOffsets(kafka: Kafka, admin: Admin, repo: ReplayRepository, args: Required<Args>, out: (l: string) => void): Promise<string | number> {
  const { group, topic, from } = args;
  const bounds = await admin.fetchTopicOffsets(topic);
  const byTime = from === 'earliest' ? undefined : await admin.fetchTopicOffsetsByTimestamp(topic, Date.parse(from));
  const plan: ReplayPartitionPlan[] = bounds
    .map((b) => {
      const low = BigInt(b.low);
      const high = BigInt(b.high);
      const at = byTime ? BigInt(byTime.find((x) => x.partition === b.partition)?.offset ?? b.high) : low;
      return { partition: b.partition, start: at < low ? low : at > high ? high : at, end: high };
    })
    .sort((a, b) => a.partition - b.partition);
  const [committed] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  const id = await repo.create(group, topic, from, plan);
  try {
    await commitGroupOffsets(kafka, group, topic, plan);
    const [after] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
    const wrong = plan.find((p) => after?.partitions.find((c) => c.partition === p.partition)?.offset !== p.start.toString());
    if (wrong) throw new Error(`partition ${wrong.partition} is not at offset ${wrong.start} after the commit`);
  } catch (e) {
    await repo.finish(id, 'failed');
    out(`replay: could not move the offsets of group ${group} (${(e as Error).message}); did a consumer join meanwhile? Nothing was changed.`);
    return EXIT.failed;
  }
  const total = plan.reduce((a, p) => a + (p.end - p.start), 0n);
  out(`replay ${id}: group ${group} on topic ${topic} moved to ${from}; ${total} message(s) to re-read`);
  for (const p of plan) {
    const was = committed?.partitions.find((c) => c.partition === p.partition)?.offset ?? '-1';
    out(`  partition ${p.partition}: offset ${was === '-1' ? '(none)' : was} -> ${p.start} (${p.end - p.start} to re-read, up to ${p.end})`);
  }
  return id;
}

function progressLine(p: ReplayProgress): string {
  const pct = p.total === 0 ? 100 : Math.floor((p.reread / p.total) * 100);
  return `re-read ${p.reread}/${p.total} (${pct}%), skipped ${p.skipped} as already processed, ${p.reread - p.skipped - p.invalid} new, ${p.invalid} invalid`;
}

async function follow(admin: Admin, repo: ReplayRepository, id: string, deadline: number, poll: number, out: (l: string) => void): Promise<number> {
  let last = '';
  let lastAt = Date.now();
  for (;;) {
    const p = await repo.progress(id);
    if (!p) throw new Error(`replay ${id} not found`);
    if (p.status === 'superseded' || p.status === 'failed') {
      out(`replay ${id} is ${p.status}`);
      return EXIT.failed;
    }
    const [committed] = await admin.fetchOffsets({ groupId: p.groupId, topics: [p.topic] });
    const offsetOf = (partition: number) => BigInt(committed?.partitions.find((c) => c.partition === partition)?.offset ?? '-1');
    // Counters are written in the same statement as the inbox rows, before the offset commit: once the
    // committed offsets pass the end offsets, the counters are final.
    const done = p.partitions.every((x) => x.start >= x.end || offsetOf(x.partition) >= x.end);
    const line = progressLine(p);
    if (line !== last || done) {
      out(line);
      last = line;
      lastAt = Date.now();
    } else if (Date.now() - lastAt > 10_000) {
      out(`${line} (no progress for ${seconds(Date.now() - lastAt)}: are the consumers of group ${p.groupId} running?)`);
      lastAt = Date.now();
    }
    if (done) {
      if (p.status === 'running') await repo.finish(id, 'completed');
      out(
        [
          `replay ${id} of group ${p.groupId} on ${p.topic} from ${p.fromSpec} finished in ${seconds(Date.now() - p.startedAt.getTime())}:`,
          `  re-read                      ${p.reread} of ${p.total}`,
          `  skipped (already processed)  ${p.skipped}`,
          `  processed as new             ${p.reread - p.skipped - p.invalid}`,
          `  dead-lettered (invalid)      ${p.invalid}`,
        ].join('\n'),
      );
      return EXIT.ok;
    }
    if (Date.now() > deadline) {
      out(`replay: timed out following replay ${id} (${line}); run again with --follow to keep following`);
      return EXIT.timeout;
    }
    await sleep(poll);
  }
}
