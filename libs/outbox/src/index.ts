export { OutboxRelay, OUTBOX_NOTIFY_CHANNEL, DEFAULT_RELAY_LOCK_KEY } from './outbox-relay';
export type { OutboxRelayOptions, RelayStats } from './outbox-relay';
export { relayOptionsFromConfig } from './relay-options';
export { buildOutboundMessage, chunkMessages } from './outbox-message';
export type { OutboxRow, OutboundMessage } from './outbox-message';
export { classifyPublishError, kafkaErrorType } from './publish-errors';
export type { PublishErrorKind } from './publish-errors';
export { fullJitterBackoff } from './backoff';
