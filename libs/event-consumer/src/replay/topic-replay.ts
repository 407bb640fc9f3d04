import { Kafka, logLevel, type KafkaConfig } from 'kafkajs';
import { Pool } from 'pg';
import { KitTables } from '../kit-schema';
import { awaitEmptyGroup } from './group-liveness';
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
  /** Wait for the group to become empty instead of refusing. */
  wait: boolean;
  /** Stay until the consumers have re-read everything, then report. */
  follow: boolean;
  timeoutMs: number;
  pollIntervalMs?: number;
}

export interface ReplayDeps {
  /** The consumer group's database (where its members keep the kit's tables). */
  databaseUrl: string;
  /** The kit's schema there (default ticket_events). */
  schema?: string;
  kafka: { brokers: string[]; clientId: string } & Omit<Partial<KafkaConfig>, 'brokers' | 'clientId'>;
  out: (line: string) => void;
}

/**
 * started: the offsets moved (no follow); completed: followed to the end; the rest say why it stopped.
 * Every outcome except started and completed has already been explained through `out`.
 */
export type ReplayOutcome =
  | { outcome: 'started' | 'completed'; replayId: string }
  | { outcome: 'unknown-topic' | 'no-replay' | 'group-busy' | 'timeout' | 'failed' };

/** `from` is 'earliest' or an ISO-8601 date or time (offset optional). */
export function isReplayStart(from: string): boolean {
  return from === 'earliest' || (/^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(from) && !Number.isNaN(Date.parse(from)));
}

/**
 * Works for any consumer group built on the kit (the ticket service's notifier included: its own
 * statement advances the same counters). Moves a consumer group's offsets back to the earliest offset or to a point in time, records the replay
 * (start and end offset per partition) so the consumers count what they re-read, and with `follow`
 * reports the outcome. Not one transaction: the replay row is written (own transaction) before the
 * offsets move, and marked failed if they cannot.
 */
export async function replayTopic(req: ReplayRequest, deps: ReplayDeps): Promise<ReplayOutcome> {
  const kafka = new Kafka({ logLevel: logLevel.NOTHING, ...deps.kafka });
  const admin = kafka.admin();
  const pool = new Pool({ connectionString: deps.databaseUrl, max: 2, application_name: 'ticket-events-replay' });
  pool.on('error', () => undefined);
  const repo = new ReplayRepository(pool, new KitTables(deps.schema));
  const timing = { deadline: Date.now() + req.timeoutMs, pollMs: req.pollIntervalMs ?? 1000 };
  const { group, topic, out } = { ...req, out: deps.out };
  await admin.connect();
  try {
    if (!(await admin.listTopics()).includes(topic)) {
      out(`replay: topic "${topic}" does not exist`);
      return { outcome: 'unknown-topic' };
    }
    let replayId: string | undefined;
    if (req.from) {
      const liveness = await awaitEmptyGroup(admin, group, req.wait, timing, out);
      if (liveness !== 'empty') return { outcome: liveness === 'busy' ? 'group-busy' : 'timeout' };
      replayId = await moveOffsets(kafka, admin, repo, { group, topic, from: req.from, partition: req.partition }, out);
      if (!replayId) return { outcome: 'failed' };
      if (!req.follow) return { outcome: 'started', replayId };
    } else {
      replayId = await repo.latest(group, topic);
      if (!replayId) {
        out(`replay: group "${group}" has no replay on topic "${topic}"`);
        return { outcome: 'no-replay' };
      }
    }
    const followed = await followReplay(admin, repo, replayId, timing, out);
    return followed === 'completed' ? { outcome: 'completed', replayId } : { outcome: followed };
  } finally {
    await admin.disconnect().catch(() => undefined);
    await pool.end().catch(() => undefined);
  }
}
