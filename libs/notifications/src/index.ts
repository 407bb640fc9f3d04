export {
  WEBHOOK_HEADERS,
  WEBHOOK_TOLERANCE_SECONDS,
  signingKey,
  signWebhook,
  verifyWebhook,
  webhookHeaders,
  type VerifyOptions,
} from './signature';
export {
  WebhookSecretCipher,
  SecretKeyError,
  looksEncrypted,
  storedSecretKind,
  type SecretKey,
  type StoredSecretKind,
} from './secret-box';
export { classifyStatus, retryDelayMs, parseRetryAfter } from './retry-policy';
export { decideAttempt } from './retry-policy';
export type { AttemptVerdict, RetryPolicy, AttemptResult, AttemptOutcome } from './retry-policy';
export { WebhookDispatcher } from './webhook-dispatcher';
export type {
  DispatcherOptions,
  DispatcherSettings,
  DispatcherStats,
  HandOverLease,
  HandOverOptions,
  HandOverResult,
} from './webhook-dispatcher';
export { recordCtes, type AttemptRecord, type ClaimedNotification } from './notifications.repository';
export { DispatcherMetrics, type DeliveryOutcome } from './dispatcher-metrics';
