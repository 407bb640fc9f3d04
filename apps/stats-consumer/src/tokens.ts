/** The consumer group whose projection rows this process writes. */
export const STATS_GROUP_ID = Symbol('STATS_GROUP_ID');
/** A provider whose onApplicationShutdown sends the spans still queued (libs/telemetry). */
export const FLUSH_TELEMETRY = Symbol('FLUSH_TELEMETRY');
