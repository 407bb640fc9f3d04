import { ConfigResourceTypes, type Kafka } from 'kafkajs';
import type { KitLogger as Logger } from './kit-logger';
import { readable, roundedUp } from './durations';
import { KAFKA_DEFAULT_SEGMENT_MS, KAFKA_RETENTION_CHECK_MS, longestKeptMs } from './retention-floor';

/**
 * Waits for the topic (the outbox relay creates it), then refuses to start when the topic may keep a
 * message longer than the inbox keeps event ids: a replay would then reach events the inbox has
 * forgotten and handle them a second time. Kafka deletes a segment only once its newest record is past
 * retention.ms, and rolls the active segment after segment.ms at the latest, so a record can outlive
 * retention.ms by up to segment.ms (plus the broker's retention check); a compacted topic keeps a key's
 * last record for ever. Kafka owns those settings, so the kit can only refuse.
 */
export async function checkTopicRetention(
  kafka: Kafka,
  topic: string,
  inboxRetentionMs: number,
  stopped: () => boolean,
  log?: Logger,
): Promise<void> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    for (let waited = 0; !(await admin.listTopics()).includes(topic); waited += 1000) {
      if (stopped()) throw new Error(`stopped while waiting for topic ${topic}`);
      if (waited % 30_000 === 0)
        log?.warn(
          `topic ${topic} does not exist yet; waiting (the ticket service creates it when it first publishes; check the topic option, TICKET_EVENTS_TOPIC, if it should exist already)`,
        );
      await new Promise((r) => setTimeout(r, 1000));
    }
    const res = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [
        { type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms', 'segment.ms', 'cleanup.policy'] },
      ],
    });
    const config = (name: string) =>
      res.resources[0]?.configEntries.find((c) => c.configName === name)?.configValue ?? undefined;
    const refuse = (kept: string, fix: string) =>
      new Error(
        `topic ${topic} ${kept} but the inbox keeps event ids for ${readable(inboxRetentionMs)}: a replay would ` +
          `handle the oldest events a second time. ${fix}`,
      );
    const policy = config('cleanup.policy') ?? 'delete';
    if (!policy.split(',').includes('delete'))
      throw refuse(
        `is compacted (cleanup.policy=${policy}), so it keeps a record per key for ever,`,
        'Consume a topic with cleanup.policy=delete.',
      );
    const retentionMs = Number(config('retention.ms') ?? NaN);
    if (Number.isNaN(retentionMs)) return; // not readable: nothing to compare
    if (retentionMs < 0)
      throw refuse(
        'keeps messages for ever',
        "No inbox retention covers that: give the topic a retention.ms (the relay's TICKET_EVENTS_RETENTION, 7 d by default).",
      );
    // Not reported: Kafka's default (log.roll.hours=168).
    const segmentMs = Number(config('segment.ms') ?? KAFKA_DEFAULT_SEGMENT_MS) || KAFKA_DEFAULT_SEGMENT_MS;
    const keptMs = longestKeptMs(retentionMs, segmentMs);
    if (keptMs > inboxRetentionMs)
      throw refuse(
        `may keep a message for ${readable(keptMs)} (retention.ms ${retentionMs} = ${readable(retentionMs)}, + ` +
          `segment.ms ${segmentMs} = ${readable(segmentMs)}: a segment goes only once its newest record is past retention.ms; ` +
          `+ ${readable(KAFKA_RETENTION_CHECK_MS)} for the broker's retention check)`,
        `Raise inbox.retentionMs (INBOX_RETENTION) to at least ${keptMs} ms (INBOX_RETENTION=${roundedUp(keptMs)} covers ` +
          `it), or lower the topic's retention.ms or segment.ms.`,
      );
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
