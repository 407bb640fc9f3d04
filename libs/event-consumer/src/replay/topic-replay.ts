import { Kafka, logLevel, type Admin, type KafkaConfig } from 'kafkajs';
import { Pool } from 'pg';
import { patchKafkajsRequestQueue } from '../kafkajs-request-queue';
import { KitTables } from '../kit-schema';
import { assertMigrated, KitSchemaOutdated } from '../kit-schema.repository';
import { awaitEmptyGroup } from './group-liveness';
import { awaitRejoin, pauseGroup, type PauseHold } from './group-pause';
import { moveOffsets } from './group-offsets';
import { followReplay } from './replay-progress';
import { ReplayRepository } from './replay.repository';

export interface ReplayRequest {
  group: string;
  topic: string;
  /** 'earliest' or an ISO-8601 time; absent: follow the group's latest replay. */
  from?: string;
  /** Only this partition (the others keep their offsets); absent: every partition. */
  partition?: number;
  /**
   * Set the offsets of a group that has no members and has never committed an offset on the topic (a group
   * about to start for the first time). Without it such a group is refused as `unknown-group`: most often a
   * mistyped group id, for which a replay would create a new group and record a replay no consumer follows.
   */
  newGroup?: boolean;
  /**
   * A group with live members: ask them to pause (leave while the offsets move, then rejoin by
   * themselves), the default. false: refuse as a busy group, or with `wait` wait until it is empty.
   */
  pause?: boolean;
  /** Without pause: wait for the group to become empty instead of refusing. */
  wait: boolean;
  /** Stay until the consumers have re-read everything, then report. */
  follow: boolean;
  timeoutMs: number;
  pollIntervalMs?: number;
  /** The pause request's lease (renewed every third of it; default 15 s) and the members' time to leave (default 2 min). */
  pauseLeaseMs?: number;
  pauseWaitMs?: number;
}

export interface ReplayDeps {
  /** The consumer group's database (where its members keep the kit's tables and read the pause requests). */
  databaseUrl: string;
  /** The kit's schema there (default ticket_events). */
  schema?: string;
  kafka: { brokers: string[]; clientId: string } & Omit<Partial<KafkaConfig>, 'brokers' | 'clientId'>;
  out: (line: string) => void;
  /** How the caller's CLI lists the group's open dead letters: the report names it when the replay dead-lettered any. */
  deadLetters?: (groupId: string) => string;
}

/**
 * started: the offsets moved (no follow); completed: followed to the end; the rest say why it stopped.
 * Every outcome except started and completed has already been explained through `out`.
 */
export type ReplayOutcome =
  | { outcome: 'started' | 'completed'; replayId: string }
  | { outcome: 'unknown-topic' | 'unknown-group' | 'no-replay' | 'group-busy' | 'timeout' | 'failed' };

/**
 * Why a group with no members looks like a mistyped id, or undefined when it is a real group: one with committed
 * offsets on the topic, or with rows in the kit's tables (a group whose offsets the broker dropped after it stayed
 * empty past `offsets.retention.minutes`, 7 days by default). A typo would otherwise get a new group's offsets and
 * a replay that no consumer follows.
 */
async function unknownGroup(
  admin: Admin,
  repo: ReplayRepository,
  group: string,
  topic: string,
): Promise<string | undefined> {
  const committed = (await admin.fetchOffsets({ groupId: group })).filter((t) =>
    t.partitions.some((p) => p.offset !== '-1'),
  );
  if (committed.some((t) => t.topic === topic)) return undefined;
  if (committed.length > 0)
    return `group "${group}" has committed offsets on ${committed.map((t) => t.topic).join(', ')} but none on ${topic}: check --topic / TICKET_EVENTS_TOPIC. If ${topic} is right, add --new-group.`;
  if (await repo.knowsGroup(group)) return undefined;
  return (
    `group "${group}" has no members, no committed offset and no rows in the kit's tables: is the group id right? ` +
    "For a group that has not consumed yet, or whose offsets the broker dropped (an empty group's, after offsets.retention.minutes), add --new-group."
  );
}

/** `from` is 'earliest' or an ISO-8601 date or time (offset optional). */
export function isReplayStart(from: string): boolean {
  return (
    from === 'earliest' ||
    (/^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(from) && !Number.isNaN(Date.parse(from)))
  );
}

/**
 * Works for any consumer group built on the kit (the ticket service's notifier included: its own
 * statement advances the same counters). Moves a consumer group's offsets back to the earliest offset or to a point in time, records the replay
 * (start and end offset per partition) so the consumers count what they re-read, and with `follow`
 * reports the outcome. Not one transaction: the replay row is written (own transaction) before the
 * offsets move, and marked failed if they cannot. A group with live members is paused for the move
 * (group-pause.ts): they commit and leave, the offsets move, the request is released and they rejoin.
 */
export async function replayTopic(req: ReplayRequest, deps: ReplayDeps): Promise<ReplayOutcome> {
  patchKafkajsRequestQueue();
  const kafka = new Kafka({ logLevel: logLevel.NOTHING, ...deps.kafka });
  const admin = kafka.admin();
  const pool = new Pool({ connectionString: deps.databaseUrl, max: 2, application_name: 'ticket-events-replay' });
  pool.on('error', () => undefined);
  const tables = new KitTables(deps.schema);
  const repo = new ReplayRepository(pool, tables);
  const timing = { deadline: Date.now() + req.timeoutMs, pollMs: req.pollIntervalMs ?? 1000 };
  const { group, topic, out } = { ...req, out: deps.out };
  await admin.connect();
  try {
    // Before anything moves: the follow reads the counters of this kit's schema version.
    try {
      await assertMigrated(pool, tables);
    } catch (err) {
      if (!(err instanceof KitSchemaOutdated)) throw err;
      out(`replay: ${err.message}; nothing moved`);
      return { outcome: 'failed' };
    }
    if (!(await admin.listTopics()).includes(topic)) {
      out(`replay: topic "${topic}" does not exist: check --topic / TICKET_EVENTS_TOPIC (default ticket-events)`);
      return { outcome: 'unknown-topic' };
    }
    let replayId: string | undefined;
    if (req.from) {
      // Refusals come before any pause: a pause makes live members leave, and a refusal after it moved nothing.
      const partitions = await admin.fetchTopicOffsets(topic);
      if (req.partition !== undefined && !partitions.some((p) => p.partition === req.partition)) {
        out(
          `replay: topic ${topic} has no partition ${req.partition} (partitions 0-${partitions.length - 1}); nothing was changed`,
        );
        return { outcome: 'failed' };
      }
      const live = (await admin.describeGroups([group])).groups[0];
      const members = live?.members.length ?? 0;
      if (members === 0 && !req.newGroup) {
        const unknown = await unknownGroup(admin, repo, group, topic);
        if (unknown) {
          out(`replay: ${unknown} Nothing was changed.`);
          return { outcome: 'unknown-group' };
        }
      }
      let hold: PauseHold | undefined;
      if (members > 0 && req.pause !== false) {
        const paused = await pauseGroup(
          admin,
          pool,
          tables,
          live,
          { leaseMs: req.pauseLeaseMs ?? 15_000, waitMs: req.pauseWaitMs ?? 120_000 },
          timing,
          out,
        );
        if (!paused.paused) return { outcome: paused.outcome };
        hold = paused.hold;
      } else {
        const liveness = await awaitEmptyGroup(admin, group, req.wait, timing, out);
        if (liveness !== 'empty') return { outcome: liveness === 'busy' ? 'group-busy' : 'timeout' };
      }
      try {
        replayId = await moveOffsets(
          kafka,
          admin,
          repo,
          { group, topic, from: req.from, partition: req.partition },
          out,
        );
      } finally {
        await hold?.release();
      }
      if (hold)
        out(
          replayId
            ? `offsets moved; members rejoining (pause of ${group} released)`
            : `members rejoining (pause of ${group} released)`,
        );
      if (!replayId) return { outcome: 'failed' };
      if (hold && req.follow) await awaitRejoin(admin, group, members, 30_000, out);
      if (!req.follow) return { outcome: 'started', replayId };
    } else {
      replayId = await repo.latest(group, topic);
      if (!replayId) {
        out(`replay: group "${group}" has no replay on topic "${topic}"`);
        return { outcome: 'no-replay' };
      }
    }
    const followed = await followReplay(admin, repo, replayId, timing, out, deps.deadLetters);
    return followed === 'completed' ? { outcome: 'completed', replayId } : { outcome: followed };
  } finally {
    await admin.disconnect().catch(() => undefined);
    await pool.end().catch(() => undefined);
  }
}
