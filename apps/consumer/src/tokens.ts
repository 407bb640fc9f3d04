/** NOTIFY_WEBHOOK_URL: the target of tenants without a webhook of their own (null: none). */
export const DEFAULT_WEBHOOK_URL = Symbol('DEFAULT_WEBHOOK_URL');
/** A provider whose onApplicationShutdown sends the spans still queued (libs/telemetry). */
export const FLUSH_TELEMETRY = Symbol('FLUSH_TELEMETRY');
