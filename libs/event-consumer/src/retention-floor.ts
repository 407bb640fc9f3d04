// The subpath `@tickets/event-consumer/retention-floor`: how long a topic may keep a message, which the
// inbox must cover. The kit's start-up check (topic-retention.ts) and the ticket service's configuration
// apply the same rule.

/** Kafka's default segment.ms (log.roll.hours=168). */
export const KAFKA_DEFAULT_SEGMENT_MS = 7 * 86_400_000;
/** Kafka's default log.retention.check.interval.ms: a segment past retention waits up to this long for deletion. */
export const KAFKA_RETENTION_CHECK_MS = 5 * 60_000;

/**
 * The longest a topic with `retentionMs` and `segmentMs` may keep a message: Kafka deletes a segment
 * only once its newest record is past retention.ms, and rolls the active segment after segment.ms at
 * the latest, then its retention check runs. The inbox must keep event ids at least this long.
 */
export function longestKeptMs(retentionMs: number, segmentMs: number = KAFKA_DEFAULT_SEGMENT_MS): number {
  return retentionMs + segmentMs + KAFKA_RETENTION_CHECK_MS;
}
