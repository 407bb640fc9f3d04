import { ConfigResourceTypes, type Kafka } from 'kafkajs';
import type { KitLogger as Logger } from './kit-logger';
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

const UNITS: Array<[string, number]> = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1_000],
  ['ms', 1],
];

/** `ms` in the units an operator reads and writes: 173100000 → "2d 5m", 1500 → "1s 500ms", 0 → "0ms". */
export function readable(ms: number): string {
  const parts: string[] = [];
  let rest = Math.round(ms);
  for (const [unit, size] of UNITS) {
    const n = Math.floor(rest / size);
    if (n > 0) parts.push(`${n}${unit}`);
    rest -= n * size;
  }
  return parts.length ? parts.join(' ') : '0ms';
}

/** The smallest duration of one unit (what INBOX_RETENTION takes) that is at least `ms`: 173100000 → "3d". */
export function roundedUp(ms: number): string {
  const [unit, size] = UNITS.find(([, size]) => ms >= size) ?? UNITS[UNITS.length - 1];
  return `${Math.ceil(ms / size)}${unit}`;
}
