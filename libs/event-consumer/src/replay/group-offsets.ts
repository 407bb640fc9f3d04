import type { Admin, Kafka } from 'kafkajs';
import type { ReplayPartitionPlan, ReplayRepository } from './replay.repository';

/**
 * What admin.setOffsets does (join the empty group with a paused consumer, seek, which commits, leave),
 * but with a short fetch wait: kafkajs' own admin consumer waits out a full 5 s idle fetch.
 */
async function commitGroupOffsets(
  kafka: Kafka,
  groupId: string,
  topic: string,
  plan: ReplayPartitionPlan[],
): Promise<void> {
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

/** Where each partition starts: the low watermark for `earliest`, else the first offset at or after the time. */
async function planOffsets(admin: Admin, topic: string, from: string): Promise<ReplayPartitionPlan[]> {
  const bounds = await admin.fetchTopicOffsets(topic);
  const byTime = from === 'earliest' ? undefined : await admin.fetchTopicOffsetsByTimestamp(topic, Date.parse(from));
  return bounds
    .map((b) => {
      const low = BigInt(b.low);
      const high = BigInt(b.high);
      const at = byTime ? BigInt(byTime.find((x) => x.partition === b.partition)?.offset ?? b.high) : low;
      return { partition: b.partition, start: at < low ? low : at > high ? high : at, end: high };
    })
    .sort((a, b) => a.partition - b.partition);
}

/**
 * Records the replay (its own transaction), then commits the group's new offsets and reads them back.
 * On failure the replay row is marked failed and undefined is returned; the offsets are unchanged.
 */
export async function moveOffsets(
  kafka: Kafka,
  admin: Admin,
  repo: ReplayRepository,
  req: { group: string; topic: string; from: string; partition?: number },
  out: (line: string) => void,
): Promise<string | undefined> {
  const { group, topic, from } = req;
  const all = await planOffsets(admin, topic, from);
  const plan = req.partition === undefined ? all : all.filter((p) => p.partition === req.partition);
  if (plan.length === 0) {
    out(
      `replay: topic ${topic} has no partition ${req.partition} (partitions 0-${all.length - 1}); nothing was changed`,
    );
    return undefined;
  }
  const [committed] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  const id = await repo.create(group, topic, from, plan);
  try {
    await commitGroupOffsets(kafka, group, topic, plan);
    const [after] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
    const wrong = plan.find(
      (p) => after?.partitions.find((c) => c.partition === p.partition)?.offset !== p.start.toString(),
    );
    if (wrong) throw new Error(`partition ${wrong.partition} is not at offset ${wrong.start} after the commit`);
  } catch (e) {
    await repo.finish(id, 'failed');
    out(
      `replay: could not move the offsets of group ${group} (${(e as Error).message}); did a consumer join meanwhile? Nothing was changed.`,
    );
    return undefined;
  }
  const total = plan.reduce((a, p) => a + (p.end - p.start), 0n);
  const where = req.partition === undefined ? `topic ${topic}` : `topic ${topic} partition ${req.partition}`;
  out(`replay ${id}: group ${group} on ${where} moved to ${from}; ${total} message(s) to re-read`);
  for (const p of plan) {
    const was = committed?.partitions.find((c) => c.partition === p.partition)?.offset ?? '-1';
    out(
      `  partition ${p.partition}: offset ${was === '-1' ? '(none)' : was} -> ${p.start} (${p.end - p.start} to re-read, up to ${p.end})`,
    );
  }
  return id;
}
