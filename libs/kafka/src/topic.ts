import { ConfigResourceTypes, type Admin } from 'kafkajs';
import { kafkaErrorType } from './kafka-errors';

export interface TopicSpec {
  topic: string;
  partitions: number;
  /** retention.ms; absent or 0: the broker's log.retention. */
  retentionMs?: number;
  /**
   * Replicas per partition; absent or -1: the broker's default.replication.factor. A multi-broker
   * cluster passes min(3, brokers).
   */
  replicationFactor?: number;
  /** min.insync.replicas with acks=all (e.g. 2 with three replicas); absent: the broker's default. */
  minInsyncReplicas?: number;
}

/**
 * Creates the topic if it is missing; an existing topic is left as it is (Kafka owns its settings).
 * Returns whether this call created it. Safe to race: losing to another creator is not an error.
 */
export async function ensureTopic(admin: Admin, spec: TopicSpec): Promise<boolean> {
  if ((await admin.listTopics()).includes(spec.topic)) return false;
  const configEntries = [
    ...(spec.retentionMs ? [{ name: 'retention.ms', value: String(spec.retentionMs) }] : []),
    ...(spec.minInsyncReplicas ? [{ name: 'min.insync.replicas', value: String(spec.minInsyncReplicas) }] : []),
  ];
  try {
    await admin.createTopics({
      topics: [
        {
          topic: spec.topic,
          numPartitions: spec.partitions,
          replicationFactor: spec.replicationFactor ?? -1,
          configEntries,
        },
      ],
      waitForLeaders: true,
    });
    return true;
  } catch (err) {
    if (kafkaErrorType(err) === 'TOPIC_ALREADY_EXISTS') return false;
    throw err;
  }
}

/** Waits until the topic exists, calling `onWait` about every 30 s meanwhile (the relay creates it). */
export async function waitForTopic(admin: Admin, topic: string, onWait?: () => void, pollMs = 2_000): Promise<void> {
  for (let waited = 0; !(await admin.listTopics()).includes(topic); waited += pollMs) {
    if (waited % 30_000 === 0) onWait?.();
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** A numeric topic setting (e.g. `max.message.bytes`, `retention.ms`) as the broker reports it; undefined when unreadable. */
export async function topicNumberSetting(admin: Admin, topic: string, name: string): Promise<number | undefined> {
  const res = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: [name] }],
  });
  const value = res.resources[0]?.configEntries.find((e) => e.configName === name)?.configValue;
  if (value === undefined || value === null) return undefined;
  const n = Number(value);
  return Number.isFinite(n) ? n : undefined;
}

/** Runs `work` with a connected admin client, disconnecting it afterwards whatever happens. */
export async function withAdmin<T>(kafka: { admin(): Admin }, work: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    return await work(admin);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
